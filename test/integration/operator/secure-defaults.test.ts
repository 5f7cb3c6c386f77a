/**
 * The operator's secure defaults on a real API server, under the bundle's RBAC: a warm pool's
 * member of a template written without any securityContext gets the hardening the constructs write
 * (and its Pod does), a template's opt-out annotation and explicit values win, and a bare Sandbox's
 * Pod gets no service-account token unless the Sandbox asks for one.
 */
import { withoutAdmissionPolicies } from './admission-policies';
import { BundleRbac } from './bundle-rbac';
import { ExtensionsApi, poolManifest, templateManifest } from './extensions-api';
import { deleteSandboxes, sandboxManifest } from './sandbox-api';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
let ext: ExtensionsApi;
let rbac: BundleRbac;
let op: OperatorProcess;

const HARDENED_POD = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
const HARDENED_CONTAINER = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('secure-defaults');
  // The opt-out test writes a privilege-escalating template on purpose: it is about the operator's
  // defaults, which the bundle's admission policy (left by another file) would refuse first.
  await withoutAdmissionPolicies(api, ns);
  ext = new ExtensionsApi(api, ns);
  rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: true });
  op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: ['--extensions=true', '--leader-elect=false'] });
}, 240_000);

afterAll(async () => {
  const code = await op?.stop();
  // eslint-disable-next-line no-console
  console.log(`operator log: ${op?.logFile} (exit ${code}, ${op?.errors().length} error lines)`);
  if (ns) {
    await api.request('DELETE', ext.path('sandboxwarmpools'));
    await deleteSandboxes(api, ns);
    await kube.deleteNamespace(ns);
  }
  await rbac?.remove();
  api.close();
}, 120_000);

const pod = (name: string) => waitFor(async () => {
  const res = await api.request<any>('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
  return res.status === 200 ? res.body : undefined;
}, 60_000, `Pod ${name}`);

async function member(pool: string): Promise<any> {
  return waitFor(async () => (await ext.poolMembers(pool))[0], 60_000, `a member of pool ${pool}`);
}

test('a template without securityContext: its warm member and that member\'s Pod get the constructs\' hardening', async () => {
  await ext.create('sandboxtemplates', templateManifest('plain'));
  await ext.create('sandboxwarmpools', poolManifest('plain', 'plain', 1));
  const sandbox = await member('plain');
  const spec = sandbox.spec.podTemplate.spec;
  expect(spec.securityContext).toEqual(HARDENED_POD);
  expect(spec.containers[0].securityContext).toEqual(HARDENED_CONTAINER);
  expect(spec.automountServiceAccountToken).toBe(false);
  const p = await pod(sandbox.metadata.name);
  expect(p.spec.securityContext).toMatchObject(HARDENED_POD);
  expect(p.spec.containers[0].securityContext).toEqual(HARDENED_CONTAINER);
  expect(p.spec.automountServiceAccountToken).toBe(false);
});

test('the opt-out annotation and explicit values win', async () => {
  const tpl = templateManifest('root');
  tpl.metadata.annotations = { 'agents.x-k8s.io/secure-defaults-opt-out': 'runAsNonRoot, dropCapabilities' };
  tpl.spec.podTemplate.spec.containers[0].securityContext = { allowPrivilegeEscalation: true };
  await ext.create('sandboxtemplates', tpl);
  await ext.create('sandboxwarmpools', poolManifest('root', 'root', 1));
  const spec = (await member('root')).spec.podTemplate.spec;
  expect(spec.securityContext).toEqual({ seccompProfile: { type: 'RuntimeDefault' } });
  expect(spec.containers[0].securityContext).toEqual({ allowPrivilegeEscalation: true });
});

test('a bare Sandbox\'s Pod has no service-account token unless the Sandbox asks for one', async () => {
  await api.call('POST', ext.sandboxesPath, sandboxManifest('bare'));
  const asked = sandboxManifest('asks-for-token');
  asked.spec.podTemplate.spec.automountServiceAccountToken = true;
  await api.call('POST', ext.sandboxesPath, asked);
  expect((await pod('bare')).spec.automountServiceAccountToken).toBe(false);
  expect((await pod('asks-for-token')).spec.automountServiceAccountToken).toBe(true);
  // Nothing else is added to a bare Sandbox's Pod.
  expect((await pod('bare')).spec.containers[0].securityContext).toBeUndefined();
});
