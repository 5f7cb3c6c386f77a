/**
 * HTTP/2 through the router: each stream of an h2c (prior-knowledge) connection is forwarded to its
 * sandbox as a stream over h2c, so gRPC (sandboxd's ProcessService, or any gRPC server in a
 * sandbox) works through the router; upstream's router speaks HTTP/1.1 only and cannot carry it.
 *
 * Admission (addressing headers, i.e. gRPC metadata, auth, caches, address guard, limits) and the
 * guarded dial are the HTTP/1.1 path's (`Router`); headers are changed as `./forwarding` says,
 * `te: trailers` kept, and trailers (grpc-status) are passed back. One session per sandbox address
 * is pooled and dropped on error, GOAWAY or close.
 *
 * Errors: a gRPC request (content-type application/grpc*) that the router refuses gets a
 * trailers-only response with the matching grpc-status and the JSON error's text as grpc-message;
 * other requests get the same JSON bodies and statuses as over HTTP/1.1. --proxy-timeout (and
 * X-Sandbox-Timeout) bound plain requests only: a gRPC call is bounded by its own grpc-timeout,
 * which both ends enforce, so long streams are never cut by the router. Metrics count every stream
 * as a request; a refusal is labelled with the HTTP status it stands for (a gRPC refusal too).
 */
import * as http2 from 'node:http2';
import { isIP } from 'node:net';
import { filterResponseHeaders, forwardableHeaders, reasonOf, requestIdOf } from './forwarding';
import { isGrpcRequest, trailersOnly } from './grpc-status';
import { type Admitted, refusalBody, refusalHeaders, type Router, upstreamRefusal } from './proxy';
import { lazyChild, type Logger } from '../runtime/log';

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM, NGHTTP2_INTERNAL_ERROR } = http2.constants;

/** An upstream session idle this long is closed (gracefully: open streams finish). */
const SESSION_IDLE_MS = 60_000;

/** The per-stream state the response path needs. */
interface Exchange {
  readonly stream: http2.ServerHttp2Stream;
  readonly requestId: string;
  readonly grpc: boolean;
  readonly log: Logger;
  /** The :status sent to the client (0 until then). */
  status: number;
}

export class H2Proxy {
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  public constructor(private readonly router: Router) {}

  /** Serve every stream of `server`. */
  public attach(server: http2.Http2Server): void {
    // Per session, so each stream knows its client's address even when the client has already reset it.
    server.on('session', (session) => {
      const client = session.socket?.remoteAddress;
      session.on('stream', (stream, headers) => this.handleStream(stream, headers, client));
    });
  }

  /** Drops the pooled upstream sessions. */
  public close(): void {
    for (const session of this.sessions.values()) session.destroy();
    this.sessions.clear();
  }

