import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { ConfigError, fromKubeconfigFiles } from '../../src/runtime/kubeconfig';

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

test.each([
  [{ exec: { command: 'aws' } }, /users\[name="u"\]\.user\.exec is set, which this reader for the local tools does not run/],
  [{ 'auth-provider': { name: 'gcp' } }, /user\.auth-provider is set/],
])('unsupported auth is a clear error: %j', (user, message) => {
  expect(() => fromKubeconfigFiles([write('k', config(user))])).toThrow(message);
});

test('clear errors for a missing file, context or server', () => {
  expect(() => fromKubeconfigFiles([path.join(dir, 'nope')])).toThrow(ConfigError);
  expect(() => fromKubeconfigFiles([write('k', { ...config({}), 'current-context': 'gone' })])).toThrow(/current-context "gone" is not defined/);
  expect(() => fromKubeconfigFiles([write('k2', { ...config({}), 'current-context': '' })])).toThrow(/sets no current-context/);
});

