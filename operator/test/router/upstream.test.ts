import * as net from 'node:net';
import { startUpstream, UPSTREAM_IP, type Upstream } from './harness';
import { UpstreamPools } from '../../src/router/upstream';

describe('upstream pools', () => {
  let upstream: Upstream;
  let pools: UpstreamPools;
  const dialed: string[] = [];
  const dial = (host: string, port: number): net.Socket => {
    if (!host.startsWith('127.')) throw new Error(`test dial to a non-loopback address ${host}`);
    dialed.push(`${host}:${port}`);
    return net.connect({ host, port });
  };

  beforeEach(async () => {
    dialed.length = 0;
    upstream = await startUpstream((req, res) => {
      if (req.url === '/slow') return void setTimeout(() => res.end('slow'), 300);
      res.end('ok');
    });
    pools = new UpstreamPools(dial, { connections: 4, idleMs: 60_000, connectTimeoutMs: 5_000 });
  });

  afterEach(async () => {
    pools.destroy();
    await upstream.close();
  });

  const get = async (path: string): Promise<string> => {
    const { body } = await pools.poolFor(UPSTREAM_IP, upstream.port).request({ path, method: 'GET' });
    return body.text();
  };

  test('one pool per address and port, its connection kept alive and reused through the dial', async () => {
    expect(await get('/')).toBe('ok');
    const pool = pools.poolFor(UPSTREAM_IP, upstream.port);
    await waitFor(() => pool.stats.free === 1);
    expect(await get('/')).toBe('ok');
    expect(pools.poolFor(UPSTREAM_IP, upstream.port)).toBe(pool);
    expect(pools.size).toBe(1);
    expect(dialed).toEqual([`${UPSTREAM_IP}:${upstream.port}`]);
  });

  test('the sweep keeps a pool with a connection or a request under way, and forgets one with neither', async () => {
    expect(await get('/')).toBe('ok');
    // An idle kept-alive connection: kept.
    pools.sweep();
    expect(pools.size).toBe(1);
    const first = pools.poolFor(UPSTREAM_IP, upstream.port);
    // The sandbox closes its connections; a request is then under way on a new one: kept.
    upstream.server.closeAllConnections();
    await waitFor(() => first.stats.connected === 0);
    const slow = get('/slow');
    pools.sweep();
    expect(pools.size).toBe(1);
    expect(await slow).toBe('slow');
    // Nothing open and nothing asked: forgotten, and the next request makes a new pool.
    upstream.server.closeAllConnections();
    await waitFor(() => first.stats.connected === 0);
    pools.sweep();
    expect(pools.size).toBe(0);
    expect(await get('/')).toBe('ok');
    expect(pools.poolFor(UPSTREAM_IP, upstream.port)).not.toBe(first);
  });

  test('a connection that does not open in time fails with ETIMEDOUT (the dial\'s socket destroyed)', async () => {
    let stuck: net.Socket | undefined;
    const slowPools = new UpstreamPools(() => (stuck = new net.Socket()), { connections: 1, idleMs: 60_000, connectTimeoutMs: 50 });
    try {
      const err = await slowPools.poolFor(UPSTREAM_IP, 1).request({ path: '/', method: 'GET' }).then(() => undefined, (e: NodeJS.ErrnoException) => e);
      expect(err?.code).toBe('ETIMEDOUT');
      expect(stuck?.destroyed).toBe(true);
    } finally {
      slowPools.destroy();
    }
  });
});

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}
