/**
 * The router's connections to sandboxes for plain HTTP/1.1 requests: one undici pool per sandbox
 * address and port, every connection opened by the router's guarded dial.
 *
 * Why undici and not `http.request` with an `http.Agent`: Node's HTTP client parser copies every
 * body chunk into a new Buffer, undici's hands each chunk on as a view of what the socket read, and
 * its request path makes fewer objects. Through the same server, on this project's router benchmark
 * backend, it measured 1.2x (one client) to 1.6x (ten clients) the small requests per second, 1.17x
 * the 1 MiB ones, and less peak memory (bench/README.md, the router).
 *
 * undici's own Agent keeps a pool per origin for ever; sandboxes come and go, so these pools are
 * swept: one with no connection and no request left is closed and forgotten.
 */
import * as net from 'node:net';
import { Pool, type buildConnector } from 'undici';

/** Opens a TCP connection; the router's only way to reach a sandbox. */
export type Dial = (host: string, port: number) => net.Socket;

/** What a pool needs beyond the dial. */
export interface UpstreamPoolOptions {
  /** Connections per sandbox address and port (requests beyond wait in the pool's queue). */
  readonly connections: number;
  /** An idle kept-alive connection is closed after this long. */
  readonly idleMs: number;
  /** A connection not established within this long fails with ETIMEDOUT. */
  readonly connectTimeoutMs: number;
}

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  public constructor(private readonly dial: Dial, private readonly opts: UpstreamPoolOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, opts.idleMs)).unref();
  }

  /** The pool for `ip`:`port`, made on first use; throws once destroyed (the router is closing). */
  public poolFor(ip: string, port: number): Pool {
    if (this.closed) throw new Error('The router is shutting down.');
    const origin = `http://${net.isIPv6(ip) ? `[${ip}]` : ip}:${port}`;
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.opts.connections,
        pipelining: 1,
        // The router bounds a whole request with its own timer (--proxy-timeout, X-Sandbox-Timeout).
        headersTimeout: 0,
        bodyTimeout: 0,
        keepAliveTimeout: this.opts.idleMs,
        keepAliveMaxTimeout: this.opts.idleMs,
        // A sandbox's `Keep-Alive: timeout=5` (Node's, uvicorn's) caps it at 5 s less this margin.
        keepAliveTimeoutThreshold: 1_000,
        connect: (_o, callback) => this.connect(ip, port, callback),
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Pools held (idle ones included until the next sweep). */
  public get size(): number {
    return this.pools.size;
  }

  /** Closes and forgets every pool with no connection and no request. */
  public sweep(): void {
    for (const [origin, pool] of this.pools) {
      const s = pool.stats;
      if (s.connected + s.pending + s.running + s.queued > 0) continue;
      this.pools.delete(origin);
      pool.close().catch(() => undefined);
    }
  }

  /** Destroys every pool and its connections (requests under way fail). */
  public destroy(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const pool of this.pools.values()) pool.destroy().catch(() => undefined);
    this.pools.clear();
  }

  private connect(ip: string, port: number, callback: buildConnector.Callback): void {
    const socket = this.dial(ip, port);
    if (!socket.pending) return callback(null, socket);
    const timer = setTimeout(() => {
      socket.destroy(Object.assign(new Error(`no connection to ${ip}:${port} within ${this.opts.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, this.opts.connectTimeoutMs);
    const settle = (err: Error | null) => {
      clearTimeout(timer);
      socket.removeListener('connect', onConnect);
      socket.removeListener('error', settle);
      socket.removeListener('close', onClose);
      if (err) callback(err, null);
      else callback(null, socket);
    };
    const onConnect = () => settle(null);
    // Closed without an error (a dial's socket ended by someone else): the pool must not wait for ever.
    const onClose = () => settle(Object.assign(new Error(`the connection to ${ip}:${port} closed before it was made`), { code: 'ECONNABORTED' }));
    socket.once('connect', onConnect);
    socket.once('error', settle);
    socket.once('close', onClose);
  }
}
