/**
 * The router's security with the real API server: the bundle's `router` command as a local process
 * with the flags of the bundle's router Deployment (--auth=kubernetes by default), running as the
 * install bundle's router ServiceAccount and RBAC, and callers holding real ServiceAccount tokens
 * (TokenRequest API). No token → 401; a token whose ServiceAccount may not `create`
 * `sandboxclaims/connect` on the claim (nor `sandboxes/connect` on the Sandbox) → 403, even with
 * read access to every claim and Sandbox of the namespace; the library's SandboxAccess grant → 200;
 * an unclaimed warm-pool member → 409 for everyone; a token minted for the router's audience works
 * through the router and not against the API server. The echo fixture in the sandbox proves that
 * Authorization, Cookie and X-Sandbox-* never reach it.
 */
import * as https from 'https';
import { Testing } from 'cdk8s';
import { DataPlane, ECHO_PORT, send } from './data-plane';
import { RouterRbac } from './router-rbac';
import { ObjectRef, SANDBOX_ROUTER_AUDIENCE, SandboxAccess } from '../../../src';
import { assertLoopback, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { OperatorProcess } from '../../../tools/shared/operator-process';
import { serviceAccountToken, whoAmI } from '../operator/bundle-rbac';

let dp: DataPlane;
let rbac: RouterRbac;
let router: OperatorProcess;
let port: number;
let sandbox: string;
let member: string;
const tokens: Record<'agent' | 'reader' | 'stranger' | 'admin', string> = { agent: '', reader: '', stranger: '', admin: '' };

beforeAll(async () => {
  dp = await DataPlane.start('dp-auth', 1);
  sandbox = dp.sandboxes[0];
  rbac = await RouterRbac.apply(dp.kube, dp.api, dp.ns);
  // As the bundle's Deployment runs it (default --auth=kubernetes), plus the local pod CIDR.
  router = await OperatorProcess.startRouter({ kubeconfig: rbac.kubeconfig, args: [...rbac.args, '--allowed-pod-cidrs=127.64.0.0/12'] });
  port = await router.port('proxy');
  const base = `/api/v1/namespaces/${dp.ns}`;
  const rbacBase = `/apis/rbac.authorization.k8s.io/v1/namespaces/${dp.ns}`;
  for (const name of Object.keys(tokens) as Array<keyof typeof tokens>) {
    await dp.api.call('POST', `${base}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
    tokens[name] = await serviceAccountToken(dp.api, dp.ns, name);
  }
  const chart = Testing.chart();
  // agent: the library's grant (claims, connect to them, router tokens for itself).
  new SandboxAccess(chart, 'agent', { metadata: { name: 'agent', namespace: dp.ns }, serviceAccounts: [ObjectRef.fromName('agent')] });
  const rules: Record<'reader' | 'stranger' | 'admin', object[]> = {
    // reader: everything read-only on claims and Sandboxes, namespace-wide; under the old rule that meant exec everywhere.
    reader: [
      { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch'] },
    ],
    // stranger: connect to a claim of another name only.
    stranger: [{ apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims/connect'], resourceNames: ['not-claim-0'], verbs: ['create'] }],
    // admin: connect to every Sandbox of the namespace.
    admin: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes/connect'], verbs: ['create'] }],
  };
  for (const [sa, granted] of Object.entries(rules)) {
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: sa }, rules: granted };
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: sa },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: dp.ns }],
    };
    await dp.api.call('POST', `${rbacBase}/roles`, role);
    await dp.api.call('POST', `${rbacBase}/rolebindings`, binding);
  }
  for (const o of Testing.synth(chart).filter((x) => x.metadata.name === 'agent')) {
    await dp.api.call('POST', `${rbacBase}/${o.kind === 'Role' ? 'roles' : 'rolebindings'}`, o);
  }
  // The pool refilled after the claim: its new member is claimed by nobody.
  member = await waitForUnclaimedMember();
}, 180_000);

async function waitForUnclaimedMember(): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const items = (await dp.api.call('GET', dp.ext.sandboxesPath)).items as any[];
    const found = items.find((s) => s.metadata.ownerReferences?.some((r: any) => r.controller && r.kind === 'SandboxWarmPool')
      && s.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    if (found) return found.metadata.name;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no Ready unclaimed pool member appeared');
}

afterAll(async () => {
  await router?.stop();
  await rbac?.remove();
  await dp?.stop();
});

function echo(extra: Record<string, string> = {}, id = sandbox) {
  return send(port, '/echo?q=1', { headers: { 'X-Sandbox-ID': id, 'X-Sandbox-Namespace': dp.ns, 'X-Sandbox-Port': String(ECHO_PORT), ...extra } });
}

test('the router runs as the bundle\'s router ServiceAccount, with the bundle\'s router rules', async () => {
  expect((await whoAmI(rbac.kubeconfig)).username).toBe(`system:serviceaccount:${dp.ns}:${rbac.serviceAccount}`);
  expect(rbac.rules.flatMap((r: any) => r.resources).sort()).toEqual(['pods', 'sandboxes', 'subjectaccessreviews', 'tokenreviews']);
});

test('no token, or one the API server does not know: 401', async () => {
  expect(await echo()).toMatchObject({ status: 401 });
  expect(await echo({ Authorization: 'Bearer not-a-real-token' })).toMatchObject({ status: 401 });
});

test('read access to every claim and Sandbox, or connect on another claim: 403', async () => {
  for (const who of ['reader', 'stranger'] as const) {
    const res = await echo({ Authorization: `Bearer ${tokens[who]}` });
    expect(res.status).toBe(403);
    expect(res.body).not.toContain('"url"');
  }
});

test('connect on the owning claim (the SandboxAccess grant), or on Sandboxes, gets through', async () => {
  expect((await echo({ Authorization: `Bearer ${tokens.agent}` })).status).toBe(200);
  expect((await echo({ Authorization: `Bearer ${tokens.admin}` })).status).toBe(200);
});

test('an unclaimed warm-pool member is refused (409) even to a caller who may connect to every Sandbox', async () => {
  const res = await echo({ Authorization: `Bearer ${tokens.admin}` }, member);
  expect(res.status).toBe(409);
  expect(JSON.parse(res.body).detail).toMatch(/unclaimed member of warm pool "pool"/);
  // Path routing would reach it the same way; the resolver refuses both, which the unit tests cover.
  expect((await echo({ Authorization: `Bearer ${tokens.agent}` }, member)).status).toBe(403);
});

test('a token minted for the router audience works through the router and is refused by the API server', async () => {
  const minted = await dp.api.call('POST', `/api/v1/namespaces/${dp.ns}/serviceaccounts/agent/token`, {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [SANDBOX_ROUTER_AUDIENCE], expirationSeconds: 600 },
  });
  const routerToken = minted.status.token as string;
  expect((await echo({ Authorization: `Bearer ${routerToken}` })).status).toBe(200);
  const api = await fetchApi(routerToken);
  expect(api).toBe(401);
  // Negative control: the account's own token is accepted by the API server.
  expect(await fetchApi(tokens.agent)).toBe(200);
});

/** The API server's status for GET /api with `token` (TLS to the loopback API server, its CA trusted). */
async function fetchApi(token: string): Promise<number> {
  const connection = connectionFromKubeconfig(dp.kube.kubeconfig);
  assertLoopback(connection.server);
  return new Promise((resolve, reject) => {
    const req = https.request(`${connection.server}/api`, { ca: connection.ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

test('an authorized ServiceAccount gets through, and no credential or routing header reaches the sandbox', async () => {
  const pod = await dp.pod(sandbox);
  const sb = await dp.api.call('GET', dp.sandboxPath(sandbox));
  const res = await echo({
    'Authorization': `Bearer ${tokens.agent}`,
    'Cookie': 'session=secret-cookie',
    'X-Sandbox-Pod-IP': pod.status.podIP,
    'X-Sandbox-UID': sb.metadata.uid,
    'X-Sandbox-Timeout': '30',
    'X-Custom': 'kept',
  });
  expect(res.status).toBe(200);
  const seen = JSON.parse(res.body);
  expect(seen).toMatchObject({ method: 'GET', url: '/echo?q=1' });
  expect(seen.headers['x-custom']).toBe('kept');
  const names = Object.keys(seen.headers);
  expect(names.filter((h) => h === 'authorization' || h === 'cookie' || h.startsWith('x-sandbox-'))).toEqual([]);
  expect(res.body).not.toContain(tokens.agent);
  expect(res.body).not.toContain('secret-cookie');
});
