/**
 * The proxy port: HTTP/1.1 (with Upgrade) and h2c with prior knowledge on one listener. Each new
 * connection's first bytes are read: the HTTP/2 connection preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`
 * hands it to the HTTP/2 server (gRPC clients open plaintext connections this way), anything else
 * to the HTTP/1.1 server; the bytes read are put back first. No h2c Upgrade from HTTP/1.1 (gRPC
 * clients do not use it).
 *
 * The HTTP/1.1 server is fed connections rather than listening itself, so it is told when the
 * listener starts: Node tracks an http.Server's connections (headersTimeout, requestTimeout,
 * closeIdleConnections) only from its 'listening' event. Without that, a client that never finishes
 * its headers would hold a connection forever.
 *
 * Before any request is authenticated: each client address may hold a bounded number of
 * connections, an HTTP/2 connection without open streams is closed after an idle timeout, streams
 * per connection are capped, and a connection whose client keeps resetting streams before they are
 * answered (each one cost an authentication, maybe a stream to a sandbox) is closed with ENHANCE_YOUR_CALM.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { clientKey } from './auth';

export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** A connection that has not sent enough to tell its protocol by then is closed. */
const SNIFF_TIMEOUT_MS = 10_000;
const RESET_WINDOW_MS = 10_000;

export interface ListenerLimits {
  /** Open connections from one client address; more are closed at once. @default 512 */
  readonly maxConnectionsPerClient?: number;
  /** An HTTP/2 connection with no stream open this long is closed (GOAWAY). @default 60 s */
  readonly h2IdleTimeoutMs?: number;
  /** Streams one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). @default 256 */
  readonly maxConcurrentStreams?: number;
  /**
   * Streams a client may reset (RST_STREAM) before the router has finished answering them, per HTTP/2
   * connection in 10 s; more close the connection with ENHANCE_YOUR_CALM. Each such stream made the
   * router authenticate, and maybe open a stream to a sandbox, for nothing (the "rapid reset"
   * pattern). Node closes a connection after about a thousand resets itself; this acts sooner. @default 100
   */
  readonly maxResetsPer10s?: number;
  /** Told of each connection a limit closes (`per-client`: over the cap; `resets`: too many resets). */
  readonly onRefused?: (reason: 'per-client' | 'resets') => void;
}

export class ProxyListener {
  /** No Nagle on client connections: HTTP/2's small frames would wait for delayed ACKs. */
  public readonly server = net.createServer({ noDelay: true }, (socket) => this.accept(socket));
  public readonly http1: http.Server;
  public readonly http2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly perClient = new Map<string, number>();
  private readonly maxPerClient: number;
  private readonly h2IdleMs: number;
  private readonly maxResets: number;
  private readonly onRefused?: (reason: 'per-client' | 'resets') => void;

  /** `http1Options`: e.g. headersTimeout (Node's default 60 s) and requestTimeout (300 s). */
  public constructor(http1Options: http.ServerOptions = {}, limits: ListenerLimits = {}) {
    this.maxPerClient = limits.maxConnectionsPerClient ?? 512;
    this.h2IdleMs = limits.h2IdleTimeoutMs ?? 60_000;
    this.maxResets = limits.maxResetsPer10s ?? 100;
    this.onRefused = limits.onRefused;
    this.http1 = http.createServer(http1Options);
    this.http2 = http2.createServer({ settings: { maxConcurrentStreams: limits.maxConcurrentStreams ?? 256 } });
    this.server.on('listening', () => this.http1.emit('listening'));
    this.http2.on('session', (session) => this.track(session));
  }

  /** Reports a connection closed by a limit. */
  private refused(reason: 'per-client' | 'resets'): void {
    this.onRefused?.(reason);
  }

  /** Stops accepting; idle HTTP/1.1 connections close and HTTP/2 clients get a GOAWAY. Resolves once every connection is gone. */
  public close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // Closes idle connections and stops the timeout checker; the error says it never listened itself.
    this.http1.close(() => undefined);
    for (const session of this.sessions) session.close();
    return closed;
  }

  /** Drops every connection still open. */
  public closeAllConnections(): void {
    this.http1.closeAllConnections();
    for (const session of this.sessions) session.destroy();
  }

  /** An HTTP/2 connection: closed once it has had no stream open for the idle timeout (a preface alone holds nothing). */
  private track(session: http2.ServerHttp2Session): void {
    this.sessions.add(session);
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      idle = setTimeout(() => {
        session.close();
        // Whatever a client does not finish after the GOAWAY is cut off.
        setTimeout(() => session.destroy(), 1_000).unref();
      }, this.h2IdleMs);
      idle.unref();
    };
    arm();
    // Client resets of streams the router had not finished answering, in fixed windows.
    let resets = 0;
    let windowStart = Date.now();
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      open++;
      clearTimeout(idle);
      stream.once('aborted', () => {
        // Only a reset of a stream not answered yet: cancelling a call whose response has begun (a
        // gRPC deadline, a stream the client is done with) is ordinary, and so is the router cutting
        // a stream short after the sandbox did.
        if (stream.headersSent) return;
        const now = Date.now();
        if (now - windowStart > RESET_WINDOW_MS) {
          windowStart = now;
          resets = 0;
        }
        if (++resets > this.maxResets && !session.closed && !session.destroyed) {
          // GOAWAY names the last stream taken, so the client knows what was not processed; the
          // streams already running get a moment to finish.
          session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
          session.close();
          setTimeout(() => session.destroy(), 1_000).unref();
          this.refused('resets');
        }
      });
      stream.once('close', () => {
        if (--open === 0 && !session.closed && !session.destroyed) arm();
      });
    });
    session.once('close', () => {
      clearTimeout(idle);
      this.sessions.delete(session);
    });
  }

  private accept(socket: net.Socket): void {
    const client = clientKey(socket.remoteAddress);
    const n = (this.perClient.get(client) ?? 0) + 1;
    if (n > this.maxPerClient) {
      this.refused('per-client');
      return void socket.destroy();
    }
    this.perClient.set(client, n);
    socket.once('close', () => {
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left === 0) this.perClient.delete(client);
      else this.perClient.set(client, left);
    });
    this.sniff(socket);
  }

  private sniff(socket: net.Socket): void {
    let seen = Buffer.alloc(0);
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
    const onError = () => socket.destroy();
    socket.on('error', onError);
    const onReadable = () => {
      for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null;) seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const h2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (h2 && seen.length < H2_PREFACE.length) return;
      socket.off('readable', onReadable);
      socket.off('error', onError);
      socket.setTimeout(0);
      socket.unshift(seen);
      (h2 ? this.http2 : this.http1).emit('connection', socket);
    };
    socket.on('readable', onReadable);
  }
}