  public handleStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, client?: string): void {
    const opts = this.router.opts;
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(headers['x-request-id']);
    const method = String(headers[':method'] ?? '');
    const url = String(headers[':path'] ?? '');
    const ex: Exchange = { stream, requestId, grpc: isGrpcRequest(headers), log: lazyChild(opts.log, { requestId }), status: 0 };
    let namespace = '';
    // A client reset shows up as 'close'; the error itself needs no handling.
    stream.on('error', () => undefined);
    const left = new AbortController();
    stream.once('close', () => {
      left.abort();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      opts.metrics?.observe(method, ex.status, namespace, seconds);
      if (opts.accessLog) ex.log.info({ method, namespace, status: ex.status, http2: true, grpc: ex.grpc, durationMs: Math.round(seconds * 1000), rstCode: stream.rstCode }, 'request');
    });
    if (url.split('?')[0] === '/healthz' && method === 'GET') return this.refuse(ex, 200, '', { status: 'ok' });
    if (method === 'CONNECT' || url === '') return this.refuse(ex, 400, 'CONNECT and requests without a path are not proxied.');
    // Reset before it got here (rapid reset): nothing to answer, nothing to check.
    if (stream.destroyed) return;
    void this.router.admit(url, headers, left.signal, client).then((admitted) => {
      if ('detail' in admitted && (stream.closed || stream.destroyed)) return;
      if ('detail' in admitted) return this.refuse(ex, admitted.status, admitted.detail, refusalBody(admitted), refusalHeaders(admitted));
      namespace = admitted.target.namespace;
      this.forward(ex, headers, admitted);
    }, (err: Error) => {
      ex.log.error({ err }, 'admitting the request failed');
      this.refuse(ex, 500, 'An internal error occurred in the proxy.');
    });
  }

  private forward(ex: Exchange, headers: http2.IncomingHttpHeaders, admitted: Admitted): void {
    const opts = this.router.opts;
    const { target, resolved, release } = admitted;
    const { stream } = ex;
    // The client left while it was being admitted: give the slot back, send nothing.
    if (stream.closed || stream.destroyed) return release();
    opts.metrics?.inflightDelta(1);
    stream.once('close', () => {
      release();
      opts.metrics?.inflightDelta(-1);
    });
    const host = isIP(resolved.ip) === 6 ? `[${resolved.ip}]` : resolved.ip;
    const out: http2.OutgoingHttpHeaders = {
      ...forwardableHeaders(headers, { remoteAddress: stream.session?.socket?.remoteAddress, host: headers[':authority'] ?? headers.host, requestId: ex.requestId }),
      ':method': headers[':method'],
      ':path': target.path,
      ':scheme': 'http',
      ':authority': `${host}:${target.port}`,
    };
    let upstream: http2.ClientHttp2Stream;
    try {
      upstream = this.session(resolved.ip, target.port, host).request(out);
    } catch (err) {
      return this.failUpstream(ex, admitted, err as Error, false);
    }
    let responded = false;
    let timedOut = false;
    let trailers: http2.OutgoingHttpHeaders = {};
    const timer = ex.grpc ? undefined : setTimeout(() => {
      timedOut = true;
      upstream.close(NGHTTP2_CANCEL);
    }, Math.min(target.timeoutMs ?? opts.proxyTimeoutMs, opts.proxyTimeoutMs));
    upstream.on('error', () => undefined);
    upstream.on('response', (upHeaders, flags) => {
      responded = true;
      ex.status = Number(upHeaders[':status'] ?? 502);
      const reply = { ...filterResponseHeaders(upHeaders), ':status': ex.status, 'x-request-id': ex.requestId };
      if (stream.closed) return;
      // A trailers-only answer (a gRPC error) ends with its headers: pass it on as one frame.
      // eslint-disable-next-line no-bitwise -- HTTP/2 frame flags are a bit set
      if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) return stream.respond(reply, { endStream: true });
      stream.respond(reply, { waitForTrailers: true });
      upstream.pipe(stream);
    });
    upstream.on('trailers', (upTrailers) => (trailers = filterResponseHeaders(upTrailers)));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    upstream.once('end', () => clearTimeout(timer));
    upstream.once('close', () => {
      clearTimeout(timer);
      if (!responded) return this.failUpstream(ex, admitted, upstreamError(upstream), timedOut);
      // Cut short after the response began: all that is left is to reset the client's stream too.
      if (upstream.rstCode !== undefined && upstream.rstCode !== 0 && !stream.closed) {
        opts.metrics?.upstreamError(target.namespace, timedOut ? 'timeout' : 'eof');
        stream.close(upstream.rstCode === NGHTTP2_CANCEL ? NGHTTP2_CANCEL : NGHTTP2_INTERNAL_ERROR);
      }
    });
    stream.once('close', () => {
      clearTimeout(timer);
      if (!upstream.closed) upstream.close(NGHTTP2_CANCEL);
    });
    stream.pipe(upstream);
  }

  /** The pooled session to `ip:port`, or a new one over the router's guarded dial. */
  private session(ip: string, port: number, host: string): http2.ClientHttp2Session {
    const key = `${host}:${port}`;
    const pooled = this.sessions.get(key);
    if (pooled && !pooled.closed && !pooled.destroyed) return pooled;
    // No Nagle: small HTTP/2 frames (a unary call's end) would otherwise wait for the peer's delayed ACK (~40 ms).
    const session = http2.connect(`http://${key}`, { createConnection: () => this.router.dial(ip, port).setNoDelay(true) });
    const drop = () => {
      if (this.sessions.get(key) === session) this.sessions.delete(key);
    };
    session.on('error', drop);
    session.on('goaway', drop);
    session.on('close', drop);
    session.setTimeout(SESSION_IDLE_MS, () => session.close());
    this.sessions.set(key, session);
    return session;
  }

  private failUpstream(ex: Exchange, admitted: Admitted, err: NodeJS.ErrnoException, timedOut: boolean): void {
    const { target } = admitted;
    const reason = timedOut ? 'timeout' : reasonOf(err);
    this.router.opts.metrics?.upstreamError(target.namespace, reason);
    ex.log.warn({ namespace: target.namespace, sandbox: target.id, reason, err: err.message }, 'upstream failed');
    if (timedOut) return this.refuse(ex, 504, `Timed out waiting for the backend sandbox: ${target.id}`);
    const refused = upstreamRefusal(target.id, reason, err.code);
    this.refuse(ex, refused.status, refused.detail, refusalBody(refused), refusalHeaders(refused));
  }

  /** Answers the stream itself: JSON, or a trailers-only gRPC response for gRPC requests. */
  private refuse(ex: Exchange, status: number, detail: string, body: object = { detail }, extra: Record<string, string> = {}): void {
    const { stream } = ex;
    if (stream.closed || stream.destroyed) return;
    if (stream.headersSent) return void stream.close(NGHTTP2_INTERNAL_ERROR);
    ex.status = status;
    const headers = { ...extra, 'x-request-id': ex.requestId };
    stream.resume();
    if (ex.grpc && status !== 200) return stream.respond(trailersOnly(status, detail, headers), { endStream: true });
    const text = JSON.stringify(body);
    stream.respond({ ...headers, ':status': status, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    stream.end(text);
  }
}

/** Why an upstream stream closed without a response (a session failure, such as the dial's, is the cancel's cause). */
function upstreamError(upstream: http2.ClientHttp2Stream): NodeJS.ErrnoException {
  const errored = (upstream as unknown as { errored?: Error }).errored;
  if (errored) return (errored.cause as Error | undefined) ?? errored;
  return Object.assign(new Error(`the sandbox reset the stream (HTTP/2 error code ${upstream.rstCode})`), { code: 'ERSTSTREAM' });
}
