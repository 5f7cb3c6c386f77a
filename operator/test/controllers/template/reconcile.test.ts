/**
 * The TemplateReconciler over the fake API server and its caches: the writes of a pass, and what a
 * lagging cache, a 409, a foreign policy, a lost event or a crash between the two writes does.
 */
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, NS, ownerRef, template } from './fixtures';
import { TEMPLATE_HASH_INDEX } from '../../../src/controllers/extension-informers';
import { desiredNetworkPolicy } from '../../../src/controllers/template/desired';
import { LIVE_CHECK_RETRY_MS, TEMPLATE_FIELD_MANAGER, TemplateReconciler } from '../../../src/controllers/template/reconcile';
import { type NetworkPolicy, type Sandbox, type SandboxTemplate } from '../../../src/model';
import { RACE_RETRY_MS } from '../../../src/runtime/controller';
import { DEFAULT_EXPECTATION_TTL_MS } from '../../../src/runtime/expectations';
import type { KubeObject } from '../../../src/runtime/types';
import { FakeClient, FakeStore, apiError } from '../../fake-kube';

const KEY = `${NS}/python`;
const POLICY = 'python-network-policy';
const LABEL = 'patch sandboxtemplates python';
const CREATE = `create networkpolicies ${POLICY}`;
const STATUS = 'patch sandboxtemplates python/status';

