/**
 * The operator connects like every Kubernetes client, against the real local control plane: an
 * exec credential plugin (run again when its ExecCredential expires and when the API server
 * refuses what it gave), a server URL with a path (a loopback reverse proxy serving the API server
 * under /k8s/clusters/c-abc, watches included), and proxy-url through a loopback HTTP CONNECT proxy.
 * The operator runs as the install bundle's ServiceAccount; the credential is a real token of it.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as https from 'https';
import type { AddressInfo } from 'net';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { stringify as toYaml } from 'yaml';
import { BundleRbac, serviceAccountToken } from './bundle-rbac';
import { SandboxApi, deleteSandboxes, sandboxManifest } from './sandbox-api';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube } from '../../../tools/control-plane/kube';
import { OPERATOR_BUNDLE, OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const admin = connectionFromKubeconfig(kube.kubeconfig);
const api = new ApiClient(admin);
let ns: string;
let sbx: SandboxApi;
let rbac: BundleRbac;
let token: string;
let dir: string;
const processes: OperatorProcess[] = [];
const servers: net.Server[] = [];

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('credentials');
  sbx = new SandboxApi(api, ns);
  rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: false });
  token = await serviceAccountToken(api, ns, rbac.serviceAccountName);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'credentials-'));
}, 240_000);

afterEach(async () => {
  for (const op of processes.splice(0)) {
    const code = await op.stop();
    // eslint-disable-next-line no-console
    console.log(`operator log: ${op.logFile} (exit ${code}, ${op.errors().length} error lines)`);
  }
  for (const server of servers.splice(0)) {
    (server as http.Server).closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
});

afterAll(async () => {
  await rbac?.remove();
  if (ns) {
    await deleteSandboxes(api, ns);
    await kube.deleteNamespace(ns);
  }
});

/** A kubeconfig with one cluster, one user and the current context on them. */
function writeKubeconfig(name: string, cluster: object, user: object): string {
  const file = path.join(dir, `${name}.kubeconfig`);
  fs.writeFileSync(file, toYaml({
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': [{ name: 'cp', cluster }],
    'users': [{ name: 'sa', user }],
    'contexts': [{ name: 'ctx', context: { cluster: 'cp', user: 'sa', namespace: ns } }],
    'current-context': 'ctx',
  }), { mode: 0o600 });
  return file;
}

const clusterOf = (server: string, extra: object = {}) => ({ 'server': server, 'certificate-authority-data': admin.ca!.toString('base64'), ...extra });

async function startOperator(kubeconfig: string): Promise<OperatorProcess> {
  const op = await OperatorProcess.start({ kubeconfig });
  processes.push(op);
  return op;
}

async function listen(server: net.Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test('exec plugin: its token authenticates; a refused credential and an expired one make the operator run it again', async () => {
  const plugin = path.join(dir, 'plugin.js');
  const calls = path.join(dir, 'plugin-calls');
  const tokenFile = path.join(dir, 'sa-token');
  fs.writeFileSync(tokenFile, token, { mode: 0o600 });
  // Call 1 answers a token the API server refuses (no expiry: valid until a 401), so the operator
  // only gets its caches synced if a 401 makes it run the plugin again. Later calls answer
  // the ServiceAccount's real token, said to expire 4 s later. Each call appends KUBERNETES_EXEC_INFO.
  fs.writeFileSync(plugin, `
const fs = require('fs');
fs.appendFileSync(process.env.CALLS_FILE, process.env.KUBERNETES_EXEC_INFO + '\\n');
const n = fs.readFileSync(process.env.CALLS_FILE, 'utf8').trim().split('\\n').length;
const status = n === 1
  ? { token: 'refused-by-the-api-server' }
  : { token: fs.readFileSync(process.env.TOKEN_FILE, 'utf8'), expirationTimestamp: new Date(Date.now() + 4000).toISOString() };
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }));
`);
  const kubeconfig = writeKubeconfig('exec', clusterOf(admin.server), {
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [plugin],
      env: [{ name: 'CALLS_FILE', value: calls }, { name: 'TOKEN_FILE', value: tokenFile }],
      interactiveMode: 'Never',
      provideClusterInfo: true,
    },
  });
  const callCount = () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').trim().split('\n').length : 0);

  const op = await startOperator(kubeconfig);
  expect(callCount()).toBeGreaterThanOrEqual(2); // the refused token, then a good one
  await sbx.createAndWaitReady(sandboxManifest('exec-1'));

  // The credential expires 4 s after each call: the operator must run the plugin again to keep working.
  const before = callCount();
  await new Promise((resolve) => setTimeout(resolve, 5000));
  await sbx.createAndWaitReady(sandboxManifest('exec-2'));
  expect(callCount()).toBeGreaterThan(before);
  expect(op.alive).toBe(true);

  const info = JSON.parse(fs.readFileSync(calls, 'utf8').split('\n')[0]);
  expect(info).toEqual({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: { interactive: false, cluster: { 'server': admin.server, 'certificate-authority-data': admin.ca!.toString('base64') } },
  });
});

