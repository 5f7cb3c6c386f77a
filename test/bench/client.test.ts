/**
 * The harness's client on top of the operator's: loopback enforcement, the count of its own
 * requests, and event streams that survive a watch the server ends. A plain loopback server
 * stands in for the API server; real ones are exercised by bench/smoke.sh.
 */
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import { BenchClient, WatchEventType } from '../../bench/client';
import { CLAIMS } from '../../bench/measure';
import { ApiClient, assertLoopback } from '../../tools/control-plane/api';

const COLLECTION = '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims';
const claim = (name: string, rv: string) => ({ metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv } });

let server: http.Server;
let url: string;
let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
const clients: ApiClient[] = [];

beforeEach(async () => {
  server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function bench(): BenchClient {
  const c = new BenchClient({ server: url, source: 'test' });
  clients.push(c);
  return c;
}

function send(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

test('only loopback servers, and the real-node range only while its bridge exists', () => {
  for (const ok of ['https://127.0.0.1:6443', 'https://127.8.9.10', 'http://localhost:1']) expect(() => assertLoopback(ok)).not.toThrow();
  const bridge = fs.existsSync('/sys/class/net/asb0');
  for (const range of ['https://198.18.0.1:6443', 'http://198.19.3.4']) {
    if (bridge) expect(() => assertLoopback(range)).not.toThrow();
    else expect(() => assertLoopback(range)).toThrow(/only loopback/);
  }
  for (const bad of ['https://10.0.0.1:6443', 'https://example.com', 'https://128.0.0.1', 'https://[::2]:1', 'https://198.20.0.1', 'https://198.17.255.1']) {
    expect(() => assertLoopback(bad)).toThrow(/only loopback/);
    expect(() => new BenchClient({ server: bad, source: 'test' })).toThrow(/only loopback/);
    expect(() => new ApiClient({ server: bad, source: 'test' })).toThrow(/only loopback/);
  }
});

test('request answers any status; call throws the server message; PATCH types are explicit', async () => {
  const seen: string[] = [];
  handler = (req, res) => {
    seen.push(`${req.method} ${req.headers['content-type'] ?? ''}`);
    if (req.url !== '/readyz') return send(res, 409, { kind: 'Status', message: 'already exists' });
    res.writeHead(500);
    res.end('etcd not ready');
  };
  const c = bench();
  await expect(c.request('GET', '/readyz')).resolves.toEqual({ status: 500, body: 'etcd not ready' });
  await expect(c.call('POST', COLLECTION, {})).rejects.toThrow(`POST ${COLLECTION} -> HTTP 409: already exists`);
  await c.request('PATCH', `${COLLECTION}/a`, [], { patchType: 'json' });
  await c.request('PATCH', `${COLLECTION}/a`, {});
  expect(seen.slice(2)).toEqual(['PATCH application/json-patch+json', 'PATCH application/merge-patch+json']);
});

test('stream: list as ADDED, then watch events; a watch the server ends resumes and is counted, as are requests', async () => {
  const watches: string[] = [];
  handler = (req, res) => {
    const u = new URL(req.url!, url);
    if (req.method === 'POST') return send(res, 201, claim('b', '4'));
    if (!u.searchParams.has('watch')) return send(res, 200, { kind: 'SandboxClaimList', metadata: { resourceVersion: '3' }, items: [claim('a', '2')] });
    watches.push(u.searchParams.get('resourceVersion')!);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (watches.length === 1) return res.end(`${JSON.stringify({ type: 'MODIFIED', object: claim('a', '5') })}\n`);
    res.write(`${JSON.stringify({ type: 'DELETED', object: claim('a', '6') })}\n`);
  };
  const c = bench();
  const events: string[] = [];
  const stream = c.stream(CLAIMS, 'ns', (type: WatchEventType, obj) => events.push(`${type} ${obj.metadata.name} ${obj.metadata.resourceVersion}`));
  await stream.ready;
  await c.call('POST', COLLECTION, claim('b', ''));
  for (let i = 0; i < 100 && events.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
  stream.close();
  // As informers do, a deletion hands over the last state seen of the object.
  expect(events).toEqual(['ADDED a 2', 'MODIFIED a 5', 'DELETED a 5']);
  expect(watches).toEqual(['3', '5']);
  expect(c.watchRestarts).toBe(1);
  expect(Object.fromEntries(c.issued)).toEqual({ 'LIST sandboxclaims': 1, 'WATCH sandboxclaims': 2, 'POST sandboxclaims': 1 });
});

test('stream: ready rejects when the first list fails, and nothing is retried', async () => {
  let requests = 0;
  handler = (_req, res) => {
    requests++;
    send(res, 403, { kind: 'Status', code: 403, reason: 'Forbidden', message: 'sandboxclaims is forbidden' });
  };
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    await expect(bench().stream(CLAIMS, 'ns', () => undefined).ready).rejects.toThrow(/the first list failed: .*sandboxclaims is forbidden/);
    await new Promise((r) => setTimeout(r, 700));
    expect(requests).toBe(1);
  } finally {
    stderr.mockRestore();
  }
});