const labelled = (spec: Partial<SandboxTemplate['spec']> = {}) =>
  template(spec, { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') } });

/** The policy the template would create, as the server stored it. */
function policyOf(t: SandboxTemplate, meta: Partial<NetworkPolicy['metadata']> = {}): NetworkPolicy {
  const policy = desiredNetworkPolicy(t)!;
  return { ...policy, metadata: { ...policy.metadata, uid: 'policy-uid', resourceVersion: '20', ...meta } };
}

const resourceOf = (obj: KubeObject) => (obj.kind === 'NetworkPolicy' ? 'networkpolicies' : 'sandboxtemplates');

function setup(t: SandboxTemplate | undefined, policies: NetworkPolicy[] = []) {
  const clock = { now: NOW };
  const client = new FakeClient(() => clock.now).seed(resourceOf, ...(t ? [t] : []), ...policies);
  const stores = {
    templates: new FakeStore<SandboxTemplate>().put(...(t ? [t] : [])),
    networkPolicies: new FakeStore<NetworkPolicy>().put(...policies),
    sandboxes: new FakeStore<Sandbox>({ [TEMPLATE_HASH_INDEX]: (sb) => [`${sb.metadata.namespace}/${sb.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]}`] }),
  };
  const reconciler = new TemplateReconciler({ client, ...stores, now: () => clock.now });
  reconciler.follow(stores.networkPolicies);
  const pass = async (r: TemplateReconciler = reconciler) => {
    client.calls.length = 0;
    const result = await r.reconcile(KEY);
    return { writes: client.writes, result };
  };
  const catchUp = () => {
    stores.templates.syncFrom(client, 'sandboxtemplates');
    stores.networkPolicies.syncFrom(client, 'networkpolicies');
  };
  return { client, stores, reconciler, clock, pass, catchUp };
}

describe('TemplateReconciler', () => {
  test('a new template: its ref-hash label, then its policy (no ownerReference), then NetworkPolicyReady=False until the cache shows it', async () => {
    const { client, pass } = setup(template());
    expect((await pass()).writes).toEqual([LABEL, CREATE, STATUS]);
    expect(client.calls[0].body).toEqual({ metadata: { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') } } });
    expect(client.calls[1].options).toEqual({ fieldManager: TEMPLATE_FIELD_MANAGER });
    expect(client.live.get(`networkpolicies/${POLICY}`)!.metadata.ownerReferences).toBeUndefined();
    expect(client.calls[2].body.status.conditions).toEqual([
      expect.objectContaining({ type: 'NetworkPolicyReady', status: 'False', reason: 'NetworkPolicyPending' }),
      expect.objectContaining({ type: 'PodLabelsAllowed', status: 'True', reason: 'NoRouterLabels' }),
    ]);
  });

  test('a pass before the caches show our writes makes neither again; nor does one after', async () => {
    const { client, pass, catchUp } = setup(template());
    await pass();
    // The label patch wakes the template; neither event has reached the caches.
    expect((await pass()).writes).toEqual([]);
    catchUp();
    // The policy in the cache: the condition turns True, once.
    expect((await pass()).writes).toEqual([STATUS]);
    expect(client.calls[0].body.status.conditions[0]).toMatchObject({ type: 'NetworkPolicyReady', status: 'True', reason: 'NetworkPolicyReady' });
    expect((await pass()).writes).toEqual([]);
  });

  test('a crash between the label and the policy: a fresh reconciler over the server\'s state only creates the policy', async () => {
    const first = setup(template());
    first.client.failOnce({ verb: 'create', resource: 'networkpolicies', error: new Error('operator killed') });
    await expect(first.pass()).rejects.toThrow('operator killed');
    const { client, pass, catchUp } = setup(undefined);
    for (const [key, obj] of first.client.live) client.live.set(key, obj);
    catchUp();
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
  });

  test('Unmanaged: our policy is deleted with a UID precondition, once, though the cache shows it a while longer', async () => {
    const unmanaged = labelled({ networkPolicyManagement: 'Unmanaged' });
    const { client, pass, catchUp } = setup(unmanaged, [policyOf(template())]);
    expect((await pass()).writes).toEqual([`delete networkpolicies ${POLICY}`, STATUS]);
    expect(client.calls[0].options).toEqual({ uid: 'policy-uid' });
    expect(client.calls[1].body.status.conditions[0]).toMatchObject({ type: 'NetworkPolicyReady', status: 'True', reason: 'Unmanaged' });
    expect((await pass()).writes).toEqual([]);
    catchUp();
    expect((await pass()).writes).toEqual([]);
  });

  test('a drifted policy is replaced on its cached resourceVersion; losing to another writer (409) retries on the cache that shows it', async () => {
    const custom = labelled({ networkPolicy: { egress: [] } });
    const { client, pass, catchUp } = setup(custom, [policyOf(template())]);
    client.live.set(`networkpolicies/${POLICY}`, policyOf(template(), { resourceVersion: '21' }));
    expect(await pass()).toEqual({ writes: [`update networkpolicies ${POLICY}`], result: { requeueAfterMs: RACE_RETRY_MS } });
    catchUp();
    expect((await pass()).writes).toEqual([`update networkpolicies ${POLICY}`, STATUS]);
    expect((client.live.get(`networkpolicies/${POLICY}`) as NetworkPolicy).spec).toEqual(desiredNetworkPolicy(custom)!.spec);
    // Our update stands in for the cache until it shows it: no second update.
    expect((await pass()).writes).toEqual([]);
  });

  test('a policy of that name that is not ours: one Warning, no write; once it is gone, ours is created', async () => {
    const foreign = policyOf(template(), { labels: undefined, annotations: undefined });
    const { client, stores, pass } = setup(labelled(), [foreign]);
    const warnings: string[] = [];
    for (let i = 0; i < 2; i++) {
      // The conflict is said once in the status too; the policy is never written.
      expect((await pass()).writes).toEqual(i === 0 ? [STATUS] : []);
      if (i === 0) expect(client.calls.find((c) => c.verb === 'patch')!.body.status.conditions[0]).toMatchObject({ status: 'False', reason: 'NetworkPolicyConflict' });
      warnings.push(...client.calls.filter((c) => c.verb === 'event').map((c) => c.body.reason));
    }
    expect(warnings).toEqual(['NetworkPolicyConflict']);
    client.live.delete(`networkpolicies/${POLICY}`);
    stores.networkPolicies.remove(NS, POLICY);
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
  });

  test('AlreadyExists (a policy the cache has not shown): a quick retry, not an error', async () => {
    const { client, pass } = setup(labelled());
    client.live.set(`networkpolicies/${POLICY}`, policyOf(template()));
    expect(await pass()).toEqual({ writes: [CREATE], result: { requeueAfterMs: RACE_RETRY_MS } });
  });

  test('a lost event misleads only until the expectation expires: then the missing policy is created again', async () => {
    const { client, clock, pass } = setup(labelled());
    await pass();
    // The policy was deleted, and neither its add nor its delete event arrived.
    client.live.delete(`networkpolicies/${POLICY}`);
    clock.now += DEFAULT_EXPECTATION_TTL_MS - 1;
    expect((await pass()).writes).toEqual([]);
    clock.now += 1;
    expect((await pass()).writes).toEqual([CREATE]);
  });

  test('a template gone with no policy, or being deleted: nothing to do', async () => {
    for (const t of [undefined, template({}, { deletionTimestamp: '2026-09-01T11:00:00Z' })]) {
      const { client, pass } = setup(t);
      await pass();
      expect(client.calls).toEqual([]);
    }
  });

  test('upstream\'s policy (controlled by the template): updated once to drop the ownerReference and carry the marks', async () => {
    const upstream = policyOf(template(), { labels: undefined, annotations: undefined, ownerReferences: [ownerRef('SandboxTemplate', 'python', 'tpl-uid')] });
    const { client, pass } = setup(labelled(), [upstream]);
    expect((await pass()).writes).toEqual([`update networkpolicies ${POLICY}`, STATUS]);
    const stored = client.live.get(`networkpolicies/${POLICY}`)!;
    expect(stored.metadata.ownerReferences).toBeUndefined();
    expect(stored.metadata.annotations).toEqual({ [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'python' });
  });

  test('a deleted template\'s policy stays while a Sandbox built from it exists, and goes (UID precondition) with the last one', async () => {
    const { client, stores, pass } = setup(undefined, [policyOf(template())]);
    const member = { metadata: { name: 'm', namespace: NS, labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') } }, spec: {} } as unknown as Sandbox;
    stores.sandboxes.put(member);
    expect((await pass()).writes).toEqual([]);
    stores.sandboxes.remove(NS, 'm');
    expect((await pass()).writes).toEqual([`delete networkpolicies ${POLICY}`]);
    expect(client.calls.find((c) => c.verb === 'delete')!.options).toEqual({ uid: 'policy-uid' });
    // The cache still shows it: not deleted twice.
    expect((await pass()).writes).toEqual([]);
  });

  test('a deleted template\'s policy stays while the server holds a Sandbox of it the cache does not show yet', async () => {
    const { client, pass } = setup(undefined, [policyOf(template())]);
    const member = { metadata: { name: 'm', namespace: NS, labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') } }, spec: {} } as unknown as Sandbox;
    client.seed(() => 'sandboxes', member);
    const kept = await pass();
    expect(kept.writes).toEqual([]);
    expect(kept.result).toEqual({ requeueAfterMs: LIVE_CHECK_RETRY_MS });
    expect(client.calls[0]).toMatchObject({ verb: 'list', resource: 'sandboxes', options: { labelSelector: `${SandboxLabels.SANDBOX_TEMPLATE_REF_HASH}=${NameHash.of('python')}`, limit: 1 } });
    client.live.delete('sandboxes/m');
    expect((await pass()).writes).toEqual([`delete networkpolicies ${POLICY}`]);
  });

  test('a deleted template\'s policy that is someone else\'s is never deleted', async () => {
    const { pass } = setup(undefined, [policyOf(template(), { labels: undefined, annotations: undefined })]);
    expect((await pass()).writes).toEqual([]);
  });
});
