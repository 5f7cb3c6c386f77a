/**
 * RouterTokens: which ServiceAccount it mints for, what it asks the API server, when it mints again,
 * and the errors that name the option. The API calls go to a recorder standing in for KubeApi; the
 * integration test (test/integration/sdk) runs it against the real API server and router.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SandboxClient } from '../src/client';
import { SandboxConfigError } from '../src/errors';
import type { KubeApi } from '../src/kube';
import { ROUTER_AUDIENCE, RouterTokens, serviceAccountOf } from '../src/router-token';

const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
const SA_TOKEN = jwt({ sub: 'system:serviceaccount:agents:runner', aud: ['https://kubernetes.default.svc'] });

function recorder(own: string | undefined, grantedSeconds?: number) {
  const calls: Array<{ path: string; body: any }> = [];
  const kube = {
    bearerToken: async () => own,
    create: async (url: string, body: any) => {
      calls.push({ path: url, body });
      return { spec: { expirationSeconds: grantedSeconds ?? body.spec.expirationSeconds }, status: { token: `minted-${calls.length}` } };
    },
  } as unknown as KubeApi;
  return { kube, calls };
}

test('serviceAccountOf reads the subject of a ServiceAccount token and nothing else', () => {
  expect(serviceAccountOf(SA_TOKEN)).toEqual({ namespace: 'agents', name: 'runner' });
  expect(serviceAccountOf(jwt({ sub: 'alice@example.com' }))).toBeUndefined();
  expect(serviceAccountOf('opaque')).toBeUndefined();
  expect(serviceAccountOf(undefined)).toBeUndefined();
});

test('mints for its own ServiceAccount, for the router audience, and again after 80% of the granted life', async () => {
  let now = 0;
  const { kube, calls } = recorder(SA_TOKEN, 1000);
  const tokens = new RouterTokens(kube, {}, () => now);
  const [a, b] = await Promise.all([tokens.token(), tokens.token()]);
  expect([a, b]).toEqual(['minted-1', 'minted-1']);
  expect(calls).toEqual([{
    path: '/api/v1/namespaces/agents/serviceaccounts/runner/token',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [ROUTER_AUDIENCE], expirationSeconds: 600 } },
  }]);
  now = 799_000;
  expect(await tokens.token()).toBe('minted-1');
  now = 801_000;
  expect(await tokens.token()).toBe('minted-2');
});

test('a kubeconfig that is not a ServiceAccount\'s, and bad options, are SandboxConfigErrors naming routerToken', async () => {
  await expect(new RouterTokens(recorder(jwt({ sub: 'alice' })).kube).token()).rejects.toMatchObject({ field: 'routerToken', message: expect.stringContaining('ServiceAccount') });
  expect(() => new RouterTokens(recorder(SA_TOKEN).kube, { expirationSeconds: 60 })).toThrow(SandboxConfigError);
  expect(() => new RouterTokens(recorder(SA_TOKEN).kube, { audience: ' ' })).toThrow(/routerToken.audience/);
  const kubeconfig = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-rt-')), 'config');
  fs.writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: c',
    'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]', 'users: [{name: u, user: {token: t}}]',
    'contexts: [{name: c, context: {cluster: c, user: u}}]',
  ].join('\n'));
  expect(() => new SandboxClient({ routerToken: true, token: 'x', kubeconfig })).toThrow(/routerToken: cannot be combined with token/);
});
