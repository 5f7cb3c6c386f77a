/**
 * The load generator's HTTPS client: keep-alive sockets (a TLS handshake per claim would be part
 * of every measured latency), raw requests with an explicit patch type, and long-lived watches
 * that stream every event to a callback. Loopback only, like tools/control-plane/api.ts.
 */
import * as https from 'https';
import { ApiCredentials, assertLoopback } from '../tools/control-plane/api';

export type PatchType = 'merge' | 'json' | 'strategic';
const PATCH_CT: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

export interface Watch {
  /** Resolves once the server has answered the watch request (events may follow). */
  readonly ready: Promise<void>;
  close(): void;
}

export class BenchClient {
  /** Requests issued by the harness itself, by `VERB resource`, so they can be taken out of the apiserver totals. */
  public readonly issued = new Map<string, number>();
  /** Watches that had to be resumed (ended by the server, or failed). */
  public watchRestarts = 0;
  private readonly agent: https.Agent;

  public constructor(private readonly creds: ApiCredentials, maxSockets = 64) {
    assertLoopback(creds.server);
    this.agent = new https.Agent({ keepAlive: true, maxSockets, ca: creds.ca, cert: creds.cert, key: creds.key });
  }

  public async request<T = any>(method: string, path: string, body?: unknown, patch: PatchType = 'merge', timeoutMs = 60_000): Promise<{ status: number; body: T }> {
    this.count(method, path);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = method === 'PATCH' ? PATCH_CT[patch] : 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const req = https.request(new URL(path, this.creds.server), { agent: this.agent, method, headers, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: any = text;
          try { parsed = JSON.parse(text); } catch { /* text endpoints */ }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no response within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like request(), but throws on a status >= 300. */
  public async call<T = any>(method: string, path: string, body?: unknown, patch: PatchType = 'merge'): Promise<T> {
    const res = await this.request<any>(method, path, body, patch);
    if (res.status >= 300) throw new Error(`${method} ${path} -> HTTP ${res.status}: ${res.body?.message ?? res.body}`);
    return res.body;
  }

  /**
   * A list-then-watch that streams every event to `onEvent` until close(), like an informer
   * without a cache: items already present arrive as ADDED, a watch that ends (the apiserver drops
   * watchers that fall behind) resumes from the last resourceVersion, and a 410 Gone re-lists.
   * Its own socket per stream, so it never holds up a request.
   */
  public watch(path: string, onEvent: (type: string, obj: any) => void): Watch {
    let rv: string | undefined;
    let closed = false;
    let req: ReturnType<typeof https.get> | undefined;
    let resolveReady!: () => void;
    let rejectReady!: (e: Error) => void;
    const ready = new Promise<void>((res, rej) => { resolveReady = res; rejectReady = rej; });
    const self = this;
    const restart = (why: string) => {
      if (closed) return;
      self.watchRestarts++;
      process.stderr.write(`[bench] watch ${path}: ${why}; resuming\n`);
      setTimeout(() => { connect().catch((e) => restart(e.message)); }, 50);
    };
    async function connect(): Promise<void> {
      if (rv === undefined) {
        const list = await self.call('GET', path);
        for (const item of list.items ?? []) onEvent('ADDED', item);
        rv = list.metadata.resourceVersion;
      }
      self.count('WATCH', path);
      const sep = path.includes('?') ? '&' : '?';
      const url = new URL(`${path}${sep}watch=true&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion=${rv}`, self.creds.server);
      req = https.get(url, { ca: self.creds.ca, cert: self.creds.cert, key: self.creds.key, agent: false, headers: { accept: 'application/json' } }, (res) => {
        if ((res.statusCode ?? 0) >= 300) {
          rejectReady(new Error(`watch ${path} -> HTTP ${res.statusCode}`));
          res.resume();
          return;
        }
        resolveReady();
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line) continue;
            const ev = JSON.parse(line);
            if (ev.type === 'ERROR') {
              if (ev.object?.code === 410) rv = undefined;
              continue;
            }
            if (ev.object?.metadata?.resourceVersion) rv = ev.object.metadata.resourceVersion;
            if (ev.type !== 'BOOKMARK') onEvent(ev.type, ev.object);
          }
        });
        res.on('end', () => restart('the stream ended'));
        res.on('error', (e) => restart(e.message));
      });
      req.on('error', (e) => restart(e.message));
    }
    connect().catch((e) => rejectReady(e));
    return { ready, close: () => { closed = true; req?.destroy(); } };
  }

  /**
   * Opens `n` keep-alive connections (parallel GET /version), so TLS handshakes happen before a
   * measured phase rather than inside the first claims' latencies. Non-resource requests are not
   * in the apiserver's per-resource counters.
   */
  public async warm(n: number): Promise<void> {
    await Promise.all(Array.from({ length: n }, () => this.request('GET', '/version')));
  }

  public close(): void {
    this.agent.destroy();
  }

  public count(method: string, path: string): void {
    const key = `${method} ${resourceOf(path)}`;
    this.issued.set(key, (this.issued.get(key) ?? 0) + 1);
  }
}

/** `sandboxclaims`, `sandboxes/status`, ... from an API path (the apiserver metric's resource[/subresource]). */
export function resourceOf(path: string): string {
  const parts = path.split('?')[0].split('/').filter(Boolean);
  const i = parts.indexOf('namespaces');
  const rest = i >= 0 ? parts.slice(i + 2) : parts.slice(parts[0] === 'api' ? 2 : 3);
  if (i >= 0 && rest.length === 0) return 'namespaces';
  return rest.length >= 3 ? `${rest[0]}/${rest[2]}` : rest[0] ?? '';
}
