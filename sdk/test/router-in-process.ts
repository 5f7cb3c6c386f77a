/**
 * The operator's router, in this process (the router tests' harness: caches filled by hand, the
 * real Router and H2Proxy on 127.0.0.1), in front of the real runtime process: the SDK's requests
 * take the path they take in a cluster, router's refusals included. The address guard allows
 * 127.0.0.0/8, where the runtime listens.
 */
import { AddressGuard } from '../../operator/src/router/guard';
import type { RouterOptions } from '../../operator/src/router/proxy';
import { type Harness, pod, sandbox, startRouter } from '../../operator/test/router/harness';

export type { Harness };

export function startLocalRouter(overrides: Partial<RouterOptions> = {}): Promise<Harness> {
  return startRouter({ guard: new AddressGuard(['127.0.0.0/8']), readyWaitMs: 0, ...overrides });
}

/** Puts Sandbox `name` (and its Pod at `ip`, unless it has none) in the router's caches. */
export function putSandbox(h: Harness, name: string, opts: { suspended?: boolean; ready?: boolean; ip?: string } = {}): void {
  const sb = sandbox(name, opts);
  h.sandboxes.put(sb);
  if (!opts.suspended) h.pods.put(pod(sb, [opts.ip ?? '127.0.0.1'], { ready: opts.ready }));
}

/** Records every request the router receives (HTTP/1.1 requests and HTTP/2 streams), as `METHOD path`, when it arrives. */
export function recordRequests(h: Harness): string[] {
  const seen: string[] = [];
  h.listener.http1.on('request', (req) => seen.push(`${req.method} ${req.url}`));
  h.listener.http2.on('stream', (_stream, headers) => seen.push(`${headers[':method']} ${headers[':path']}`));
  return seen;
}

/** The routing headers of sandbox `name`'s port `port`. */
export function routeTo(name: string, port: number | string): Record<string, string> {
  return { 'X-Sandbox-ID': name, 'X-Sandbox-Namespace': 'default', 'X-Sandbox-Port': String(port) };
}
