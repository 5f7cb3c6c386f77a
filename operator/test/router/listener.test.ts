import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { echoHandler, pod, sandbox, startRouter, startUpstream, UPSTREAM_IP } from './harness';
import { ALLOW_ALL, type Authorizer } from '../../src/router/auth';
import { ProxyListener } from '../../src/router/listener';

/** Resolves when `socket` closes, with everything it received. */
function closedWith(socket: net.Socket): Promise<string> {
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve(text)));
}

describe('the proxy listener', () => {
  test('a client that never finishes its headers gets 408 and is closed (headersTimeout applies to sniffed connections)', async () => {
    const listener = new ProxyListener({ headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 } as never);
    await new Promise<void>((resolve) => listener.server.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((listener.server.address() as AddressInfo).port, '127.0.0.1');
    const closed = closedWith(socket);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 100);
    try {
      expect(await closed).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      clearInterval(drip);
      await listener.close();
    }
  });

  test('close() closes idle keep-alive connections', async () => {
    const listener = new ProxyListener();
    listener.http1.on('request', (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => listener.server.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((listener.server.address() as AddressInfo).port, '127.0.0.1');
    const closed = closedWith(socket);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((r) => socket.once('data', r));
    await listener.close();
    expect(await closed).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('a client that leaves while it is being admitted', () => {
  /** An authorizer that answers only when told to, and counts its calls. */
  function gate(): Authorizer & { calls: number; open: () => void } {
    let release!: () => void;
    const opened = new Promise<void>((r) => (release = r));
    const a = {
      calls: 0,
      authenticate: async (caller: Parameters<Authorizer['authenticate']>[0]) => {
        a.calls++;
        await opened;
        return ALLOW_ALL.authenticate(caller);
      },
      authorize: ALLOW_ALL.authorize,
      open: () => release(),
    };
    return a;
  }

  test('HTTP/1.1, an upgrade and an HTTP/2 stream: the limit slot comes back and nothing is dialed', async () => {
    const upstream = await startUpstream(echoHandler);
    const authorizer = gate();
    const h = await startRouter({ authorizer });
    const sb = sandbox('sb');
    h.sandboxes.put(sb);
    h.pods.put(pod(sb, [UPSTREAM_IP]));
    const route = `X-Sandbox-ID: sb\r\nX-Sandbox-Port: ${upstream.port}\r\n`;
    try {
      for (const head of [`GET / HTTP/1.1\r\nHost: x\r\n${route}\r\n`, `GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${route}\r\n`]) {
        const socket = net.connect(h.port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(head);
        const before = authorizer.calls;
        while (authorizer.calls === before) await new Promise((r) => setImmediate(r));
        socket.destroy();
        await new Promise((r) => socket.once('close', r));
      }
      const session = http2.connect(`http://127.0.0.1:${h.port}`);
      session.on('error', () => undefined);
      const stream = session.request({ ':path': '/', 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) });
      stream.on('error', () => undefined);
      while (authorizer.calls < 3) await new Promise((r) => setImmediate(r));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await new Promise((r) => stream.once('close', r));
      session.destroy();
      // Until the router has seen every client go.
      const open = () => new Promise<number>((resolve, reject) => h.listener.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
      while ((await open()) > 0) await new Promise((r) => setTimeout(r, 5));
      authorizer.open();
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      expect(h.router.openConnections).toBe(0);
      expect(h.dialed).toEqual([]);
    } finally {
      authorizer.open();
      await h.close();
      await upstream.close();
    }
  });
});
