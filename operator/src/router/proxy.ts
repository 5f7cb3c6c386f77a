/**
 * The router's proxy: HTTP/1.1 requests and Upgrade (WebSocket) connections to the sandbox a
 * request names, through the resolver (caches), the authorizer and the address guard, with
 * per-sandbox and total concurrency limits. Every connection to a sandbox goes through one dial
 * function (injectable), checked by the guard first.
 *
 * A suspended Sandbox whose idle policy allows it is resumed for an authorized caller and the
 * request held until it serves (`./resume`); any other is a 409 SandboxSuspended (`./resolve`).
 * Every admitted request, connection and stream counts as the Sandbox's activity (`./activity`).
 *
 * Headers: see `./forwarding`; Origin is removed on upgrades only. Paths are forwarded with their
 * escaping untouched, and dot segments are not redirected. HTTP/2 (h2c, gRPC) is `./h2`, which
 * shares this class's admission and dial.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { type Duplex, PassThrough } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import type { ActivityTracker } from './activity';
import { parseTarget, type Target } from './addressing';
import { type Authorizer, isRefusal, type Principal } from './auth';
import { filterRawResponseHeaders, filterResponseHeaders, forwardableHeaders, isConnectionClosed, reasonOf, requestIdOf } from './forwarding';
import type { AddressGuard } from './guard';
import type { RouterMetrics, UpstreamErrorReason } from './metrics';
import { REASON_HEADER, type Resolved, type Resolver, type Settled } from './resolve';
import type { Resumer } from './resume';
import { type Dial, UpstreamPools } from './upstream';
import { lazyChild, type Logger } from '../runtime/log';

/** Aborted when the client leaves: a signal, or a function that makes one when first needed. */
export type ClientLeft = AbortSignal | (() => AbortSignal);

function signalOf(left: ClientLeft | undefined): AbortSignal | undefined {
  return typeof left === 'function' ? left() : left;
}

/** Opens a TCP connection; the router's only way to reach a sandbox (declared with the pools that use it). */
export type { Dial };

/** Waits for sandboxes the cache does not show, per caller at once (each holds connection slots before it is authorized). */
export const MAX_UNSEEN_WAITS_PER_CALLER = 16;

export const defaultDial: Dial = (host, port) => net.connect({ host, port });

export interface RouterOptions {
  readonly resolver: Pick<Resolver, 'resolve' | 'settle' | 'accessOf'>;
  /** How long a request for a sandbox the caches do not show serving waits for them to (0: answer at once). */
  readonly readyWaitMs?: number;
  readonly guard: AddressGuard;
  readonly authorizer: Authorizer;
  readonly log: Logger;
  readonly proxyTimeoutMs: number;
  readonly pathRoutingPrefix?: string;
  readonly maxConnectionsPerSandbox: number;
  readonly maxConnections: number;
  readonly dial?: Dial;
  readonly metrics?: RouterMetrics;
  /** False until the caches have synced: until then an absent sandbox may just not be listed yet (503, not 404). */
  readonly cachesSynced?: () => boolean;
  /** Resumes a suspended sandbox for a request (none: a suspended sandbox is always a 409). */
  readonly resumer?: Pick<Resumer, 'resumeFor' | 'hold' | 'held'>;
  /** Told of every admitted request, connection and stream, until it ends (the idle clock's activity). */
  readonly activity?: Pick<ActivityTracker, 'track'>;
  /** One info line per request, upgrade and stream (--access-log); failures are logged either way. */
  readonly accessLog?: boolean;
}

/** The request headers to send to the sandbox. */
export function forwardHeaders(req: http.IncomingMessage, requestId: string, upgrade: boolean): http.OutgoingHttpHeaders {
  const out = forwardableHeaders(req.headers, { remoteAddress: req.socket.remoteAddress, host: req.headers.host, requestId, upgrade });
  if (upgrade) {
    out.connection = 'Upgrade';
    out.upgrade = req.headers.upgrade;
  }
  return out;
}

/** Counts open connections per sandbox and in total. */
export class ConnectionLimits {
  private total = 0;
  private readonly perSandbox = new Map<string, number>();

