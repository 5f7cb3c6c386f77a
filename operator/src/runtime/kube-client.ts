/**
 * KubeClient over node:http(s): keep-alive sockets sized to the worker count (plus a separate
 * agent for long-lived watches, so a burst of writes never queues behind them), the connection's
 * credentials (a token, token file, client certificate, or Credentials that refresh: exec plugins
 * and auth providers, asked again and the request retried once after a 401), an optional proxy
 * (proxy-url: HTTP CONNECT or SOCKS), the server URL's path kept under every request, client-side
 * QPS/burst pacing, bounded retries of 429s and of requests that hit a keep-alive socket the server
 * had just closed, and streaming watches.
 *
 * Besides the typed KubeClient calls it offers raw requests and watches by path (rawRequest,
 * watchPath), which the local control-plane tools, the integration tests and the benchmark use:
 * they are CommonJS and load this folder directly, so there is one HTTP and watch implementation.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { HttpProxyAgent, HttpsProxyAgent } from 'hpagent';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { Clock, MONOTONIC_CLOCK, SYSTEM_CLOCK, sleep } from './clock';
import type { ClusterConnection } from './connection';
import { Credentials, RequestAuth, StaticCredentials, tokenFileCredentials } from './credentials';
import {
  PATCH_CONTENT_TYPES, apiErrorFrom, deleteBody, listQuery, requireNamespace, resourcePath, serverUrl, withQuery, writeQuery,
} from './kube-request';
import { Logger, SILENT_LOGGER } from './log';
import { formatMicroTime } from './micro-time';
import { DEFAULT_MAX_IN_FLIGHT, PriorityGate } from './priority-gate';
import { TokenBucket } from './rate-limit';
import {
  DeleteOptions, KubeClient, KubeObject, ListOptions, ObjectList, PatchType, RequestPriority, ResourceType, WatchEvent, WatchHandle,
  WriteOptions,
} from './types';
import { WatchStreamParser } from './watch-stream';

/** Hooks for rest_client_* style metrics; all optional. */
export interface ClientMetrics {
  /**
   * One finished request, retries counted separately; `code` is the HTTP status or `<error>`.
   * `path` includes the query; the benchmark uses it to tell its own requests apart.
   */
  request?(verb: string, code: string, ms: number, path: string): void;
  /** Time a request waited for the client-side rate limiter. */
  throttled?(ms: number): void;
  /** The background lane's in-flight bound, after each write's latency moved it (priority-gate.ts). */
  backgroundLimit?(n: number): void;
}

export interface KubeClientOptions {
  readonly connection: ClusterConnection;
  /** Client-side requests per second; 0 or negative means no client-side limit (upstream's -1). */
  readonly qps?: number;
  readonly burst?: number;
  /** Most concurrent non-watch requests (sockets); size it from the total worker count. */
  readonly maxSockets?: number;
  /**
   * Most non-watch requests in flight at once (`--kube-api-max-in-flight`); the rest wait here, by
   * priority (priority-gate.ts). 0 turns the bound off. @default DEFAULT_MAX_IN_FLIGHT
   */
  readonly maxInFlight?: number;
  /** Fail a request whose socket has been silent this long. */
  readonly requestTimeoutMs?: number;
  readonly userAgent?: string;
  /** Who reports Events; without it event() does nothing. */
  readonly eventSource?: { readonly controller: string; readonly instance: string };
  readonly metrics?: ClientMetrics;
  readonly log?: Logger;
  /** The wall clock: Event timestamps and names, credential expiry. @default SYSTEM_CLOCK */
  readonly clock?: Clock;
  /** The clock of durations: latencies, waits, credential re-reads. @default clock when given, else MONOTONIC_CLOCK */
  readonly intervalClock?: Clock;
}

export interface RawRequestOptions {
  readonly body?: unknown;
  /** How a PATCH body is meant. @default 'merge' */
  readonly patchType?: PatchType;
  /** @default the client's requestTimeoutMs */
  readonly timeoutMs?: number;
}

/** The server's answer as it came: any status, the body undecoded (health endpoints answer text). */
export interface RawResponse {
  readonly status: number;
  readonly text: string;
}

const EVENTS: ResourceType = { group: 'events.k8s.io', version: 'v1', resource: 'events', namespaced: true };
/**
 * Events are best-effort: beyond this many in flight, new ones are dropped rather than queued. Room
 * for a burst of Events a caller held back and releases at once (the controllers hold up to 500).
 */
