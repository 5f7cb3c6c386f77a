import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { ConfigError, fromKubeconfigFiles, inCluster, loadConnection } from '../../src/runtime/kubeconfig';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
});

function write(name: string, doc: object): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, stringify(doc));
  return file;
}

const config = (user: object, extra: object = {}) => ({
  'apiVersion': 'v1',
  'kind': 'Config',
  'current-context': 'dev',
  'clusters': [{ name: 'c', cluster: { 'server': 'https://127.0.0.1:6443', 'certificate-authority-data': b64('CA') } }],
  'users': [{ name: 'u', user }],
  'contexts': [{ name: 'dev', context: { cluster: 'c', user: 'u', namespace: 'team' } }],
  ...extra,
});

test('client certificate from embedded data', () => {
  const c = fromKubeconfigFiles([write('k', config({ 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') }))]);
  expect(c.server).toBe('https://127.0.0.1:6443');
  expect([c.ca?.toString(), c.cert?.toString(), c.key?.toString(), c.namespace]).toEqual(['CA', 'CERT', 'KEY', 'team']);
  expect(c.source).toMatch(/context dev/);
});

test('files and tokenFile resolve relative to the kubeconfig', () => {
  fs.writeFileSync(path.join(dir, 'cert.pem'), 'CERT-FILE');
  const c = fromKubeconfigFiles([write('k', config({ 'client-certificate': 'cert.pem', 'client-key': 'cert.pem', 'tokenFile': 'tok' }))]);
  expect(c.cert?.toString()).toBe('CERT-FILE');
  expect(c.tokenFile).toBe(path.join(dir, 'tok'));
});

test('KUBECONFIG lists merge: first definition and first current-context win; missing files are skipped', () => {
  const first = write('a', { 'current-context': 'dev', 'users': [{ name: 'u', user: { token: 'first' } }] });
  const second = write('b', config({ token: 'second' }, { 'current-context': 'other' }));
  const c = loadConnection('', { KUBECONFIG: [path.join(dir, 'missing'), first, second].join(path.delimiter) });
  expect(c.token).toBe('first');
  expect(c.server).toBe('https://127.0.0.1:6443');
});

test('the --kubeconfig flag wins over KUBECONFIG', () => {
  const flag = write('flag', config({ token: 'flag' }));
  expect(loadConnection(flag, { KUBECONFIG: '/nonexistent' }).token).toBe('flag');
});

test.each([
  [{ exec: { command: 'aws' } }, /authenticates with "exec", which the operator does not support/],
  [{ 'auth-provider': { name: 'gcp' } }, /"auth-provider"/],
])('unsupported auth is a clear error: %j', (user, message) => {
  expect(() => fromKubeconfigFiles([write('k', config(user))])).toThrow(message);
});

test('clear errors for a missing file, context or server', () => {
  expect(() => fromKubeconfigFiles([path.join(dir, 'nope')])).toThrow(ConfigError);
  expect(() => fromKubeconfigFiles([write('k', { ...config({}), 'current-context': 'gone' })])).toThrow(/current-context "gone" is not defined/);
  expect(() => fromKubeconfigFiles([write('k2', { ...config({}), 'current-context': '' })])).toThrow(/sets no current-context/);
});

test('in-cluster: service host and port, token file, CA and namespace', () => {
  fs.writeFileSync(path.join(dir, 'token'), 't');
  fs.writeFileSync(path.join(dir, 'ca.crt'), 'CA');
  fs.writeFileSync(path.join(dir, 'namespace'), 'agent-sandbox-system\n');
  const c = inCluster({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir);
  expect(c).toMatchObject({ server: 'https://[fd00::1]:443', tokenFile: path.join(dir, 'token'), namespace: 'agent-sandbox-system' });
  expect(() => inCluster({}, dir)).toThrow(/pass --kubeconfig=<file>, set KUBECONFIG, or run in a pod/);
  expect(() => inCluster({ KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' }, path.join(dir, 'none'))).toThrow(/automountServiceAccountToken/);
});
