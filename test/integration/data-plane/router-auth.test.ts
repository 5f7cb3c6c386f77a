/**
 * The router's security with the real API server: the bundle's `router` command as a local process
 * with the flags of the bundle's router Deployment (--auth=kubernetes by default), running as the
 * install bundle's router ServiceAccount and RBAC, and callers holding real ServiceAccount tokens
 * (TokenRequest API). No token → 401, a token whose
 * ServiceAccount may not `get` the sandbox → 403, an authorized one → 200 — and the echo fixture in
 * the sandbox proves that Authorization, Cookie and X-Sandbox-* never reach it.
 */
import { DataPlane, ECHO_PORT, send } from './data-plane';
import { RouterRbac } from './router-rbac';
import { serviceAccountToken, whoAmI } from '../operator/bundle-rbac';
import { OperatorProcess } from '../operator/operator-process';

let dp: DataPlane;
let rbac: RouterRbac;
let router: OperatorProcess;
let port: number;
let sandbox: string;
const tokens: Record<'reader' | 'stranger', string> = { reader: '', stranger: '' };

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
  // reader may get this one sandbox; stranger may get only a sandbox of another name.
  const grant = (sa: string, resourceName: string) => [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: sa }, rules: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], resourceNames: [resourceName], verbs: ['get'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: sa },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: dp.ns }],
    },
  ];
  for (const [sa, resourceName] of [['reader', sandbox], ['stranger', `not-${sandbox}`]]) {
    const [role, binding] = grant(sa, resourceName);
    await dp.api.call('POST', `${rbacBase}/roles`, role);
    await dp.api.call('POST', `${rbacBase}/rolebindings`, binding);
  }
}, 180_000);

afterAll(async () => {
  await router?.stop();
  await rbac?.remove();
  await dp?.stop();
});

function echo(extra: Record<string, string> = {}) {
  return send(port, '/echo?q=1', { headers: { 'X-Sandbox-ID': sandbox, 'X-Sandbox-Namespace': dp.ns, 'X-Sandbox-Port': String(ECHO_PORT), ...extra } });
}

test('the router runs as the bundle\'s router ServiceAccount, with the bundle\'s router rules', async () => {
  expect((await whoAmI(rbac.kubeconfig)).username).toBe(`system:serviceaccount:${dp.ns}:${rbac.serviceAccount}`);
  expect(rbac.rules.flatMap((r: any) => r.resources).sort()).toEqual(['pods', 'sandboxes', 'subjectaccessreviews', 'tokenreviews']);
});

test('no token, or one the API server does not know: 401', async () => {
  expect(await echo()).toMatchObject({ status: 401 });
  expect(await echo({ Authorization: 'Bearer not-a-real-token' })).toMatchObject({ status: 401 });
});

test('a real token whose ServiceAccount may not get the sandbox: 403', async () => {
  const res = await echo({ Authorization: `Bearer ${tokens.stranger}` });
  expect(res.status).toBe(403);
  expect(res.body).not.toContain('"url"');
});

test('an authorized ServiceAccount gets through, and no credential or routing header reaches the sandbox', async () => {
  const pod = await dp.pod(sandbox);
  const sb = await dp.api.call('GET', dp.sandboxPath(sandbox));
  const res = await echo({
    'Authorization': `Bearer ${tokens.reader}`,
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
  expect(res.body).not.toContain(tokens.reader);
  expect(res.body).not.toContain('secret-cookie');
});