const MAX_PENDING_EVENTS = 1_000;
const MAX_429_RETRIES = 3;
const IDEMPOTENT = new Set(['GET', 'PUT', 'DELETE']);
/** Methods whose latency tells how loaded the server is (a list's depends on its size, a watch's on time). */
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface Request {
  readonly priority?: RequestPriority;
  readonly method: string;
  readonly path: string;
  readonly verb: string;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly timeoutMs?: number;
}

export class HttpKubeClient implements KubeClient {
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;
  private readonly watchAgent: http.Agent;
  private readonly bucket?: TokenBucket;
  private readonly gate?: PriorityGate;
  private readonly requestTimeoutMs: number;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly elapsed: Clock;
  private readonly metrics: ClientMetrics;
  private readonly credentials: Credentials;
  private pendingEvents = 0;
  private lastEventNanos = 0n;

  public constructor(private readonly options: KubeClientOptions) {
    const c = options.connection;
    this.base = new URL(c.server);
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.elapsed = options.intervalClock ?? options.clock ?? MONOTONIC_CLOCK;
    this.log = options.log ?? SILENT_LOGGER;
    this.metrics = options.metrics ?? {};
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    const qps = options.qps ?? -1;
    if (qps > 0) this.bucket = new TokenBucket(qps, Math.max(1, options.burst ?? 10), this.elapsed);
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    if (maxInFlight > 0) this.gate = new PriorityGate(maxInFlight);
    const maxSockets = Math.max(4, options.maxSockets ?? 32);
    this.credentials = c.credentials ?? staticCredentials(c, this.log, options.clock, options.intervalClock);
    // The client key pair travels with each request (it may change: exec plugins can return one);
    // node's agents keep a separate socket pool per key pair.
    const tls: https.AgentOptions = { ca: c.ca, servername: c.tlsServerName, rejectUnauthorized: !c.insecureSkipTlsVerify };
    const isHttps = this.base.protocol === 'https:';
    this.transport = isHttps ? https : http;
    const make = (extra: http.AgentOptions) => makeAgent(isHttps, c.proxyUrl, isHttps ? { ...tls, ...extra } : extra);
    // LIFO reuse keeps a few sockets hot and lets the rest idle out after a burst.
    this.agent = make({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo', timeout: this.requestTimeoutMs });
    // TCP keep-alive probes find a dead peer under a silent watch; the informer's watchdog is the backstop.
    this.watchAgent = make({ keepAlive: true, keepAliveMsecs: 30_000 });
  }

  public async get<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    requireNamespace(type, namespace, 'get');
    return this.request<T>({ method: 'GET', verb: 'GET', path: resourcePath(type, namespace, name) });
  }

  public async list<T extends KubeObject>(type: ResourceType, namespace: string | undefined, options?: ListOptions): Promise<ObjectList<T>> {
    return this.request<ObjectList<T>>({ method: 'GET', verb: 'LIST', path: withQuery(resourcePath(type, namespace), listQuery(options)) });
  }

  public async create<T extends KubeObject>(type: ResourceType, namespace: string | undefined, body: object, options?: WriteOptions): Promise<T> {
    requireNamespace(type, namespace, 'create');
    const path = withQuery(resourcePath(type, namespace, options?.subresource ? nameOf(body) : undefined, options?.subresource), writeQuery(options));
    return this.request<T>({ method: 'POST', verb: 'POST', path, body, priority: options?.priority });
  }

  public async update<T extends KubeObject>(type: ResourceType, namespace: string | undefined, body: KubeObject, options?: WriteOptions): Promise<T> {
    requireNamespace(type, namespace, 'update');
    const path = withQuery(resourcePath(type, namespace, nameOf(body), options?.subresource), writeQuery(options));
    return this.request<T>({ method: 'PUT', verb: 'PUT', path, body, priority: options?.priority });
  }

  public async patch<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string, patchType: PatchType,
    body: unknown, options?: WriteOptions): Promise<T> {
    requireNamespace(type, namespace, 'patch');
    const contentType = patchContentType(patchType);
    const path = withQuery(resourcePath(type, namespace, name, options?.subresource), writeQuery(options, patchType));
    // JSON is YAML, so an apply patch is sent as JSON under the apply-patch+yaml type.
    return this.request<T>({ method: 'PATCH', verb: 'PATCH', path, body, contentType, priority: options?.priority });
  }

