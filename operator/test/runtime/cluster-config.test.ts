import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { LoadConnectionOptions, loadClusterConnection } from '../../src/runtime/cluster-config';
import { ConfigError } from '../../src/runtime/kubeconfig';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const V1 = 'client.authentication.k8s.io/v1';
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-config-'));
});

function write(name: string, doc: object): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, stringify(doc));
  return file;
}

const config = (user: object, cluster: object = {}, extra: object = {}) => ({
  'apiVersion': 'v1',
  'kind': 'Config',
  'current-context': 'dev',
  'clusters': [{ name: 'c', cluster: { 'server': 'https://127.0.0.1:6443', 'certificate-authority-data': b64('CA'), ...cluster } }],
  'users': [{ name: 'u', user }],
  'contexts': [{ name: 'dev', context: { cluster: 'c', user: 'u', namespace: 'team' } }],
  ...extra,
});

/** Nothing from the machine running the tests: no KUBECONFIG, no home, no pod. */
const isolated = (options: LoadConnectionOptions): LoadConnectionOptions => ({ env: {}, home: null, serviceAccountDir: path.join(dir, 'none'), ...options });
const load = (options: LoadConnectionOptions) => loadClusterConnection(isolated(options));

test('a token user: server, CA, namespace and the bearer token; a 401 is not worth asking again', async () => {
  const c = await load({ kubeconfig: write('k', config({ token: 'secret' })) });
  expect(c).toMatchObject({ server: 'https://127.0.0.1:6443', namespace: 'team', insecureSkipTlsVerify: false });
  expect(c.ca?.toString()).toBe('CA');
  const auth = await c.credentials!.current();
  expect(auth.headers).toEqual({ authorization: 'Bearer secret' });
  expect(c.credentials!.rejected(auth)).toBe(false);
  expect(c.source).toMatch(/context dev, token/);
});

test('client certificate files relative to the kubeconfig, impersonation, tls-server-name, insecure-skip-tls-verify', async () => {
  fs.writeFileSync(path.join(dir, 'cert.pem'), 'CERT');
  fs.writeFileSync(path.join(dir, 'key.pem'), 'KEY');
  fs.writeFileSync(path.join(dir, 'ca.pem'), 'CA-FILE');
  const c = await load({
    kubeconfig: write('k', config({ 'client-certificate': 'cert.pem', 'client-key': 'key.pem', 'as': 'jane' },
      { 'certificate-authority-data': undefined, 'certificate-authority': 'ca.pem', 'tls-server-name': 'kubernetes', 'insecure-skip-tls-verify': true })),
  });
  const auth = await c.credentials!.current();
  expect([String(auth.cert), String(auth.key)]).toEqual(['CERT', 'KEY']);
  expect(auth.headers).toEqual({ 'impersonate-user': 'jane' });
  expect([c.ca?.toString(), c.tlsServerName, c.insecureSkipTlsVerify]).toEqual(['CA-FILE', 'kubernetes', true]);
  expect(c.source).toMatch(/client certificate/);
});

test('basic auth', async () => {
  const c = await load({ kubeconfig: write('k', config({ username: 'admin', password: 'pw' })) });
  expect((await c.credentials!.current()).headers).toEqual({ authorization: `Basic ${b64('admin:pw')}` });
});

test('a server URL keeps its path; proxy-url is passed on', async () => {
  const c = await load({ kubeconfig: write('k', config({ token: 't' }, { 'server': 'https://rancher.example/k8s/clusters/c-abc', 'proxy-url': 'http://proxy:3128' })) });
  expect(c.server).toBe('https://rancher.example/k8s/clusters/c-abc');
  expect(c.proxyUrl).toBe('http://proxy:3128');
});

test('tokenFile (which client-node does not read) is relative to the kubeconfig and re-read', async () => {
  fs.writeFileSync(path.join(dir, 'tok'), 'from-file\n');
  const c = await load({ kubeconfig: write('k', config({ tokenFile: 'tok' })) });
  expect((await c.credentials!.current()).headers).toEqual({ authorization: 'Bearer from-file' });
  expect(c.source).toMatch(/token file .*tok \(re-read every 60 s\)/);
});

test('an exec plugin: run on first use with the cluster info, again after a 401; a relative command is relative to the kubeconfig', async () => {
  const calls = path.join(dir, 'calls');
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.writeFileSync(path.join(dir, 'bin', 'plugin.js'), `#!${process.execPath}
    require('fs').appendFileSync(${JSON.stringify(calls)}, process.env.KUBERNETES_EXEC_INFO + '\\n');
    const n = require('fs').readFileSync(${JSON.stringify(calls)}, 'utf8').trim().split('\\n').length;
    process.stdout.write(JSON.stringify({ apiVersion: '${V1}', kind: 'ExecCredential', status: { token: 'exec-' + n } }));`, { mode: 0o755 });
  const kubeconfig = write('k', config({ as: 'jane', exec: { apiVersion: V1, command: './bin/plugin.js', provideClusterInfo: true } }));
  const c = await load({ kubeconfig });
  expect(fs.existsSync(calls)).toBe(false); // not at load: start-up stays fast
  const first = await c.credentials!.current();
  expect(first.headers).toEqual({ 'impersonate-user': 'jane', 'authorization': 'Bearer exec-1' });
  expect(await c.credentials!.current()).toBe(first);
  expect(c.credentials!.rejected(first)).toBe(true);
  expect((await c.credentials!.current()).headers.authorization).toBe('Bearer exec-2');
  const info = JSON.parse(fs.readFileSync(calls, 'utf8').split('\n')[0]);
  expect(info.spec).toEqual({ interactive: false, cluster: { 'server': 'https://127.0.0.1:6443', 'certificate-authority-data': b64('CA') } });
  expect(c.source).toMatch(/exec plugin \.\/bin\/plugin\.js/);
});

