/**
 * The harness's API client: the operator's HttpKubeClient behind the raw-path calls that
 * readiness probes, tests and the benchmark want, restricted to loopback servers. It exists next
 * to the kubectl wrapper (kube.ts) because start-up probes and latency measurements must not pay
 * a kubectl process start per call.
 */
import * as fs from 'fs';
import { ClientMetrics, HttpKubeClient } from '../../operator/src/runtime/kube-client';
import { ClusterConnection, fromKubeconfigFiles } from '../../operator/src/runtime/kubeconfig';
import { PatchType, WatchEvent } from '../../operator/src/runtime/types';

export type { ClusterConnection, PatchType, WatchEvent };

export interface ApiResponse<T = unknown> {
  readonly status: number;
  /** Parsed JSON, or the text when the endpoint does not answer JSON (/readyz, /metrics). */
  readonly body: T;
}

export interface RequestOptions {
  /** @default 'merge' */
  readonly patchType?: PatchType;
  readonly timeoutMs?: number;
}

export interface ApiClientOptions {
  /** Keep-alive sockets for requests (watches have their own). @default 32 */
  readonly maxSockets?: number;
  /** @default 10_000 */
  readonly requestTimeoutMs?: number;
  readonly metrics?: ClientMetrics;
}

/**
 * Throws unless `url` points at 127.0.0.0/8 (or "localhost"), or at 198.18.0.0/15: the bridge,
 * pods and Services that the real-node mode (real-node.ts) creates on this machine. Every client in
 * this harness calls it: the machines forbid any traffic that leaves them.
 */
export function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (host === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return;
  // Only while the bridge is there: without it the range would take the default route, off the machine.
  if (/^198\.1[89]\.\d{1,3}\.\d{1,3}$/.test(host) && fs.existsSync('/sys/class/net/asb0')) return;
  throw new Error(`refusing to connect to ${url}: only loopback (127.0.0.0/8) and, while the real-node bridge asb0 exists, 198.18.0.0/15 are allowed`);
}

/** The server and credentials of a kubeconfig's current context, read as the operator reads it. */
export function connectionFromKubeconfig(kubeconfigPath: string): ClusterConnection {
  return fromKubeconfigFiles([kubeconfigPath]);
}

export class ApiClient {
  protected readonly kube: HttpKubeClient;

  public constructor(connection: ClusterConnection, options: ApiClientOptions = {}) {
    assertLoopback(connection.server);
    this.kube = new HttpKubeClient({
      connection,
      maxSockets: options.maxSockets,
      // The harness measures the API server and the controller under test: no client-side
      // pacing or queueing of its own.
      qps: -1,
      maxInFlight: 0,
      requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
      userAgent: 'cdk8s-agent-sandbox-harness',
      metrics: options.metrics,
    });
  }

  /** One request; resolves with any HTTP status (callers decide what is an error). */
  public async request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const res = await this.kube.rawRequest(method, path, { body, ...options });
    let parsed: unknown = res.text;
    try {
      parsed = JSON.parse(res.text);
    } catch { /* a plain-text endpoint */ }
    return { status: res.status, body: parsed as T };
  }

  /** Like request(), but rejects on any status >= 300 with the server's message. */
  public async call<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    const res = await this.request<any>(method, path, body, options);
    if (res.status >= 300) {
      const msg = typeof res.body === 'object' && res.body?.message ? res.body.message : String(res.body);
      throw new Error(`${method} ${path} -> HTTP ${res.status}: ${msg}`);
    }
    return res.body as T;
  }

  /**
   * Opens a watch (`path` must be a collection URL, query allowed) and feeds every event to
   * `onEvent` until it returns a non-undefined value, which becomes the result. The watch is
   * opened first and `onReady` runs once the server has answered, so a create issued from
   * `onReady` cannot race past the watch.
   */
  public watch<R>(path: string, onEvent: (ev: WatchEvent<any>) => R | undefined,
    opts: { timeoutMs: number; onReady?: () => Promise<unknown> }): Promise<R> {
    const sep = path.includes('?') ? '&' : '?';
    // The server ends the watch a little after the caller gives up, never before.
    const query = `watch=1&allowWatchBookmarks=false&timeoutSeconds=${Math.ceil(opts.timeoutMs / 1000) + 5}`;
    return new Promise<R>((resolve, reject) => {
      let done = false;
      const finish = (err: Error | undefined, value?: R) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        handle.abort();
        if (err) reject(err); else resolve(value as R);
      };
      const handle = this.kube.watchPath(`${path}${sep}${query}`, (ev) => {
        if (done) return;
        const result = onEvent(ev);
        if (result !== undefined) finish(undefined, result);
      }, { onOpen: () => void opts.onReady?.().catch((e) => finish(e)) });
      const timer = setTimeout(() => finish(new Error(`watch ${path}: condition not met within ${opts.timeoutMs} ms`)), opts.timeoutMs);
      handle.done.then(
        () => finish(new Error(`watch ${path}: server closed the stream before the condition was met`)),
        (e: Error) => finish(e),
      );
    });
  }

  /** Closes idle keep-alive sockets. */
  public close(): void {
    this.kube.close();
  }
}
