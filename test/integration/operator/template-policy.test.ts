/**
 * The template NetworkPolicy fails closed, end to end: the real operator (--extensions=true, the
 * install bundle's RBAC) against the real local control plane, whose kube-controller-manager runs
 * the garbage collector. Pools build members only once their template's policy exists; the policy
 * outlives its template while Sandboxes built from it remain; a missing template and a template
 * giving its Pods the router's label are said in the pool's conditions, and nothing is built; a
 * bare Sandbox cannot take the router's label either; a restarted operator cleans up from its caches.
 */
import { withoutAdmissionPolicies } from './admission-policies';
import { BundleRbac } from './bundle-rbac';
import { ExtensionsApi, claimManifest, controllerOf, poolManifest, templateManifest } from './extensions-api';
import { SandboxApi, condition, sandboxManifest } from './sandbox-api';
import { networkPolicyNameFor } from '../../../src/api/network-policy-defaults';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const CONTROLLERS = ['sandbox', 'sandboxtemplate', 'sandboxwarmpool', 'sandboxclaim'];
let ns: string;
let ext: ExtensionsApi;
let rbac: BundleRbac;
let op: OperatorProcess;

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('template-policy');
  // These tests are about the operator's own refusals: the bundle's admission policies would refuse first.
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
    for (const plural of ['sandboxclaims', 'sandboxwarmpools'] as const) await api.call('DELETE', ext.path(plural));
    await api.call('DELETE', ext.sandboxesPath);
    await waitFor(async () => (await ext.sandboxes()).length === 0, 120_000, 'every Sandbox of the test namespace to be gone');
    await kube.deleteNamespace(ns);
  }
  await rbac?.remove();
}, 200_000);

const policiesPath = () => `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`;
const conditionOf = (obj: any, type: string) => obj?.status?.conditions?.find((c: any) => c.type === type);

async function poolCondition(pool: string, reason: string): Promise<any> {
  return waitFor(async () => {
    const c = conditionOf(await ext.get('sandboxwarmpools', pool), 'TemplateReady');
    return c?.reason === reason ? c : undefined;
  }, 30_000, `pool ${pool}: TemplateReady reason ${reason}`);
}

test('a 250-character template name: its policy gets a bounded name, and the pool builds members only once that policy exists', async () => {
  const name = `long-${'x'.repeat(245)}`;
  const policyName = networkPolicyNameFor(name);
  expect(name).toHaveLength(250);
  expect(policyName.length).toBeLessThanOrEqual(253);
  // Someone else's policy holds the name first: the template cannot have its own, so nothing may be built.
  await api.call('POST', policiesPath(), {
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: policyName }, spec: { podSelector: { matchLabels: { other: 'x' } } },
  });
  await ext.create('sandboxtemplates', templateManifest(name));
  await ext.create('sandboxwarmpools', poolManifest('long', name, 2));
  const blocked = await poolCondition('long', 'NetworkPolicyNotReady');
  expect(blocked).toMatchObject({ status: 'False', message: expect.stringContaining(policyName) });
  await waitFor(async () => conditionOf(await ext.get('sandboxtemplates', name), 'NetworkPolicyReady')?.reason === 'NetworkPolicyConflict',
    30_000, 'the template to report the conflict');
  await op.waitIdle(CONTROLLERS);
  expect(await ext.poolMembers('long')).toEqual([]);

  // The name is free: the operator's policy is created, and only then the members.
  await api.call('DELETE', `${policiesPath()}/${policyName}`);
  const members = await ext.waitPoolReady('long', 2);
  const policy = await ext.networkPolicy(policyName);
  expect(policy.metadata.annotations['agents.x-k8s.io/sandbox-template-ref']).toBe(name);
  expect(policy.metadata.ownerReferences).toBeUndefined();
  for (const m of members) expect(Date.parse(m.metadata.creationTimestamp)).toBeGreaterThanOrEqual(Date.parse(policy.metadata.creationTimestamp));
  for (const m of members) expect(m.metadata.labels['agents.x-k8s.io/sandbox-template-ref-hash']).toBe(policy.spec.podSelector.matchLabels['agents.x-k8s.io/sandbox-template-ref-hash']);
  await poolCondition('long', 'TemplateReady');
  expect(conditionOf(await ext.get('sandboxtemplates', name), 'NetworkPolicyReady')).toMatchObject({ status: 'True', reason: 'NetworkPolicyReady' });
});

test('a template deleted while its pool\'s members run: its policy stays until the last Sandbox built from it is gone', async () => {
  await ext.create('sandboxtemplates', templateManifest('doomed'));
  await ext.create('sandboxwarmpools', poolManifest('doomed', 'doomed', 2));
  await ext.waitPoolReady('doomed', 2);
  const policy = await ext.networkPolicy('doomed-network-policy');
  expect(controllerOf(policy)).toBeUndefined();

  await api.call('DELETE', `${ext.path('sandboxtemplates')}/doomed`);
  await waitFor(async () => (await ext.get('sandboxtemplates', 'doomed')) === undefined, 30_000, 'the template to be gone');
  await poolCondition('doomed', 'TemplateNotFound');
  await op.waitIdle(CONTROLLERS);
  // The garbage collector has nothing to act on, and the operator keeps it for the running members.
  expect((await ext.poolMembers('doomed')).length).toBe(2);
  expect((await ext.networkPolicy('doomed-network-policy'))?.metadata.uid).toBe(policy.metadata.uid);

  await api.call('DELETE', `${ext.path('sandboxwarmpools')}/doomed`);
  await waitFor(async () => (await ext.sandboxes()).every((s) => s.metadata.annotations?.['agents.x-k8s.io/sandbox-template-ref'] !== 'doomed'),
    60_000, 'the pool\'s members to be gone');
  await waitFor(async () => (await ext.networkPolicy('doomed-network-policy')) === undefined, 30_000, 'the policy to be removed');
});