test.each([
  [{ exec: { command: 'aws', apiVersion: V1, interactiveMode: 'Always' } }, /users\[name="u"\]\.user\.exec\.interactiveMode is Always, but the operator runs without a terminal/],
  [{ exec: { command: 'aws' } }, /users\[name="u"\]\.user\.exec\.apiVersion is not set: set it to client.authentication.k8s.io\/v1/],
  [{ 'auth-provider': { name: 'keystone' } },
    /users\[name="u"\]\.user\.auth-provider\.name is "keystone", which the operator cannot run: use oidc, gcp, azure, or better an exec credential plugin in users\[name="u"\]\.user\.exec/],
])('auth the operator cannot use fails at load, naming the field and the fix: %j', async (user, message) => {
  await expect(load({ kubeconfig: write('k', config(user)) })).rejects.toThrow(message);
  await expect(load({ kubeconfig: write('k', config(user)) })).rejects.toBeInstanceOf(ConfigError);
});

test('an oidc auth provider is asked through client-node: its id-token is the bearer token', async () => {
  // An id-token that expires in 2100 needs no refresh, so no issuer is contacted.
  const jwt = [b64('{"alg":"none"}'), b64(JSON.stringify({ exp: 4102444800 })), ''].join('.').replace(/=/g, '');
  const c = await load({ kubeconfig: write('k', config({ 'auth-provider': { name: 'oidc', config: { 'id-token': jwt, 'client-id': 'k', 'idp-issuer-url': 'https://issuer.invalid' } } })) });
  expect((await c.credentials!.current()).headers.authorization).toBe(`Bearer ${jwt}`);
  expect(c.source).toMatch(/auth provider oidc/);
});

test('KUBECONFIG lists merge like kubectl: first definition and first current-context win; missing files are skipped', async () => {
  const first = write('a', { 'current-context': 'dev', 'users': [{ name: 'u', user: { token: 'first' } }] });
  const second = write('b', config({ token: 'second' }, {}, { 'current-context': 'other' }));
  const c = await load({ env: { KUBECONFIG: [path.join(dir, 'missing'), first, second].join(path.delimiter) } });
  expect((await c.credentials!.current()).headers.authorization).toBe('Bearer first');
  expect(c.server).toBe('https://127.0.0.1:6443');
});

test('--kubeconfig wins over KUBECONFIG; the context option over current-context', async () => {
  const flag = write('flag', config({ token: 'flag' }, {}, {
    contexts: [{ name: 'dev', context: { cluster: 'c', user: 'u' } }, { name: 'prod', context: { cluster: 'c', user: 'u', namespace: 'prod' } }],
  }));
  expect((await load({ kubeconfig: flag, env: { KUBECONFIG: '/nonexistent' } })).namespace).toBeUndefined();
  expect((await load({ kubeconfig: flag, context: 'prod' })).namespace).toBe('prod');
  await expect(load({ kubeconfig: flag, context: 'staging' })).rejects.toThrow(/context "staging" is not defined \(contexts: dev, prod\)/);
});

test('without flag or KUBECONFIG: the pod\'s service account, then ~/.kube/config', async () => {
  const sa = path.join(dir, 'sa');
  fs.mkdirSync(sa);
  fs.writeFileSync(path.join(sa, 'token'), 'pod-token');
  fs.writeFileSync(path.join(sa, 'ca.crt'), 'POD-CA');
  fs.writeFileSync(path.join(sa, 'namespace'), 'agent-sandbox-system\n');
  write('home/.kube/config', config({ token: 'home' }));
  const pod = await loadClusterConnection({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa, home: path.join(dir, 'home') });
  expect(pod).toMatchObject({ server: 'https://[fd00::1]:443', namespace: 'agent-sandbox-system' });
  expect(pod.ca?.toString()).toBe('POD-CA');
  expect((await pod.credentials!.current()).headers.authorization).toBe('Bearer pod-token');
  const home = await loadClusterConnection({ env: {}, serviceAccountDir: sa, home: path.join(dir, 'home') });
  expect((await home.credentials!.current()).headers.authorization).toBe('Bearer home');
  await expect(load({})).rejects.toThrow(/pass --kubeconfig=<file>, set KUBECONFIG, write ~\/.kube\/config, or run in a pod/);
  await expect(load({ env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' } })).rejects.toThrow(/automountServiceAccountToken/);
});

test('clear errors for a missing file, context, cluster or user', async () => {
  await expect(load({ kubeconfig: path.join(dir, 'nope') })).rejects.toThrow(/cannot read kubeconfig .*nope/);
  await expect(load({ kubeconfig: write('k1', { ...config({}), 'current-context': '' }) })).rejects.toThrow(/sets no current-context/);
  await expect(load({ kubeconfig: write('k2', { ...config({}), contexts: [{ name: 'dev', context: { cluster: 'gone', user: 'u' } }] }) }))
    .rejects.toThrow(/contexts\[name="dev"\]\.context\.cluster is "gone", but no clusters\[\] entry has that name/);
  await expect(load({ kubeconfig: write('k3', { ...config({}), contexts: [{ name: 'dev', context: { cluster: 'c', user: 'nobody' } }] }) }))
    .rejects.toThrow(/contexts\[name="dev"\]\.context\.user is "nobody", but no users\[\] entry has that name/);
  await expect(load({ kubeconfig: write('k4', { ...config({}), clusters: [{ name: 'c', cluster: {} }] }) })).rejects.toThrow(/clusters\[0\]\.cluster\.server is missing/);
});
