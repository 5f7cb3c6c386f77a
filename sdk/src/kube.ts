/**
 * The SDK's calls to the Kubernetes API server. @kubernetes/client-node supplies what is hard to
 * get right (kubeconfig and in-cluster loading, client certificates, tokens, exec credential
 * plugins, the watch stream and port-forwarding); the few REST calls the SDK makes (create, get,
 * merge-patch and delete of one object) go out here with the credentials it applies, so their
 * errors carry the API server's status and Status body as a SandboxApiError.
 */
// Node's types and AsyncDisposable for the declarations of every entry point (see index.ts): each
// one that names a client or a Sandbox reaches kube.d.ts.
/// <reference types="node" preserve="true" />
/// <reference lib="esnext.disposable" preserve="true" />
import * as http from 'node:http';
import * as https from 'node:https';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { SandboxApiError } from './errors.js';

export interface ResourceNames {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/** A watch event: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`. */
export interface WatchEvent {
  readonly type: string;
  readonly object: any;
}

/**
 * A loaded KubeConfig of @kubernetes/client-node (`new KubeConfig()` then `loadFrom...`), typed by
 * the three methods the SDK and client-node's Watch and PortForward call on it. The SDK's own
 * declarations name this rather than client-node's class, whose declarations need @types/ws, which
 * client-node does not install: a project that type-checks its dependencies (`skipLibCheck: false`)
 * needs nothing besides this package. Every client-node 1.x KubeConfig is one.
 */
export interface KubeConfigLike {
  /** The current context's cluster: the API server the SDK talks to is its `server`. */
  getCurrentCluster(): { readonly server: string } | null;
  /** Adds the current user's credentials (token, client certificate, exec plugin) and CA to request options. */
  applyToHTTPSOptions(options: object): Promise<void>;
  /** The same for a fetch request (client-node's Watch). */
  applyToFetchOptions(options: object): Promise<object>;
}

const REQUEST_TIMEOUT_MS = 30_000;

export class KubeApi {
  /** `/apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>]`. */
  public static path(resource: ResourceNames, namespace: string, name?: string): string {
    const base = `/apis/${resource.group}/${resource.version}/namespaces/${encodeURIComponent(namespace)}/${resource.plural}`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  public constructor(public readonly config: KubeConfigLike) {}

  public get<T = any>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  /** Creates; an abort of `signal` ends the request (rejecting with the signal's reason). */
  public create<T = any>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.request<T>('POST', path, body, 'application/json', signal);
  }

  public mergePatch<T = any>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, patch, 'application/merge-patch+json');
  }

  /** Deletes; resolves false when it was already gone. `uid` makes it a precondition. */
  public async delete(path: string, uid?: string): Promise<boolean> {
    const body = uid === undefined ? undefined : { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } };
    try {
      await this.request('DELETE', path, body, body === undefined ? undefined : 'application/json');
      return true;
    } catch (err) {
      if (err instanceof SandboxApiError && (err.status === 404 || err.status === 409)) return false;
      throw err;
    }
  }

  /** The bearer token the kubeconfig's user presents (exec plugins run), if it uses one. */
  public async bearerToken(): Promise<string | undefined> {
    const options: https.RequestOptions = { headers: {} };
    await this.config.applyToHTTPSOptions(options);
    const headers = options.headers as Record<string, string | undefined>;
    const auth = headers.Authorization ?? headers.authorization;
    const match = /^bearer\s+(.+)$/i.exec(auth ?? '');
    return match?.[1];
  }

  /**
   * Watches `path` from `resourceVersion` until `onEvent` returns true (resolves), the stream ends
   * (resolves false) or `signal` aborts. A failed watch (a connection error, an error status at its
   * start) rejects with a SandboxApiError, its `status` undefined when there was none; the caller
   * decides whether to watch again (`follow` does, but for 401/403/404).
   */
  public async watch(
    path: string,
    params: Record<string, string | number | boolean>,
    onEvent: (event: WatchEvent) => boolean,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (signal.aborted) throw signal.reason;
    return new Promise<boolean>((resolve, reject) => {
      let settled = false;
      let controller: AbortController | undefined;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        controller?.abort();
        fn();
      };
      const onAbort = () => finish(() => reject(signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      new Watch(this.config as KubeConfig).watch(path, { ...params, allowWatchBookmarks: true }, (type, object) => {
        if (settled) return;
        try {
          if (onEvent({ type, object })) finish(() => resolve(true));
        } catch (err) {
          finish(() => reject(err));
        }
      }, (err) => {
        if (err && !settled && (err as { name?: string }).name !== 'AbortError') finish(() => reject(toApiError('WATCH', path, err)));
        else finish(() => resolve(false));
      }).then((c) => {
        controller = c;
        if (settled) c.abort();
      }, (err) => finish(() => reject(toApiError('WATCH', path, err))));
    });
  }

  private async request<T>(method: string, path: string, body?: unknown, contentType?: string, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    const cluster = this.config.getCurrentCluster();
    if (!cluster) throw new SandboxApiError('the kubeconfig has no current cluster', undefined, undefined);
    const url = new URL(`${cluster.server.replace(/\/+$/, '')}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const options: https.RequestOptions = {
      method,
      headers: { accept: 'application/json', ...(contentType ? { 'content-type': contentType } : {}), ...(text ? { 'content-length': String(Buffer.byteLength(text)) } : {}) },
      timeout: REQUEST_TIMEOUT_MS,
      ...(signal ? { signal } : {}),
    };
    try {
      await this.config.applyToHTTPSOptions(options);
    } catch (err) {
      throw new SandboxApiError(`${method} ${path}: cannot apply the kubeconfig's credentials: ${(err as Error).message}`, undefined, undefined, { cause: err });
    }
    const lib = url.protocol === 'https:' ? https : http;
    return new Promise<T>((resolve, reject) => {
      const req = lib.request(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: any = raw;
          try {
            parsed = raw === '' ? undefined : JSON.parse(raw);
          } catch { /* keep the text */ }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(parsed as T);
          const message = typeof parsed === 'object' && parsed?.message ? parsed.message : raw.slice(0, 300);
          reject(new SandboxApiError(`${method} ${path}: HTTP ${status}: ${message}`, status, parsed));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer from the API server within ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', (err) => reject(signal?.aborted ? signal.reason : new SandboxApiError(`${method} ${path}: ${err.message}`, undefined, undefined, { cause: err })));
      req.end(text);
    });
  }
}

function toApiError(method: string, path: string, err: unknown): SandboxApiError {
  if (err instanceof SandboxApiError) return err;
  const status = (err as { statusCode?: number; code?: unknown }).statusCode ?? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : undefined);
  return new SandboxApiError(`${method} ${path}: ${(err as Error).message ?? String(err)}`, status, undefined, { cause: err });
}