test('a server URL with a path: every request and watch goes under it (the router too)', async () => {
  const prefix = '/k8s/clusters/c-abc';
  const upstream = new URL(admin.server);
  const seen: string[] = [];
  // A loopback reverse proxy: the API server under the prefix, 404 for anything else.
  const proxy = http.createServer((req, res) => {
    const url = req.url ?? '';
    seen.push(url);
    if (!url.startsWith(`${prefix}/`)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not under ${prefix}\n`);
      return;
    }
    const headers = { ...req.headers, host: upstream.host };
    const forward = https.request({
      host: upstream.hostname, port: upstream.port, path: url.slice(prefix.length), method: req.method, headers, ca: admin.ca,
    }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  const port = await listen(proxy);
  const kubeconfig = writeKubeconfig('path', { server: `http://127.0.0.1:${port}${prefix}` }, { token });

  await startOperator(kubeconfig);
  await sbx.createAndWaitReady(sandboxManifest('path-1'));
  const router = await OperatorProcess.startRouter({ kubeconfig, args: ['--auth=none', `--namespace=${ns}`] });
  processes.push(router);

  expect(seen.filter((u) => !u.startsWith(`${prefix}/`))).toEqual([]);
  expect(seen.some((u) => u.startsWith(`${prefix}/apis/agents.x-k8s.io/v1beta1/sandboxes?`) && u.includes('watch=1'))).toBe(true);
  expect(seen.some((u) => u.startsWith(`${prefix}/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?`) && u.includes('watch=1'))).toBe(true);
  expect(seen.some((u) => u.startsWith(`${prefix}/api/v1/namespaces/${ns}/pods`) && !u.includes('watch=1'))).toBe(true);
});

test('proxy-url: everything goes through an HTTP CONNECT tunnel, TLS to the API server end to end', async () => {
  const tunnels: string[] = [];
  const proxy = http.createServer((_req, res) => res.writeHead(405).end('CONNECT only\n'));
  proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    const [host, targetPort] = (req.url ?? '').split(':');
    const target = net.connect(Number(targetPort), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      target.write(head);
      target.pipe(client);
      client.pipe(target);
    });
    target.on('error', () => client.destroy());
    client.on('error', () => target.destroy());
  });
  const port = await listen(proxy);
  const kubeconfig = writeKubeconfig('proxy', clusterOf(admin.server, { 'proxy-url': `http://127.0.0.1:${port}` }), { token });

  await startOperator(kubeconfig);
  await sbx.createAndWaitReady(sandboxManifest('proxied-1'));
  const upstream = new URL(admin.server);
  expect(tunnels.length).toBeGreaterThan(0);
  expect(new Set(tunnels)).toEqual(new Set([`${upstream.hostname}:${upstream.port}`]));
});

test('an exec plugin the operator cannot run stops it at start with the field and the fix', () => {
  const kubeconfig = writeKubeconfig('interactive', clusterOf(admin.server), {
    exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'some-login', interactiveMode: 'Always' },
  });
  const run = spawnSync(process.execPath, [OPERATOR_BUNDLE, 'controller', `--kubeconfig=${kubeconfig}`], { encoding: 'utf8', timeout: 30_000 });
  expect(run.status).toBe(1);
  expect(run.stderr).toMatch(
    /^agent-sandbox-operator controller: kubeconfig .*interactive\.kubeconfig: users\[name="sa"\]\.user\.exec\.interactiveMode is Always, but the operator runs without a terminal: set it to IfAvailable or Never/);
});
