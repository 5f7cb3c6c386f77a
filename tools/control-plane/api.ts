/**
 * A deliberately tiny HTTPS client for the local kube-apiserver: readiness probes, raw
 * requests and single-purpose watches. It exists next to the kubectl wrapper (kube.ts)
 * because start-up probes and latency measurements must not pay a kubectl process start
 * per call. It only ever talks to loopback addresses.
 */
import * as fs from 'fs';
import * as https from 'https';
import { parse as parseYaml } from 'yaml';

/** Client TLS material and the server URL, as found in a kubeconfig. */
export interface ApiCredentials {
  readonly server: string;
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
}

export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
}

/** A watch event as sent by the apiserver (one JSON object per line). */
export interface WatchEvent<T = any> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

/**
 * Throws unless `url` points at 127.0.0.0/8 (or "localhost"). Every client in this harness
 * calls it: the machines forbid any traffic that leaves loopback.
 */
export function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (host === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return;
  throw new Error(`refusing to connect to ${url}: only loopback (127.0.0.0/8) is allowed`);
}

/** Reads server and embedded credentials from a kubeconfig written by this harness. */
export function credentialsFromKubeconfig(kubeconfigPath: string): ApiCredentials {
  const cfg = parseYaml(fs.readFileSync(kubeconfigPath, 'utf8'));
  const cluster = cfg?.clusters?.[0]?.cluster;
  const user = cfg?.users?.[0]?.user;
  if (!cluster?.server || !cluster['certificate-authority-data'] || !user?.['client-certificate-data']) {
    throw new Error(`${kubeconfigPath}: expected a kubeconfig with embedded CA and client certificate`);
  }
  const b64 = (s: string) => Buffer.from(s, 'base64');
  return {
    server: cluster.server,
    ca: b64(cluster['certificate-authority-data']),
    cert: b64(user['client-certificate-data']),
    key: b64(user['client-key-data']),
  };
}

export class ApiClient {
  public constructor(private readonly creds: ApiCredentials) {
    assertLoopback(creds.server);
  }

  /** One request; resolves with any HTTP status (callers decide what is an error). */
  public request<T = any>(method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<ApiResponse<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(this.url(path), {
        ...this.tls(),
        method,
        timeout: timeoutMs,
        headers: payload === undefined ? { accept: 'application/json' } : {
          'accept': 'application/json',
          'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try { parsed = JSON.parse(text); } catch { /* plain-text endpoints such as /readyz */ }
          resolve({ status: res.statusCode ?? 0, body: parsed as T });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no response within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like request(), but rejects on any status >= 300 with the server's message. */
  public async call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request<any>(method, path, body);
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
  public watch<R>(
    path: string,
    onEvent: (ev: WatchEvent) => R | undefined,
    opts: { timeoutMs: number; onReady?: () => Promise<unknown> },
  ): Promise<R> {
    const sep = path.includes('?') ? '&' : '?';
    const url = this.url(`${path}${sep}watch=true&allowWatchBookmarks=false&timeoutSeconds=${Math.ceil(opts.timeoutMs / 1000) + 5}`);
    return new Promise<R>((resolve, reject) => {
      let done = false;
      const finish = (err: Error | undefined, value?: R) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        req.destroy();
        if (err) reject(err); else resolve(value as R);
      };
      const timer = setTimeout(() => finish(new Error(`watch ${path}: condition not met within ${opts.timeoutMs} ms`)), opts.timeoutMs);
      const req = https.get(url, { ...this.tls(), headers: { accept: 'application/json' } }, (res) => {
        if ((res.statusCode ?? 0) >= 300) {
          finish(new Error(`watch ${path} -> HTTP ${res.statusCode}`));
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while (!done && (nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line) continue;
            try {
              const result = onEvent(JSON.parse(line));
              if (result !== undefined) finish(undefined, result);
            } catch (e) {
              finish(e as Error);
            }
          }
        });
        res.on('end', () => finish(new Error(`watch ${path}: server closed the stream before the condition was met`)));
        opts.onReady?.().catch((e) => finish(e));
      });
      req.on('error', (e) => finish(e));
    });
  }

  private url(path: string): URL {
    return new URL(path, this.creds.server);
  }

  private tls(): https.RequestOptions {
    // agent: false gives every request its own socket, so no keep-alive socket keeps a
    // short-lived CLI process from exiting.
    return { ca: this.creds.ca, cert: this.creds.cert, key: this.creds.key, agent: false };
  }
}
