/**
 * A loopback TCP proxy between the operator and kube-apiserver that can fail the way a middlebox
 * does: freeze() stops forwarding bytes on every connection open at that moment without closing
 * any of them (a dropped NAT or conntrack entry: no FIN, no RST, the peers just stop hearing each
 * other), while connections opened afterwards work normally. reset() destroys every open
 * connection at once. TLS passes through untouched, so clients keep verifying the API server.
 */
import * as net from 'net';

interface Pair {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  frozen: boolean;
}

export class FreezableProxy {
  /** Starts a proxy on 127.0.0.1 (a free port) to `target` (host:port on loopback). */
  public static async start(targetHost: string, targetPort: number): Promise<FreezableProxy> {
    const proxy = new FreezableProxy(targetHost, targetPort);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  private readonly server: net.Server;
  private readonly pairs = new Set<Pair>();
  /** Connections accepted so far. */
  public accepted = 0;

  private constructor(private readonly targetHost: string, private readonly targetPort: number) {
    this.server = net.createServer((client) => this.accept(client));
  }

  public get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Connections open now, and how many of them are frozen. */
  public get open(): { total: number; frozen: number } {
    const all = [...this.pairs];
    return { total: all.length, frozen: all.filter((p) => p.frozen).length };
  }

  /** Stops forwarding on every open connection, keeping them open; returns how many it froze. */
  public freeze(): number {
    let n = 0;
    for (const p of this.pairs) {
      if (p.frozen) continue;
      p.frozen = true;
      p.client.pause();
      p.upstream.pause();
      n++;
    }
    return n;
  }

  /** Destroys every open connection (both ends see a reset); returns how many. */
  public reset(): number {
    const n = this.pairs.size;
    for (const p of [...this.pairs]) this.drop(p);
    return n;
  }

  public async close(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.accepted++;
    const upstream = net.connect(this.targetPort, this.targetHost);
    const pair: Pair = { client, upstream, frozen: false };
    this.pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk) => {
        if (pair.frozen) return; // bytes read just before the freeze: dropped, as on a dead path
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => {
            if (!pair.frozen) from.resume();
          });
        }
      });
      from.on('end', () => {
        if (!pair.frozen) to.end();
      });
    };
    forward(client, upstream);
    forward(upstream, client);
    // A frozen connection's client never hears that the server side went away, as on a dead path.
    const done = () => {
      if (!pair.frozen) this.drop(pair);
    };
    client.on('error', done).on('close', done);
    upstream.on('error', done).on('close', done);
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}
