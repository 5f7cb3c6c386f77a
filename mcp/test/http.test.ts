/**
 * The streamable HTTP transport with the official MCP client (StreamableHTTPClientTransport): a
 * session per client with its own sandbox, progress over the POST's event stream, the sandbox
 * released before the session's DELETE is answered; and what it refuses: a foreign Host or
 * Origin (DNS rebinding), a request without the bearer token, a session over --max-sessions (also
 * when initializes come at once), an ended session's id; and idle sessions, with or without a call.
 */
import * as http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { runtimeClaims, sessionServer, type Claims } from './fixture';
import { startHttpServer, type HttpServerOptions, type RunningHttpServer } from '../src/http';

const newClaims = runtimeClaims();
let running: RunningHttpServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function serve(claims: Claims, options: Partial<HttpServerOptions> & { idleTimeoutMs?: number } = {}): Promise<RunningHttpServer> {
  running = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    allowedHosts: [],
    allowedOrigins: [],
    maxSessions: 4,
    log: () => undefined,
    newSession: (_id, onIdle) => sessionServer(claims, { idleTimeoutMs: options.idleTimeoutMs ?? 0, onIdle }),
    ...options,
  });
  return running;
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

/** A raw POST of an initialize request with these headers: the status and body. */
function rawInitialize(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: '/mcp',
      method: 'POST',
      agent: false,
      headers: { 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream', ...headers },
    }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

test('a session per client: tools, progress before the result, and the sandbox released before DELETE is answered', async () => {
  const claims = newClaims();
  const server = await serve(claims);
  const a = await connect(server.url);
  const b = await connect(server.url);
  expect(server.sessions).toBe(2);
  expect((await a.client.listTools()).tools.map((t) => t.name)).toContain('execute_command');

  const progress: Progress[] = [];
  const result = await a.client.callTool({ name: 'execute_command', arguments: { command: 'for i in 1 2 3; do echo tick $i; sleep 0.1; done' } }, undefined, {
    onprogress: (p) => progress.push(p),
  }) as CallToolResult;
  expect((result.content[0] as { text: string }).text).toBe('exit code: 0\nstdout:\ntick 1\ntick 2\ntick 3');
  expect(progress.length).toBeGreaterThanOrEqual(2);
  await b.client.callTool({ name: 'file_exists', arguments: { path: 'x' } });
  // Two sessions, two sandboxes.
  expect(claims.made).toEqual(['claim-1', 'claim-2']);

  await a.transport.terminateSession();
  expect(claims.released).toEqual(['claim-1']);
  expect(server.sessions).toBe(1);
  await a.client.close();
  // The ended session's id is not found any more.
  await expect(a.client.listTools()).rejects.toThrow();

  await b.client.close();
});

test('DNS-rebinding protection: a foreign Host or Origin is refused with 403; the server\'s own names pass', async () => {
  const server = await serve(newClaims());
  const port = server.port;
  expect(await rawInitialize(port, { Host: `evil.example:${port}` })).toMatchObject({ status: 403, body: expect.stringContaining('Invalid Host header') });
  expect(await rawInitialize(port, { Origin: 'http://evil.example' })).toMatchObject({ status: 403, body: expect.stringContaining('Invalid Origin header') });
  expect(server.sessions).toBe(0);
  expect((await rawInitialize(port, { Host: `localhost:${port}`, Origin: `http://localhost:${port}` })).status).toBe(200);
  expect(server.sessions).toBe(1);
});

test('--allowed-origin and --allowed-host widen the lists', async () => {
  const server = await serve(newClaims(), { allowedOrigins: ['https://app.example.com'], allowedHosts: ['mcp.internal:8443'] });
  expect((await rawInitialize(server.port, { Origin: 'https://app.example.com' })).status).toBe(200);
  expect((await rawInitialize(server.port, { Host: 'mcp.internal:8443' })).status).toBe(200);
  expect((await rawInitialize(server.port, { Origin: 'https://other.example.com' })).status).toBe(403);
});

test('with a bearer token: refused without it (401), served with it', async () => {
  const server = await serve(newClaims(), { authToken: 's3cret' });
  expect((await rawInitialize(server.port, {})).status).toBe(401);
  expect((await rawInitialize(server.port, { Authorization: 'Bearer wrong!' })).status).toBe(401);
  const { client } = await connect(server.url, { Authorization: 'Bearer s3cret' });
  expect((await client.listTools()).tools.length).toBeGreaterThan(5);
  await client.close();
});

test('--max-sessions: one session more is refused with 503', async () => {
  const server = await serve(newClaims(), { maxSessions: 1 });
  const { client } = await connect(server.url);
  expect(await rawInitialize(server.port, {})).toMatchObject({ status: 503, body: expect.stringContaining('Too many sessions') });
  await client.close();
});

test('--max-sessions holds for initializes at once: the slot is taken before the session registers', async () => {
  const claims = newClaims();
  // A session that takes a while to start (its server connects after a timer): all six initializes are past the check before any registers.
  const server = await serve(claims, {
    maxSessions: 2,
    newSession: (_id, onIdle) => {
      const made = sessionServer(claims, { idleTimeoutMs: 0, onIdle });
      const connectNow = made.server.connect.bind(made.server);
      made.server.connect = async (transport) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return connectNow(transport);
      };
      return made;
    },
  });
  const replies = await Promise.all(Array.from({ length: 6 }, () => rawInitialize(server.port, {})));
  expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 503, 503, 503, 503]);
  expect(server.sessions).toBe(2);
});

test('idle: a session that never calls a tool ends too', async () => {
  const claims = newClaims();
  const server = await serve(claims, { idleTimeoutMs: 50 });
  const { client } = await connect(server.url);
  expect(server.sessions).toBe(1);
  while (server.sessions > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(claims.made).toEqual([]);
  await client.close();
});

test('idle: the session ends with its sandbox released; its id is then unknown (404)', async () => {
  const claims = newClaims();
  const server = await serve(claims, { idleTimeoutMs: 50 });
  const { client, transport } = await connect(server.url);
  await client.callTool({ name: 'file_exists', arguments: { path: 'x' } });
  while (server.sessions > 0) await new Promise((resolve) => setImmediate(resolve));
  expect(claims.released).toEqual(['claim-1']);
  const status = await new Promise<number>((resolve, reject) => {
    http.request({ host: '127.0.0.1', port: server.port, path: '/mcp', method: 'POST', agent: false, headers: { 'Mcp-Session-Id': transport.sessionId!, 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject).end(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
  });
  expect(status).toBe(404);
  await client.close();
});
