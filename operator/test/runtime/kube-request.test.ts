import { apiErrorFrom, apiErrorFromStatus, deleteBody, resourcePath, serverUrl, withQuery } from '../../src/runtime/kube-request';
import { ResourceType } from '../../src/runtime/types';

const core = (resource: string, namespaced = true): ResourceType => ({ group: '', version: 'v1', resource, namespaced });
const CLAIMS: ResourceType = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', resource: 'sandboxclaims', namespaced: true };

test.each([
  [core('pods'), 'ns', undefined, undefined, '/api/v1/namespaces/ns/pods'],
  [core('pods'), undefined, undefined, undefined, '/api/v1/pods'],
  [core('pods'), 'ns', 'p', 'status', '/api/v1/namespaces/ns/pods/p/status'],
  [core('nodes', false), 'ignored', 'n1', undefined, '/api/v1/nodes/n1'],
  [CLAIMS, 'ns', 'c', undefined, '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims/c'],
  [CLAIMS, 'ns', 'a b', undefined, '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims/a%20b'],
])('resourcePath(%j, %s, %s, %s)', (type, ns, name, sub, expected) => {
  expect(resourcePath(type, ns, name, sub)).toBe(expected);
});

test('a subresource needs a name', () => {
  expect(() => resourcePath(core('pods'), 'ns', undefined, 'status')).toThrow(/needs an object name/);
});

test('a name, namespace or subresource of . or .. is refused: the URL would resolve it to another path', () => {
  expect(() => resourcePath(core('pods'), 'ns', '..')).toThrow('".." is not a valid name for pods');
  expect(() => resourcePath(core('pods'), '.', 'p')).toThrow('"." is not a valid namespace for pods');
  expect(() => resourcePath(core('pods'), 'ns', 'p', '..')).toThrow('".." is not a valid subresource for pods');
  expect(resourcePath(core('pods'), 'ns', 'a..b')).toBe('/api/v1/namespaces/ns/pods/a..b');
});

test('withQuery drops undefined and empty values', () => {
  expect(withQuery('/p', { a: undefined, b: '', c: 0, d: 'x y' })).toBe('/p?c=0&d=x+y');
  expect(withQuery('/p', {})).toBe('/p');
});

test('deleteBody', () => {
  expect(deleteBody()).toBeUndefined();
  expect(deleteBody({ propagationPolicy: 'Orphan' })).toEqual({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: undefined, propagationPolicy: 'Orphan' });
});

test('apiErrorFrom: Status bodies keep their reason; other bodies get one from the code', () => {
  const gone = apiErrorFrom(410, JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old' }), 'GET /x');
  expect([gone.gone, gone.reason, gone.message]).toEqual([true, 'Expired', 'too old']);
  const invalid = apiErrorFrom(422, '', 'POST /x');
  expect([invalid.invalid, invalid.reason, invalid.message]).toEqual([true, 'Invalid', 'POST /x: HTTP 422']);
  const fromEvent = apiErrorFromStatus({ code: 410, reason: 'Gone', message: 'm' }, 'watch');
  expect([fromEvent.statusCode, fromEvent.gone]).toEqual([410, true]);
  expect(apiErrorFromStatus(undefined, 'watch').statusCode).toBe(500);
});

test.each([
  ['https://api.example:6443', '/api/v1/pods?watch=1', 'https://api.example:6443/api/v1/pods?watch=1'],
  ['https://api.example:6443/', '/api/v1/pods', 'https://api.example:6443/api/v1/pods'],
  ['https://rancher.example/k8s/clusters/c-abc', '/apis/agents.x-k8s.io/v1beta1/sandboxes?watch=1&resourceVersion=5',
    'https://rancher.example/k8s/clusters/c-abc/apis/agents.x-k8s.io/v1beta1/sandboxes?watch=1&resourceVersion=5'],
  ['https://rancher.example/k8s/clusters/c-abc/', '/api/v1/namespaces/a%2Fb/pods', 'https://rancher.example/k8s/clusters/c-abc/api/v1/namespaces/a%2Fb/pods'],
  ['http://127.0.0.1:8001/proxy//', '/version', 'http://127.0.0.1:8001/proxy/version'],
])('serverUrl keeps the server URL\'s path: %s + %s', (server, path, expected) => {
  expect(serverUrl(new URL(server), path).href).toBe(expected);
});

test('serverUrl refuses what is not a path on the server', () => {
  const server = new URL('https://rancher.example/k8s/clusters/c-abc');
  for (const path of ['https://evil.example/api', '//evil.example/api', 'api/v1/pods']) {
    expect(() => serverUrl(server, path)).toThrow(/is not a path on the API server/);
  }
});