test('a pool whose template is missing: TemplateNotFound and one Warning; cleared, and members built, once the template appears', async () => {
  await ext.create('sandboxwarmpools', poolManifest('early', 'later', 1));
  const missing = await poolCondition('early', 'TemplateNotFound');
  expect(missing.message).toMatch(/SandboxTemplate "later" does not exist.*spec.sandboxTemplateRef.name/);
  await waitFor(async () => (await ext.events('SandboxWarmPool', 'early')).some((e) => e.reason === 'TemplateNotFound'), 30_000, 'a TemplateNotFound event');
  const logged = (l: any) => l.reason === 'TemplateNotFound' && l.pool === `${ns}/early`;
  await op.waitForLog(logged, 30_000, 'the TemplateNotFound log line');

  await ext.create('sandboxtemplates', templateManifest('later'));
  await ext.waitPoolReady('early', 1);
  await poolCondition('early', 'TemplateReady');
  // Said once, though the pool was reconciled again meanwhile.
  expect((await ext.events('SandboxWarmPool', 'early')).filter((e) => e.reason === 'TemplateNotFound')).toHaveLength(1);
  expect(op.lines.filter(logged)).toHaveLength(1);
});

test('a template giving its Pods the router\'s label: refused on the template and the pool, naming the label and the fix; nothing built', async () => {
  const spoof = templateManifest('spoof');
  spoof.spec.podTemplate.metadata = { labels: { app: 'sandbox-router' } };
  await ext.create('sandboxtemplates', spoof);
  await ext.create('sandboxwarmpools', poolManifest('spoof', 'spoof', 1));
  const refused = await poolCondition('spoof', 'RouterLabelsRefused');
  expect(refused.message).toMatch(/app=sandbox-router.*remove it from spec.podTemplate.metadata.labels/);
  const onTemplate = await waitFor(async () => conditionOf(await ext.get('sandboxtemplates', 'spoof'), 'PodLabelsAllowed'), 30_000, 'the template condition');
  expect(onTemplate).toMatchObject({ status: 'False', reason: 'RouterLabelsRefused' });
  await op.waitIdle(CONTROLLERS);
  expect(await ext.poolMembers('spoof')).toEqual([]);

  // The label removed: members are built.
  await ext.patch('sandboxtemplates', 'spoof', { spec: { podTemplate: { metadata: { labels: { app: 'tenant' } } } } });
  await ext.waitPoolReady('spoof', 1);
});

test('a bare Sandbox asking for the router\'s label: InvalidConfiguration naming the label, no Pod', async () => {
  const sandboxes = new SandboxApi(api, ns);
  await sandboxes.create(sandboxManifest('impostor', {}, { labels: { app: 'sandbox-router' } }));
  const refused = await sandboxes.waitFor('impostor', (sb) => condition(sb, 'Ready')?.reason === 'InvalidConfiguration', 'InvalidConfiguration');
  expect(condition(refused, 'Ready').message).toMatch(/app=sandbox-router.*remove it/);
  await op.waitIdle(CONTROLLERS);
  expect(await sandboxes.podsOf('impostor')).toEqual([]);
});

test('an operator restarted after its template and Sandboxes went while it was down removes the policy they left (state from the caches)', async () => {
  await ext.create('sandboxtemplates', templateManifest('restart'));
  await ext.create('sandboxwarmpools', poolManifest('restart', 'restart', 1));
  await ext.waitPoolReady('restart', 1);
  expect(await ext.networkPolicy('restart-network-policy')).toBeDefined();

  await op.stop();
  await api.call('DELETE', `${ext.path('sandboxtemplates')}/restart`);
  await api.call('DELETE', `${ext.path('sandboxwarmpools')}/restart`);
  // Garbage collection (kube-controller-manager) removes the members; the policy has nothing it follows.
  await waitFor(async () => (await ext.sandboxes()).every((s) => s.metadata.annotations?.['agents.x-k8s.io/sandbox-template-ref'] !== 'restart'),
    60_000, 'the pool\'s members to be garbage-collected');
  expect(await ext.networkPolicy('restart-network-policy')).toBeDefined();

  op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: ['--extensions=true', '--leader-elect=false'] });
  await waitFor(async () => (await ext.networkPolicy('restart-network-policy')) === undefined, 30_000, 'the restarted operator to remove the policy');
});

test('a claim\'s cold start waits, NetworkPolicyNotReady, while its template\'s policy is not the operator\'s; then gets its Sandbox', async () => {
  await api.call('POST', policiesPath(), {
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'cold-network-policy' }, spec: { podSelector: { matchLabels: { other: 'x' } } },
  });
  await ext.create('sandboxtemplates', templateManifest('cold'));
  await ext.create('sandboxwarmpools', poolManifest('cold', 'cold', 0));
  await ext.create('sandboxclaims', claimManifest('cold-claim', 'cold'));
  const waiting = await ext.waitClaim('cold-claim', (c) => conditionOf(c, 'Ready')?.reason === 'NetworkPolicyNotReady', 'NetworkPolicyNotReady');
  expect(conditionOf(waiting, 'Ready').message).toMatch(/NetworkPolicy "cold-network-policy".*does not exist yet/);
  await op.waitIdle(CONTROLLERS);
  expect((await ext.sandboxes()).filter((s) => s.metadata.name === 'cold-claim')).toEqual([]);

  await api.call('DELETE', `${policiesPath()}/cold-network-policy`);
  await ext.waitClaim('cold-claim', (c) => c.status?.sandbox?.name === 'cold-claim', 'its cold Sandbox');
});