  public async delete(type: ResourceType, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<void> {
    requireNamespace(type, namespace, 'delete');
    await this.request({ method: 'DELETE', verb: 'DELETE', path: resourcePath(type, namespace, name), body: deleteBody(options), priority: options?.priority });
  }

  public watch<T extends KubeObject>(type: ResourceType, namespace: string | undefined,
    options: ListOptions & { resourceVersion: string; timeoutSeconds?: number; onOpen?: () => void },
    onEvent: (event: WatchEvent<T>) => void): WatchHandle {
    const path = withQuery(resourcePath(type, namespace), {
      ...listQuery({ ...options, limit: undefined, continue: undefined }),
      watch: 1,
      allowWatchBookmarks: true,
      timeoutSeconds: options.timeoutSeconds,
    });
    return this.watchPath(path, onEvent as (event: WatchEvent) => void, { onOpen: options.onOpen });
  }

  /**
   * A request to `path` (query included) that resolves with whatever status the server answered,
   * paced, gated and retried after a dropped keep-alive socket like every other request, but not
   * after a 429: the caller sees it.
   */
  public async rawRequest(method: string, path: string, options: RawRequestOptions = {}): Promise<RawResponse> {
    const m = method.toUpperCase();
    const contentType = m === 'PATCH' ? patchContentType(options.patchType ?? 'merge') : undefined;
    serverUrl(this.base, path); // a path that would leave the server fails here, before any pacing
    const req: Request = { method: m, verb: m, path, body: options.body, contentType, timeoutMs: options.timeoutMs };
    return this.exchange(req, false);
  }

  /**
   * A watch of `path`, whose query the caller writes (watch=1, resourceVersion, ...). `onOpen`
   * runs once the server has accepted the watch, before any event: a write issued from it cannot
   * slip past the watch.
   */
  public watchPath<T extends KubeObject = KubeObject>(path: string, onEvent: (event: WatchEvent<T>) => void,
    options: { onOpen?: () => void } = {}): WatchHandle {
    serverUrl(this.base, path); // a path that would leave the server fails here
    const controller = new AbortController();
    const done = this.openWatch(path, onEvent as (event: WatchEvent) => void, controller.signal, options.onOpen);
    return { done, abort: () => controller.abort() };
  }

  public event(regarding: KubeObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void {
    const source = this.options.eventSource;
    if (!source) return;
    if (this.pendingEvents >= MAX_PENDING_EVENTS) {
      this.log.debug({ reason, object: regarding.metadata.name }, 'dropping an Event: too many in flight');
      return;
    }
    const now = new Date(this.clock.now());
    // Unique names like client-go's "<name>.<unix-nanos hex>", strictly increasing within the process.
    const nanos = BigInt(now.getTime()) * 1_000_000n;
    this.lastEventNanos = nanos > this.lastEventNanos ? nanos : this.lastEventNanos + 1n;
    const namespace = regarding.metadata.namespace || 'default';
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `${regarding.metadata.name}.${this.lastEventNanos.toString(16)}`, namespace },
      eventTime: formatMicroTime(now),
      reportingController: source.controller,
      reportingInstance: source.instance,
      action: action.slice(0, 128),
      reason: reason.slice(0, 128),
      note: truncateUtf8(note, 1024),
      type,
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: regarding.metadata.name,
        namespace: regarding.metadata.namespace,
        uid: regarding.metadata.uid,
        resourceVersion: regarding.metadata.resourceVersion,
      },
    };
    this.pendingEvents++;
    this.create(EVENTS, namespace, body, { priority: 'background' })
      .catch((err) => this.log.debug({ err, reason, object: regarding.metadata.name }, 'could not write an Event'))
      .finally(() => this.pendingEvents--);
  }

  public dropIdleConnections(): void {
    for (const agent of [this.agent, this.watchAgent]) {
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  /** Close idle sockets (shutdown). */
  public close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  /** send(), telling the gate how long a write took at the server (its background cap follows that). */
  private async sendSampled(req: Request): Promise<Response> {
    const started = this.elapsed.now();
    const response = await this.send(req);
    if (WRITES.has(req.method) && response.status < 500 && response.status !== 429) {
      this.gate!.sample(this.elapsed.now() - started, this.elapsed.now());
      this.metrics.backgroundLimit?.(this.gate!.backgroundCap.current);
    }
    return response;
  }

  private async request<T>(req: Request): Promise<T> {
    const { status, text } = await this.exchange(req, true);
    if (status >= 200 && status < 300) return (text ? JSON.parse(text) : {}) as T;
    throw apiErrorFrom(status, text, `${req.method} ${req.path}`);
  }

  /** The response to `req` whatever its status, after the retries the request qualifies for. */
  private async exchange(req: Request, retryThrottled: boolean): Promise<RawResponse> {
    let retriedUnauthorized = false;
    for (let attempt = 0; ; attempt++) {
      await this.throttle();
      // Wait out a credentials refresh (an exec plugin's run) before taking an in-flight slot, so
      // it holds none and does not count as request or write latency; send() reads them again, current then.
      if (this.gate) await this.credentials.current();
      const started = this.elapsed.now();
      let response: Response;
      try {
        response = this.gate ? await this.gate.run(req.priority ?? 'normal', () => this.sendSampled(req)) : await this.send(req);
      } catch (e) {
        this.metrics.request?.(req.verb, '<error>', this.elapsed.now() - started, req.path);
        // A keep-alive socket the server closed as we reused it: the request never arrived.
        if ((e as StaleSocketError).staleSocket && attempt === 0 && IDEMPOTENT.has(req.method)) continue;
        throw e;
      }
      const { status, text, retryAfter } = response;
      this.metrics.request?.(req.verb, String(status), this.elapsed.now() - started, req.path);
      // 401: the credentials expired or were revoked, and the request was not processed. Once per
      // request, credentials that can change are obtained again (an exec plugin re-run) and it is retried.
      if (status === 401 && !retriedUnauthorized && this.credentials.rejected(response.auth)) {
        retriedUnauthorized = true;
        this.log.debug({ path: req.path }, 'the API server answered 401; obtaining credentials again');
        continue;
      }
      // 429 means the server did not process the request, so even a create may be retried.
      if (status === 429 && retryThrottled && attempt < MAX_429_RETRIES) {
        const error = apiErrorFrom(status, text, `${req.method} ${req.path}`);
        const seconds = Number(retryAfter ?? (error.body as any)?.details?.retryAfterSeconds ?? 1);
        await sleep(this.elapsed, Math.min(10, Number.isFinite(seconds) ? Math.max(0, seconds) : 1) * 1000);
        continue;
      }
      return { status, text };
    }
  }

  private async send(req: Request): Promise<Response> {
    const auth = await this.credentials.current();
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: http.OutgoingHttpHeaders = { ...this.headers(auth), accept: 'application/json' };
    if (payload !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    return new Promise((resolve, reject) => {
      const options = { method: req.method, headers, agent: this.agent, cert: auth.cert, key: auth.key };
      const r = this.transport.request(serverUrl(this.base, req.path), options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({
          status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: res.headers['retry-after'] as string | undefined, auth,
        }));
        res.on('error', reject);
      });
      const timeoutMs = req.timeoutMs ?? this.requestTimeoutMs;
      r.setTimeout(timeoutMs, () => r.destroy(new Error(`${req.method} ${req.path}: no response within ${timeoutMs} ms`)));
      r.on('error', (err: StaleSocketError) => {
        if (r.reusedSocket && ['ECONNRESET', 'EPIPE'].includes((err as NodeJS.ErrnoException).code ?? '')) err.staleSocket = true;
        reject(err);
      });
      r.end(payload);
    });
  }

  private async openWatch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal, onOpen?: () => void): Promise<void> {
    await this.throttle();
    if (signal.aborted) return;
    const auth = await this.credentials.current();
    if (signal.aborted) return;
    const started = this.elapsed.now();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        r.destroy();
        if (err && !signal.aborted) reject(err);
        else resolve();
      };
      const onAbort = () => finish();
      signal.addEventListener('abort', onAbort, { once: true });
      const options = { method: 'GET', headers: { ...this.headers(auth), accept: 'application/json' }, agent: this.watchAgent, cert: auth.cert, key: auth.key };
      const r = this.transport.request(serverUrl(this.base, path), options, (res) => {
        const status = res.statusCode ?? 0;
        this.metrics.request?.('WATCH', String(status), this.elapsed.now() - started, path);
        if (status < 200 || status >= 300) {
          // The caller (an informer) retries; by then newer credentials are in place.
          if (status === 401) this.credentials.rejected(auth);
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => finish(apiErrorFrom(status, Buffer.concat(chunks).toString('utf8'), `watch ${path}`)));
          res.on('error', (e) => finish(e));
          return;
        }
        try {
          onOpen?.();
        } catch (e) {
          finish(e as Error);
          return;
        }
        const parser = new WatchStreamParser<WatchEvent>((event) => {
          if (!settled) onEvent(event);
        });
        res.on('data', (chunk: Buffer) => {
          try {
            parser.push(chunk);
          } catch (e) {
            finish(e as Error);
          }
        });
        res.on('end', () => {
          try {
            parser.end();
            finish();
          } catch (e) {
            finish(e as Error);
          }
        });
        // 'aborted'/'error' without 'end': the connection died; whatever was half-received is dropped.
        res.on('error', (e) => finish(e));
        res.on('close', () => finish(new Error(`watch ${path}: connection closed before the stream ended`)));
      });
      r.on('error', (e) => finish(e));
      r.end();
    });
  }

  private headers(auth: RequestAuth): http.OutgoingHttpHeaders {
    return { 'user-agent': this.options.userAgent ?? 'agent-sandbox-operator', ...auth.headers };
  }

  private async throttle(): Promise<void> {
    if (!this.bucket) return;
    const wait = this.bucket.reserve();
    if (wait > 0) {
      this.metrics.throttled?.(wait);
      await sleep(this.elapsed, wait);
    }
  }
}