  public constructor(private readonly maxPerSandbox: number, private readonly maxTotal: number) {}

  /** A release function, or which limit is full. */
  public acquire(key: string): (() => void) | 'sandbox' | 'total' {
    if (this.total >= this.maxTotal) return 'total';
    const n = this.perSandbox.get(key) ?? 0;
    if (n >= this.maxPerSandbox) return 'sandbox';
    this.total++;
    this.perSandbox.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perSandbox.get(key) ?? 1) - 1;
      if (left === 0) this.perSandbox.delete(key);
      else this.perSandbox.set(key, left);
    };
  }

  public get open(): number {
    return this.total;
  }
}

export interface Admitted {
  readonly target: Target;
  readonly resolved: Resolved;
  readonly release: () => void;
}

export interface Refused {
  readonly status: number;
  readonly detail: string;
  readonly headers?: Record<string, string>;
  /** A machine-readable reason (see Unresolved): the body's `reason` and the X-Sandbox-Reason header. */
  readonly reason?: string;
}

/** The reason of a 502 whose dial failed (refused, unreachable, or an address the guard refuses): nothing listens there for the router. */
export const UNREACHABLE_REASON = 'UpstreamUnreachable';
/** The reason of a 502 where the port answered, but not in HTTP/2 (an HTTP/1.1 server there, to a gRPC call). */
export const PROTOCOL_ERROR_REASON = 'UpstreamProtocolError';

/**
 * The 502 for a sandbox the router could not reach or talk to. Its reason, when known, lets a
 * client say what to fix (a gRPC client aimed at a port with no gRPC server): `errorCode` is the
 * upstream error's code.
 */
export function upstreamRefusal(id: string, reason: UpstreamErrorReason, errorCode?: string): Refused {
  const detail = `Could not connect to the backend sandbox: ${id}`;
  if (reason === 'dial') return { status: 502, detail, reason: UNREACHABLE_REASON };
  if (errorCode === 'ERR_HTTP2_ERROR') return { status: 502, detail, reason: PROTOCOL_ERROR_REASON };
  return { status: 502, detail };
}

/** A refusal's JSON body: `detail`, and `reason` when it has one. */
export function refusalBody(refused: Refused): { detail: string; reason?: string } {
  return refused.reason === undefined ? { detail: refused.detail } : { detail: refused.detail, reason: refused.reason };
}

/** A refusal's own headers, and X-Sandbox-Reason when it has a reason. */
export function refusalHeaders(refused: Refused): Record<string, string> {
  return refused.reason === undefined ? { ...refused.headers } : { ...refused.headers, [REASON_HEADER]: refused.reason };
}

export class Router {
  private readonly upstream: UpstreamPools;
  private readonly limits: ConnectionLimits;
  /** Requests in admit(), each with the controller that ends its ready-wait (close() aborts them all). */
  private readonly waits = new Set<AbortController>();
  /** Waits for a sandbox the cache did not show (so not yet authorized), by caller. */
  private readonly unseenWaits = new Map<string, number>();
  /** The dial function behind the address guard: every connection to a sandbox goes through it. */
  public readonly dial: Dial;
  /** Upgraded connections (both ends), destroyed by close(): the HTTP server does not track them. */
  private readonly tunnels = new Set<Duplex>();

  public constructor(public readonly opts: RouterOptions) {
    const inner = opts.dial ?? defaultDial;
    this.dial = (host, port) => {
      const why = opts.guard.check(host);
      // No Nagle: a small request or response must not wait for the peer's delayed ACK.
      if (why === undefined) return inner(host, port).setNoDelay(true);
      const refused = new net.Socket();
      process.nextTick(() => refused.destroy(Object.assign(new Error(`refusing to connect: ${why}`), { code: 'EROUTERGUARD' })));
      return refused;
    };
    // Plain requests: a pool per sandbox address and port, as many connections as the limits admit
    // (the admission bounds them; fewer meant queueing under load); an idle one is dropped before the
    // sandbox's server would drop it (Node's keep-alive timeout is 5 s, uvicorn's too), so a reused
    // connection is rarely a closed one.
    this.upstream = new UpstreamPools(this.dial, {
      connections: opts.maxConnections,
      idleMs: IDLE_UPSTREAM_SOCKET_MS,
      connectTimeoutMs: opts.proxyTimeoutMs,
    });
    this.limits = new ConnectionLimits(opts.maxConnectionsPerSandbox, opts.maxConnections);
  }

