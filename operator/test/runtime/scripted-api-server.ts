/**
 * The one fake API server in the project: a loopback node:http server whose
 * watch responses are scripted per test, to produce stream edge cases a real API server cannot be
 * made to produce on demand (410 ERROR events, a socket cut mid-event, a silent stalled watch).
 * Lists are served from a small in-memory object set with limit/continue pagination. It is used
 * only for the informer's and the client's own wire handling, never to test controllers.
 */
import * as http from 'node:http';
import { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** Serves one watch request; `n` counts watch requests from 1. */
export type WatchScript = (res: http.ServerResponse, url: URL, n: number) => void;

export function obj(name: string, rv: number, extra: Record<string, unknown> = {}): any {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion: String(rv), uid: `uid-${name}` }, ...extra };
}

export function line(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

export class ScriptedApiServer {
  public readonly requests: RecordedRequest[] = [];
  /** Objects served by list, by name. */
  public readonly objects = new Map<string, any>();
  public listResourceVersion = 1;
  /** TCP connections accepted so far. */
  public connections = 0;
  /** Fail the next N list requests with this status. */
  public failLists: { count: number; code: number; reason: string } = { count: 0, code: 500, reason: 'InternalError' };
  private watchScripts: WatchScript[] = [];
  private watchCount = 0;
  private readonly waiters: Array<{ n: number; resolve: (url: URL) => void }> = [];
  private readonly open = new Set<http.ServerResponse>();
  private server!: http.Server;
  /** Answer non-list, non-watch requests; default 404. */
  public onOther: (req: RecordedRequest, res: http.ServerResponse) => void = (_req, res) => status(res, 404, 'NotFound', 'not scripted');
  private defaultWatch: WatchScript = (res) => res.writeHead(200, { 'content-type': 'application/json' });

  public get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  public get watches(): number {
    return this.watchCount;
  }

  public get lists(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && !r.url.searchParams.has('watch'));
  }

  public start(): Promise<this> {
    return this.startOn(0);
  }

  /** Listen on `port` of 127.0.0.1 (0: any free port), e.g. the port of a server that was stopped, to play one coming back. */
  public async startOn(port: number): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle({ method: req.method ?? 'GET', url: new URL(req.url ?? '/', 'http://x'), headers: req.headers, body: Buffer.concat(chunks).toString() }, res));
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return this;
  }

  public async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Scripts for the next watch requests, in order; later ones get `fallback` (default: open and silent). */
  public scriptWatches(scripts: WatchScript[], fallback?: WatchScript): void {
    this.watchScripts = [...scripts];
    if (fallback) this.defaultWatch = fallback;
  }

  /** Resolves with the URL of the n-th watch request (from 1) once it arrives. */
  public watchRequest(n: number): Promise<URL> {
    const existing = this.requests.filter((r) => r.url.searchParams.has('watch'))[n - 1];
    if (existing) return Promise.resolve(existing.url);
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  private handle(req: RecordedRequest, res: http.ServerResponse): void {
    this.requests.push(req);
    if (req.method === 'GET' && req.url.searchParams.has('watch')) {
      const n = ++this.watchCount;
      this.open.add(res);
      res.on('close', () => this.open.delete(res));
      (this.watchScripts.shift() ?? this.defaultWatch)(res, req.url, n);
      for (const w of this.waiters.filter((x) => x.n === n)) w.resolve(req.url);
      return;
    }
    if (req.method === 'GET' && /\/configmaps$/.test(req.url.pathname)) return this.list(req, res);
    this.onOther(req, res);
  }

  private list(req: RecordedRequest, res: http.ServerResponse): void {
    if (this.failLists.count > 0) {
      this.failLists.count--;
      return status(res, this.failLists.code, this.failLists.reason, 'scripted list failure');
    }
    const all = [...this.objects.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const limit = Number(req.url.searchParams.get('limit') ?? 0) || all.length;
    const offset = Number(req.url.searchParams.get('continue') ?? 0);
    const page = all.slice(offset, offset + limit);
    const next = offset + limit < all.length ? String(offset + limit) : undefined;
    // Built-in lists carry no apiVersion/kind on their items.
    const items = page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    json(res, 200, { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: String(this.listResourceVersion), continue: next }, items });
  }
}

export function json(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function status(res: http.ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

/** Start a 200 watch response. */
export function openWatch(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
}
