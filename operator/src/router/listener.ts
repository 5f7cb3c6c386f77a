/**
 * The proxy port: HTTP/1.1 (with Upgrade) and h2c with prior knowledge on one listener. Each new
 * connection's first bytes are read: the HTTP/2 connection preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`
 * hands it to the HTTP/2 server (gRPC clients open plaintext connections this way), anything else
 * to the HTTP/1.1 server; the bytes read are put back first. No h2c Upgrade from HTTP/1.1 (gRPC
 * clients do not use it).
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';

export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** A connection that has not sent enough to tell its protocol by then is closed. */
const SNIFF_TIMEOUT_MS = 10_000;

export class ProxyListener {
  /** No Nagle on client connections: HTTP/2's small frames would wait for delayed ACKs. */
  public readonly server = net.createServer({ noDelay: true }, (socket) => this.sniff(socket));
  public readonly http1 = http.createServer();
  public readonly http2 = http2.createServer();
  private readonly sessions = new Set<http2.ServerHttp2Session>();

  public constructor() {
    this.http2.on('session', (session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
    });
  }

  /** Stops accepting; idle HTTP/1.1 connections close and HTTP/2 clients get a GOAWAY. Resolves once every connection is gone. */
  public close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.http1.closeIdleConnections();
    for (const session of this.sessions) session.close();
    return closed;
  }

  /** Drops every connection still open. */
  public closeAllConnections(): void {
    this.http1.closeAllConnections();
    for (const session of this.sessions) session.destroy();
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