  /** Serve on `server`: requests and upgrades. */
  public attach(server: http.Server): void {
    server.on('request', (req, res) => this.handleRequest(req, res));
    server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head));
  }

  public get openConnections(): number {
    return this.limits.open;
  }

  public close(): void {
    for (const cut of this.waits) cut.abort();
    this.upstream.destroy();
    for (const s of this.tunnels) s.destroy();
  }

  public handleRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req.headers['x-request-id']);
    res.setHeader('x-request-id', requestId);
    const log = lazyChild(this.opts.log, { requestId });
    let namespace = '';
    let clientGone = false;
    let admitting = true;
    // Made only if the admission waits (most never do): it is aborted when the client leaves.
    let left: AbortController | undefined;
    const clientLeft = () => {
      left ??= new AbortController();
      if (clientGone) left.abort();
      return left.signal;
    };
    res.on('close', () => {
      clientGone = true;
      // Only an admission still under way listens: aborting after it makes a DOMException for nobody.
      if (admitting) left?.abort();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.opts.metrics?.observe(req.method ?? '', res.statusCode, namespace, seconds);
      if (this.opts.accessLog) log.info({ method: req.method, namespace, status: res.statusCode, durationMs: Math.round(seconds * 1000), completed: res.writableFinished }, 'request');
    });
    if ((req.url ?? '').split('?')[0] === '/healthz' && req.method === 'GET') return json(res, 200, { status: 'ok' });
    void this.admit(req.url ?? '/', req.headers, clientLeft, req.socket.remoteAddress).then((admitted) => {
      admitting = false;
      // The client left while it was being admitted (an auth review or a ready-wait can take a while): send nothing.
      if (clientGone) return 'detail' in admitted ? undefined : admitted.release();
      if ('detail' in admitted) return json(res, admitted.status, refusalBody(admitted), refusalHeaders(admitted));
      namespace = admitted.target.namespace;
      this.forward(req, res, admitted, log);
    }, (err: Error) => {
      admitting = false;
      log.error({ err }, 'admitting the request failed');
      json(res, 500, { detail: 'An internal error occurred in the proxy.' });
    });
  }

  /**
   * Parse, authenticate, limit, resolve, authorize, guard and count one request, upgrade or HTTP/2
   * stream. Authentication takes no connection slot (its own bounds are in the authorizer), so bad
   * credentials cannot fill the limits; a sandbox the cache shows is authorized before any wait,
   * and one it does not show after the wait (only then is it known which claim controls it), so a
   * refused caller gets 403 either way and never learns whether the sandbox exists. A caller may
   * have only MAX_UNSEEN_WAITS_PER_CALLER such waits at once.
   */
  public async admit(url: string, headers: http.IncomingHttpHeaders, signal?: ClientLeft, remoteAddress?: string): Promise<Admitted | Refused> {
    const target = parseTarget(url, headers, this.opts.pathRoutingPrefix ?? '');
    if ('detail' in target) return target;
    const principal = await this.opts.authorizer.authenticate({ authorization: headers.authorization, remoteAddress });
    if (isRefusal(principal)) {
      this.opts.metrics?.authzDecision('', false);
      return principal;
    }
    const release = this.limits.acquire(`${target.namespace}/${target.id}`);
    if (typeof release !== 'function') {
      // The namespace is not a metric label before the caller is authorized (unbounded input).
      this.opts.metrics?.limitRejected('', release);
      const detail = release === 'sandbox' ? `Too many concurrent connections to sandbox ${target.namespace}/${target.id}.` : 'Too many concurrent connections through the router.';
      return { status: 429, detail, headers: { 'retry-after': '1' } };
    }
    try {
      const admitted = await this.admitWithin(target, principal, release, signal);
      if ('detail' in admitted) release();
      return admitted;
    } catch (err) {
      release();
      throw err;
    }
  }

  private async admitWithin(target: Target, principal: Principal, release: () => void, signal?: ClientLeft): Promise<Admitted | Refused> {
    const { authorizer, resolver, metrics } = this.opts;
    if (this.opts.cachesSynced && !this.opts.cachesSynced()) return { status: 503, detail: 'The router\'s caches have not synced yet.' };
    const seen = resolver.accessOf(target.namespace, target.id);
    if (seen) {
      const decision = await authorizer.authorize(principal, seen);
      if (isRefusal(decision)) return this.denied(decision);
    } else {
      // Not authorized yet, so bounded per caller: a valid token must not fill the limits with waits for names that do not exist.
      const waiting = this.unseenWaits.get(principal.key) ?? 0;
      if (waiting >= MAX_UNSEEN_WAITS_PER_CALLER) {
        return { status: 429, detail: `Too many requests waiting for sandboxes the router does not know (${waiting}); retry later.`, headers: { 'retry-after': '1' } };
      }
      this.unseenWaits.set(principal.key, waiting + 1);
    }
    const waitStarted = performance.now();
    const resumer = this.opts.resumer;
    // Only a sandbox the cache showed, for a caller authorized for it above, is resumed; a held request is its activity from the start.
    const resume = seen ? resumer?.resumeFor(target) : undefined;
    // The common case, a sandbox the cache shows serving, needs no wait and so no abort wiring.
    const ready = seen && !resume ? resolver.resolve(target) : undefined;
    const settled: Settled | Refused = ready && !('detail' in ready) ? { result: ready, outcome: 'immediate' }
      : await this.wait(target, seen !== undefined, principal, resume, waitStarted, signal);
    if (!('outcome' in settled)) return settled;
    const { result: resolved, outcome } = settled;
    // Authorized again when the wait changed what controls the sandbox (a pool member just claimed), or first now.
    const now = resolver.accessOf(target.namespace, target.id) ?? { namespace: target.namespace, sandbox: target.id };
    if (!seen || now.claim !== seen.claim) {
      const decision = await authorizer.authorize(principal, now);
      if (isRefusal(decision)) return this.denied(decision);
    }
    metrics?.authzDecision(target.namespace, true);
    const waited = outcome === 'immediate' && !resume ? 0 : performance.now() - waitStarted;
    const held = resume ? resumer!.held(target, resolved, outcome, waited) : undefined;
    if (held) return held;
    if (outcome !== 'immediate' && !resume) metrics?.readyWait(target.namespace, outcome);
    if (outcome === 'aborted') {
      // 499 (client closed request) is for the log only: nobody is left to read it.
      if (signalOf(signal)?.aborted) return { status: 499, detail: 'The client closed the request.' };
      return { status: 503, detail: 'The router is shutting down.', headers: { 'retry-after': '1' } };
    }
    if ('detail' in resolved) return resolved;
    const why = this.opts.guard.check(resolved.ip);
    if (why !== undefined) {
      this.opts.log.warn({ namespace: target.namespace, sandbox: target.id, ip: resolved.ip, reason: why }, 'refusing to proxy to the sandbox\'s address');
      return { status: 502, detail: `Could not connect to the backend sandbox: ${target.id}` };
    }
    // X-Sandbox-Timeout bounds the whole request: what the wait took comes off the forward's share.
    const timed = target.timeoutMs === undefined || waited === 0 ? target : { ...target, timeoutMs: Math.max(1, target.timeoutMs - waited) };
    return { target: timed, resolved, release: this.opts.activity?.track(target.namespace, target.id, release) ?? release };
  }

  /** The wait of admitWithin: for a resume (held), or for the caches to show the sandbox serving. */
  private async wait(target: Target, seen: boolean, principal: Principal, resume: ReturnType<Resumer['resumeFor']>, waitStarted: number,
    clientLeft?: ClientLeft): Promise<Settled | Refused> {
    const { resolver, resumer } = this.opts;
    const signal = signalOf(clientLeft);
    // The wait ends when the client leaves or the router closes, and never outlasts the request's own
    // timeout. (Not AbortSignal.any: combining with a long-lived signal leaks in Node, nodejs/node#55351.)
    const cut = new AbortController();
    const onLeft = () => cut.abort();
    signal?.addEventListener('abort', onLeft, { once: true });
    if (signal?.aborted) cut.abort();
    this.waits.add(cut);
    const holding = resume ? this.opts.activity?.track(target.namespace, target.id, () => undefined) : undefined;
    try {
      // A resume is held up to --resume-wait (its patch included), any other wait up to --ready-wait; neither past X-Sandbox-Timeout.
      return resume ? await resumer!.hold(resume, target.timeoutMs, waitStarted, cut.signal, (ms) => resolver.settle(target, ms, cut.signal, true))
        : await resolver.settle(target, Math.min(this.opts.readyWaitMs ?? 0, target.timeoutMs ?? Infinity), cut.signal);
    } finally {
      holding?.();
      this.waits.delete(cut);
      signal?.removeEventListener('abort', onLeft);
      const left = seen ? -1 : (this.unseenWaits.get(principal.key) ?? 1) - 1;
      if (left === 0) this.unseenWaits.delete(principal.key);
      else if (left > 0) this.unseenWaits.set(principal.key, left);
    }
  }

  private denied(decision: Refused): Refused {
    this.opts.metrics?.authzDecision('', false);
    return decision;
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, admitted: Admitted, log: Logger): void {
    const { target, resolved, release } = admitted;
    this.opts.metrics?.inflightDelta(1);
    res.once('close', () => {
      release();
      this.opts.metrics?.inflightDelta(-1);
    });
    // An asterisk-form (`OPTIONS *`) or absolute-form target is not a path on the sandbox.
    if (!target.path.startsWith('/')) {
      return json(res, 400, { detail: `The router forwards requests for paths that begin with "/"; "${target.path.slice(0, 100)}" does not.` });
    }
    const timeoutMs = Math.min(target.timeoutMs ?? this.opts.proxyTimeoutMs, this.opts.proxyTimeoutMs);
    // Only a request without a body can be sent again, and only when no response has begun.
    const replayable = !hasBody(req);
    // The body goes to undici through a stream of its own: undici destroys its body when the
    // exchange fails or the sandbox answers before reading it all, and destroying `req` itself
    // would reset the client's connection instead of letting its response through. What is left
    // of the client's body is then read and dropped.
    let body: PassThrough | undefined;
    if (!replayable) {
      body = new PassThrough();
      req.pipe(body);
      body.once('close', () => {
        req.unpipe(body);
        req.resume();
      });
    }
    const headers = forwardHeaders(req, res.getHeader('x-request-id') as string, false);
    // The router answered the client's Expect: 100-continue itself (Node's server does); undici sends no Expect.
    delete headers.expect;
    // undici hands a request its abort once it is written to a connection. A cut before that ends
    // the exchange here at once (a 504, or nothing when the client left), and the attempt is
    // aborted as soon as it gets its connection.
    let abort: ((err: Error) => void) | undefined;
    let cutBy: Error | undefined;
    const cut = (err: Error) => {
      if (abort) return abort(err);
      cutBy ??= err;
      onError(err, DIAL_RETRY_DELAYS_MS.length);
    };
    let retryTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let finished = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (retryTimer !== undefined) {
        clearTimeout(retryTimer);
        return this.fail(res, target, 'timeout', log, new Error(`no connection within ${timeoutMs} ms`));
      }
      cut(new Error(`no complete response within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = () => {
      finished = true;
      clearTimeout(timer);
      clearTimeout(retryTimer);
      body?.destroy();
    };
    res.once('close', () => {
      const completed = finished;
      done();
      if (!completed) cut(new Error('the client left'));
    });
    const onError = (err: NodeJS.ErrnoException, retries: number) => {
      if (finished) return;
      if (res.headersSent) {
        done();
        // The status is out; all that is left is to cut the body short.
        this.opts.metrics?.upstreamError(target.namespace, timedOut ? 'timeout' : 'eof');
        res.destroy();
        return;
      }
      // A kept-alive connection the sandbox closed as the request went out: the request may have
      // been read before the reset, so only an idempotent one is sent again (at once, once).
      if (!timedOut && !res.destroyed && replayable && IDEMPOTENT.has(req.method ?? '') && isConnectionClosed(err) && retries === 0) {
        this.opts.metrics?.upstreamRetry(target.namespace);
        return attempt(1);
      }
      if (!timedOut && !res.destroyed && replayable && RETRYABLE_DIAL_ERRORS.has(err.code ?? '') && retries < DIAL_RETRY_DELAYS_MS.length) {
        this.opts.metrics?.upstreamRetry(target.namespace);
        retryTimer = setTimeout(() => attempt(retries + 1), DIAL_RETRY_DELAYS_MS[retries]);
        return;
      }
      done();
      this.fail(res, target, timedOut ? 'timeout' : reasonOf(err), log, err);
    };
    const attempt = (retries: number) => {
      retryTimer = undefined;
      abort = undefined;
      let ended = false;
      let pool: Pool;
      try {
        pool = this.upstream.poolFor(resolved.ip, target.port);
      } catch (err) {
        // The router is closing.
        done();
        return json(res, 503, { detail: (err as Error).message }, { 'retry-after': '1' });
      }
      pool.dispatch({
        path: target.path,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: headers as Record<string, string | string[]>,
        body: body ?? null,
      }, {
        onConnect: (abortThis) => {
          abort = abortThis;
          // The client left or the timer fired while this attempt waited for a connection.
          if (cutBy !== undefined) abortThis(cutBy);
        },
        onHeaders: (status, raw, resume, statusText) => {
          // Informational answers (102, 103) are not passed on, as before; undici itself fails a
          // 101 to a plain request ("bad upgrade"), which is a 502.
          if (status < 200) return true;
          try {
            res.writeHead(status, statusText, filterRawResponseHeaders(raw as Buffer[]));
          } catch (err) {
            // A header or status text Node will not send (a character outside latin1): a 502
            // without the sandbox's headers that were set before the one refused.
            for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
            abort?.(err as Error);
            return false;
          }
          // The headers go out with the first body chunk (one write), or on their own when the body
          // is slow to start (a server-sent event stream must see its headers at once).
          setImmediate(() => {
            if (!res.headersSent && !res.destroyed) res.flushHeaders();
          });
          res.on('drain', resume);
          return true;
        },
        onData: (chunk) => res.write(chunk),
        onComplete: () => {
          if (ended) return;
          ended = true;
          done();
          res.end();
        },
        onError: (err) => {
          if (ended) return;
          ended = true;
          onError(err as NodeJS.ErrnoException, retries);
        },
      });
    };
    attempt(0);
  }

  private fail(res: http.ServerResponse, target: Target, reason: UpstreamErrorReason, log: Logger, err: Error): void {
    this.opts.metrics?.upstreamError(target.namespace, reason);
    log.warn({ namespace: target.namespace, sandbox: target.id, reason, err: err.message }, 'upstream failed');
    if (res.headersSent) return void res.destroy();
    if (reason === 'timeout') return json(res, 504, { detail: `Timed out waiting for the backend sandbox: ${target.id}` });
    const refused = upstreamRefusal(target.id, reason);
    json(res, refused.status, refusalBody(refused), refusalHeaders(refused));
  }

  public handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const requestId = requestIdOf(req.headers['x-request-id']);
    const log = lazyChild(this.opts.log, { requestId });
    const started = process.hrtime.bigint();
    socket.on('error', () => socket.destroy());
    let clientGone = false;
    const left = new AbortController();
    socket.once('close', () => {
      clientGone = true;
      left.abort();
    });
    const finish = (status: number, namespace: string) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.opts.metrics?.observe(req.method ?? '', status, namespace, seconds);
      if (this.opts.accessLog) log.info({ method: req.method, namespace, status, upgrade: req.headers.upgrade, durationMs: Math.round(seconds * 1000) }, 'upgrade');
    };
    void this.admit(req.url ?? '/', req.headers, left.signal, req.socket.remoteAddress).then((admitted) => {
      if ('detail' in admitted) {
        finish(admitted.status, '');
        if (clientGone) return;
        return rawJson(socket, admitted.status, refusalBody(admitted), { ...refusalHeaders(admitted), 'x-request-id': requestId });
      }
      if (clientGone) return admitted.release();
      this.forwardUpgrade(req, socket, head, admitted, requestId, log, finish);
    }, (err: Error) => {
      log.error({ err }, 'admitting the upgrade failed');
      rawJson(socket, 500, { detail: 'An internal error occurred in the proxy.' });
    });
  }

  private forwardUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, admitted: Admitted, requestId: string, log: Logger,
    finish: (status: number, namespace: string) => void): void {
    const { target, resolved, release } = admitted;
    this.opts.metrics?.inflightDelta(1);
    let released = false;
    const releaseOnce = () => {
      if (released) return;
      released = true;
      release();
      this.opts.metrics?.inflightDelta(-1);
    };
    socket.once('close', releaseOnce);
    const upstream = http.request({
      host: resolved.ip,
      port: target.port,
      method: req.method,
      path: target.path,
      headers: forwardHeaders(req, requestId, true),
      createConnection: () => this.dial(resolved.ip, target.port),
    });
    // The proxy timeout bounds the handshake only; an upgraded connection lives until either side closes it.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      upstream.destroy(new Error('handshake timed out'));
    }, this.opts.proxyTimeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      upstream.destroy();
    });
    upstream.on('upgrade', (upRes, upSocket, upHead) => {
      clearTimeout(timer);
      finish(101, target.namespace);
      const lines = [`HTTP/1.1 101 ${upRes.statusMessage ?? 'Switching Protocols'}`];
      for (let i = 0; i < upRes.rawHeaders.length; i += 2) lines.push(`${upRes.rawHeaders[i]}: ${upRes.rawHeaders[i + 1]}`);
      lines.push(`x-request-id: ${requestId}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upHead.length > 0) socket.write(upHead);
      if (head.length > 0) upSocket.write(head);
      for (const s of [socket, upSocket]) {
        this.tunnels.add(s);
        s.once('close', () => this.tunnels.delete(s));
      }
      upSocket.on('error', () => socket.destroy());
      upSocket.on('close', () => socket.destroy());
      socket.on('close', () => upSocket.destroy());
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    upstream.on('response', (upRes) => {
      // The sandbox declined the upgrade: relay its answer and close.
      clearTimeout(timer);
      finish(upRes.statusCode ?? 502, target.namespace);
      const lines = [`HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage ?? ''}`];
      const headers = filterResponseHeaders(upRes.headers);
      for (const [k, v] of Object.entries(headers)) for (const one of [v].flat()) lines.push(`${k}: ${String(one)}`);
      lines.push('connection: close');
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      upRes.pipe(socket);
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const reason = timedOut ? 'timeout' : reasonOf(err);
      this.opts.metrics?.upstreamError(target.namespace, reason);
      log.warn({ namespace: target.namespace, sandbox: target.id, reason, err: err.message }, 'upstream failed');
      const status = reason === 'timeout' ? 504 : 502;
      finish(status, target.namespace);
      rawJson(socket, status, { detail: reason === 'timeout' ? `Timed out waiting for the backend sandbox: ${target.id}` : `Could not connect to the backend sandbox: ${target.id}` });
    });
    upstream.end();
  }
}

/** Connection-establishment failures, retried (bodyless requests only) after these delays, as upstream's Go router does. */
const RETRYABLE_DIAL_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);
const DIAL_RETRY_DELAYS_MS = [200, 400, 800];
/** Methods a sandbox may see twice without harm. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS']);
/** An idle kept-alive connection to a sandbox is closed after this long. */
const IDLE_UPSTREAM_SOCKET_MS = 4_000;

function hasBody(req: http.IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function json(res: http.ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function rawJson(socket: Duplex, status: number, body: object, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const text = JSON.stringify(body);
  const lines = [`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}`, 'content-type: application/json', `content-length: ${Buffer.byteLength(text)}`, 'connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
}