interface StaleSocketError extends Error {
  staleSocket?: boolean;
}

interface Response {
  readonly status: number;
  readonly text: string;
  readonly retryAfter?: string;
  /** What the request carried, to tell the credentials which ones a 401 refused. */
  readonly auth: RequestAuth;
}

/** The connection's fixed token, token file or client certificate, when it has no Credentials of its own. */
function staticCredentials(c: ClusterConnection, log: Logger, clock?: Clock, intervalClock?: Clock): Credentials {
  if (c.tokenFile) {
    return tokenFileCredentials(c.tokenFile, (err) => log.warn({ err, file: c.tokenFile }, 'could not re-read the token file; using the previous token'), clock,
      undefined, intervalClock);
  }
  return new StaticCredentials({ headers: c.token ? { authorization: `Bearer ${c.token}` } : {}, cert: c.cert, key: c.key });
}

/**
 * A keep-alive agent for the server, through `proxyUrl` when set (kubeconfig proxy-url): an
 * http(s):// proxy is asked to CONNECT (a tunnel, so TLS to the API server is end to end), a
 * socks5:// (or socks4/socks5h) proxy is spoken to in SOCKS. Same agents as client-node uses.
 */
function makeAgent(isHttps: boolean, proxyUrl: string | undefined, options: https.AgentOptions): http.Agent {
  if (!proxyUrl) return isHttps ? new https.Agent(options) : new http.Agent(options);
  let proxy: URL;
  try {
    proxy = new URL(proxyUrl);
  } catch {
    throw new Error(`proxy-url "${proxyUrl}" is not a URL; write it as http://host:port, https://host:port or socks5://host:port`);
  }
  if (proxy.protocol.startsWith('socks')) return new SocksProxyAgent(proxy, options);
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new Error(`proxy-url "${proxyUrl}" has scheme ${proxy.protocol}; use http, https or socks5`);
  }
  return isHttps ? new HttpsProxyAgent({ ...options, proxy }) : new HttpProxyAgent({ ...options, proxy });
}

function patchContentType(patchType: PatchType): string {
  const contentType = PATCH_CONTENT_TYPES[patchType];
  if (!contentType) throw new Error(`unknown patch type "${patchType}"; use merge, json, strategic or apply`);
  return contentType;
}

function nameOf(body: object): string {
  const name = (body as KubeObject).metadata?.name;
  if (!name) throw new Error('the object has no metadata.name');
  return name;
}

/** At most `maxBytes` of UTF-8, cut at a character boundary (the API server counts bytes). */
function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let out = Buffer.from(text).subarray(0, maxBytes).toString('utf8');
  // A cut inside a multi-byte character decodes to U+FFFD; drop it.
  while (out.endsWith('\uFFFD') || Buffer.byteLength(out) > maxBytes) out = out.slice(0, -1);
  return out;
}
