/**
 * SSRF refusals of the router against real Sandboxes and Pods: the router is assembled in-process
 * (Router, Resolver, AddressGuard and the operator's informers on the real control plane) so that
 * its one dial function can be injected — it records every address and throws on anything outside
 * 127.0.0.0/8, so no packet can leave loopback even if a guard were broken. Two claimed sandboxes
 * run the real runtime (pod runner); a third, bare Sandbox has a kwok Pod whose address the router
 * itself listens on.
 */
import * as http from 'http';
import * as net from 'net';
import { DataPlane, RUNTIME_PORT, send } from './data-plane';
import { RESOURCES, type Pod, type Sandbox } from '../../../operator/src/model';
import { ALLOW_ALL } from '../../../operator/src/router/auth';
import { AddressGuard } from '../../../operator/src/router/guard';
import { type Dial, Router } from '../../../operator/src/router/proxy';
import { POD_NAME_HASH_INDEX, podNameHashIndex, Resolver } from '../../../operator/src/router/resolve';
import { InformerFactory } from '../../../operator/src/runtime/informer-factory';
import { HttpKubeClient } from '../../../operator/src/runtime/kube-client';
import { SILENT_LOGGER } from '../../../operator/src/runtime/log';
import { SandboxLabels } from '../../../src/api/labels';
import { connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { waitFor } from '../../../tools/control-plane/kube';
import { sandboxManifest } from '../operator/sandbox-api';

const METADATA_IP = '169.254.169.254';
let dp: DataPlane;
let client: HttpKubeClient;
let informers: InformerFactory;
let resolver: Resolver;
let guard: AddressGuard;
let server: http.Server;
let router: Router;
let port: number;
const dialed: string[] = [];

/** The router's only way out: records every address, and refuses (throws) outside 127.0.0.0/8. */
const dial: Dial = (host, p) => {
  dialed.push(`${host}:${p}`);
  if (!/^127\./.test(host)) throw new Error(`the router tried to dial ${host}:${p}, outside loopback`);
  return net.connect({ host, port: p });
};
/** name → pod IP of the two runtime sandboxes and the kwok one. */
const ip: Record<'a' | 'b' | 'self', string> = { a: '', b: '', self: '' };
const names: Record<'a' | 'b' | 'self', string> = { a: '', b: '', self: 'router-self' };

beforeAll(async () => {
  dp = await DataPlane.start('dp-ssrf', 2);
  [names.a, names.b] = dp.sandboxes;
  await dp.api.call('POST', dp.ext.sandboxesPath, sandboxManifest(names.self));
  for (const key of ['a', 'b', 'self'] as const) ip[key] = (await dp.pod(names[key])).status.podIP;

  client = new HttpKubeClient({ connection: connectionFromKubeconfig(dp.kube.kubeconfig), userAgent: 'router-ssrf-test' });
  informers = new InformerFactory(client);
  const sandboxes = informers.forResource<Sandbox>(RESOURCES.sandboxes, { namespace: dp.ns });
  const pods = informers.forResource<Pod>(RESOURCES.pods, {
    namespace: dp.ns, labelSelector: SandboxLabels.SANDBOX_NAME_HASH, indexes: { [POD_NAME_HASH_INDEX]: podNameHashIndex },
  });
  resolver = new Resolver(sandboxes, pods);
  guard = new AddressGuard(['127.64.0.0/12']);
  router = new Router({
    resolver,
    guard,
    authorizer: ALLOW_ALL,
    log: SILENT_LOGGER,
    proxyTimeoutMs: 10_000,
    maxConnections: 100,
    maxConnectionsPerSandbox: 10,
    dial,
    cachesSynced: () => informers.hasSynced,
  });
  server = http.createServer();
  router.attach(server);
  // The router listens on the kwok sandbox's pod address: that sandbox points at the router itself.
  await new Promise<void>((resolve) => server.listen(0, ip.self, resolve));
  port = (server.address() as net.AddressInfo).port;
  guard.addOwnAddress(ip.self);
  informers.start();
  await waitFor(() => (['a', 'b', 'self'] as const).every((k) => 'ip' in resolver.resolve({ namespace: dp.ns, id: names[k] })), 30_000,
    'the router caches to hold the three Ready sandboxes');
}, 180_000);

afterAll(async () => {
  router?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  informers?.stop();
  client?.close();
  await dp?.stop();
});

afterEach(() => {
  // Belt and braces: the dial itself throws outside loopback; this fails the test that tried.
  expect(dialed.filter((d) => !d.startsWith('127.'))).toEqual([]);
});

function call(id: string, extra: Record<string, string> = {}) {
  return send(port, '/', { host: ip.self, headers: { 'X-Sandbox-ID': id, 'X-Sandbox-Namespace': dp.ns, ...extra } });
}

test('a named sandbox is reached at its own pod IP, and only there', async () => {
  dialed.length = 0;
  const res = await call(names.a, { 'X-Sandbox-Pod-IP': ip.a });
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toMatchObject({ status: 'ok' });
  expect(dialed).toEqual([`${ip.a}:${RUNTIME_PORT}`]);
});

test.each([
  ['the cloud metadata address', () => METADATA_IP],
  ['another sandbox\'s pod IP', () => ip.b],
  ['an address in the pod CIDR that is no pod of the sandbox', () => '127.64.255.254'],
  ['the router\'s own address', () => ip.self],
  ['loopback outside the pod CIDR', () => '127.0.0.1'],
])('X-Sandbox-Pod-IP set to %s is refused without dialing', async (_, hint) => {
  dialed.length = 0;
  const res = await call(names.a, { 'X-Sandbox-Pod-IP': hint() });
  expect(res.status).toBe(503);
  expect(JSON.parse(res.body).detail).toBe(`${hint()} is not a current pod IP of sandbox ${dp.ns}/${names.a}.`);
  expect(dialed).toEqual([]);
});

test('a sandbox whose pod IP is the router\'s own address is refused, even on the router\'s own port', async () => {
  dialed.length = 0;
  const res = await call(names.self, { 'X-Sandbox-Port': String(port) });
  expect(res.status).toBe(502);
  expect(JSON.parse(res.body).detail).toBe(`Could not connect to the backend sandbox: ${names.self}`);
  expect(dialed).toEqual([]);
});
