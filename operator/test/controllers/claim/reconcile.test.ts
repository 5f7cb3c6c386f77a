/**
 * The claim executor against the fake API server (operator/test/fake-kube.ts): which writes a pass
 * makes, in which order, with which preconditions, and what a lagging cache or a crash between two
 * writes does. The caches are FakeStores with the real indexes; a test decides when they catch up.
 */
import { Registry } from 'prom-client';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NOW, TEMPLATE, claim, iso, member, notReady, ownerRef, pool, ready, unschedulable } from './fixtures';
import { ClaimMetrics } from '../../../src/controllers/claim/metrics';
import { ClaimReconciler, CLAIM_FIELD_MANAGER, type ClaimReconcilerOptions } from '../../../src/controllers/claim/reconcile';
import { ClaimPressure, Deferral, DeferredSends, HeldAnnotations, PRESSURE_LINGER_MS } from '../../../src/controllers/claims-first';
import { extensionInformers } from '../../../src/controllers/extension-informers';
import { type NetworkPolicy, rfc3339Nano, type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import type { ControllerContext } from '../../../src/runtime/context';
import type { Informer, InformerHandlers, KubeObject } from '../../../src/runtime/types';
import { FakeClient, FakeStore, apiError } from '../../fake-kube';
import { FakeClock } from '../../runtime/fake-clock';
import { policyOf } from '../warm-pool/harness';

const KEY = 'team-a/my-claim';
const RESOURCE_OF_KIND: Record<string, string> = { Sandbox: 'sandboxes', SandboxClaim: 'sandboxclaims', SandboxWarmPool: 'sandboxwarmpools', SandboxTemplate: 'sandboxtemplates' };
const resourceOf = (o: KubeObject) => RESOURCE_OF_KIND[o.kind ?? ''];

/** The caches, as FakeStores carrying the indexes the real informers have. */
function caches() {
  const informers = { forResource: (_type: unknown, request: { indexes?: Record<string, any> } = {}) => new FakeStore(request.indexes) };
  const { claims, pools, templates, sandboxes } = extensionInformers({ informers } as unknown as Pick<ControllerContext, 'informers'>);
  return {
    claims: claims as unknown as FakeStore<SandboxClaim>,
    pools: pools as unknown as FakeStore<SandboxWarmPool>,
    templates: templates as unknown as FakeStore<SandboxTemplate>,
    sandboxes: sandboxes as unknown as FakeStore<Sandbox>,
  };
}

type SetupOptions = Pick<ClaimReconcilerOptions, 'disableAnnotations' | 'disableEvents' | 'annotationsHeld' | 'eventsHeld' | 'elapsed'>;

function setup(objects: KubeObject[], options: SetupOptions = {}) {
  const clock = { now: NOW };
  const client = new FakeClient(() => clock.now).seed(resourceOf, ...objects);
  const stores = caches();
  const sync = (...which: Array<keyof typeof stores>) => {
    for (const name of which.length > 0 ? which : (Object.keys(stores) as Array<keyof typeof stores>)) {
      stores[name].syncFrom(client, RESOURCE_OF_KIND[{ claims: 'SandboxClaim', pools: 'SandboxWarmPool', templates: 'SandboxTemplate', sandboxes: 'Sandbox' }[name]]);
    }
  };
  sync();
  // The template controller's policy for TEMPLATE is in its cache: cold starts may proceed.
  const networkPolicies = new FakeStore<NetworkPolicy>().put(policyOf(TEMPLATE));
  const fresh = () => new ClaimReconciler({
    client, ...stores, networkPolicies, metrics: new ClaimMetrics(new Registry()), now: () => clock.now, ...options,
  });
  const reconciler = fresh();
  return { clock, client, stores, networkPolicies, sync, reconciler, fresh };
}

const writeCalls = (client: FakeClient) => client.calls.filter((c) => c.verb !== 'event');
const live = (client: FakeClient, resource: string, name: string): any => client.live.get(`${resource}/${name}`);
const events = (client: FakeClient) => client.calls.filter((c) => c.verb === 'event').map((c) => `${c.body.reason} ${c.body.note}`);
const readyCondition = (obj: any) => obj.status?.conditions?.find((c: any) => c.type === 'Ready');
const warm = (name: string, o: Parameters<typeof member>[0] = {}) => member({ name, podIPs: ['10.0.0.1'], nodeName: 'n1', ...o });
const ofClaim = (name: string, o: Parameters<typeof member>[0] = {}): Sandbox => {
  const m = member({ name, podIPs: ['10.0.0.9'], ...o });
  return { ...m, metadata: { ...m.metadata, ownerReferences: [ownerRef('SandboxClaim', 'my-claim', 'claim-uid')] } };
};

describe('ClaimReconciler', () => {
  test('a warm claim: one conditional Sandbox write, one status write, one annotations patch and an Event', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a')]);
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    const [adoption, status, annotations] = writeCalls(client);
    const owner = { kind: 'SandboxClaim', uid: 'claim-uid', controller: true };
    expect(adoption.body.metadata).toMatchObject({ resourceVersion: '100', ownerReferences: [owner] });
    expect(adoption.options).toMatchObject({ fieldManager: CLAIM_FIELD_MANAGER, priority: 'urgent' });
    expect(status.body.metadata).toEqual({ resourceVersion: '500' });
    expect(status.body.status.sandbox).toEqual({ name: 'py-pool-a', podIPs: ['10.0.0.1'], serviceFQDN: null });
    expect(status.options).toMatchObject({ subresource: 'status', priority: 'urgent' });
    expect(annotations.body).toEqual({
      metadata: {
        annotations: {
          [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]: rfc3339Nano(NOW),
          [SandboxAnnotations.CLAIM_FIRST_READY_AT]: rfc3339Nano(NOW),
        },
      },
    });
    expect(annotations.options).toMatchObject({ priority: 'background' });
    expect(events(client)).toEqual(['SandboxAdopted Adopted warm pool Sandbox "py-pool-a"']);
    expect(live(client, 'sandboxes', 'py-pool-a').metadata.ownerReferences).toEqual([expect.objectContaining({ uid: 'claim-uid' })]);
    expect(readyCondition(live(client, 'sandboxclaims', 'my-claim'))).toMatchObject({ status: 'True' });
  });

  test('under an idle policy a warm claim makes the same writes: the policy and the last-activity stamp ride in the adoption patch', async () => {
    const idlePolicy = { suspendAfterSeconds: 300, resumeOnRequest: true };
    const idleTemplate: SandboxTemplate = { ...TEMPLATE, spec: { ...TEMPLATE.spec, idlePolicy } };
    const { client, reconciler } = setup([claim(), pool(), idleTemplate, warm('py-pool-a')]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    const adopted = live(client, 'sandboxes', 'py-pool-a');
    expect(adopted.spec.idlePolicy).toEqual(idlePolicy);
    expect(adopted.metadata.annotations[SandboxAnnotations.LAST_ACTIVITY]).toBe(new Date(NOW).toISOString());
  });

  test('while other claims wait, a warm claim is two writes: its annotations (first-Ready time kept) and Event follow when they are served', async () => {
    const fake = new FakeClock(NOW);
    const pressure = new ClaimPressure(fake);
    const woken: string[] = [];
    const { client, clock, sync, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a')], {
      annotationsHeld: new HeldAnnotations(new Deferral(pressure, (key) => woken.push(key), 3_000)),
      eventsHeld: new DeferredSends(pressure, fake, 3_000),
    });
    pressure.waitingOn('team-a/other', 'team-a/py-pool');
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 3_000 });
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status']);
    expect(events(client)).toEqual([]);

    // Served later, when the cache shows the claim Ready: a fresh pass would say `unknown`, the held value wins.
    clock.now = NOW + 2_000;
    sync();
    client.calls.length = 0;
    pressure.settled('team-a/other');
    // The pressure lingers after the last claim is served, then lets the held work go.
    expect([woken, events(client)]).toEqual([[], []]);
    fake.advance(PRESSURE_LINGER_MS);
    expect([woken, events(client)]).toEqual([[KEY], ['SandboxAdopted Adopted warm pool Sandbox "py-pool-a"']]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxclaims my-claim']);
    expect(writeCalls(client)[0].body.metadata.annotations).toEqual({
      [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]: rfc3339Nano(NOW),
      [SandboxAnnotations.CLAIM_FIRST_READY_AT]: rfc3339Nano(NOW),
    });
  });

  test('with events and observability annotations disabled, a warm claim is two writes', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a')], { disableAnnotations: true, disableEvents: true });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status']);
    expect(events(client)).toEqual([]);
  });

  test('a conflict on the adoption write falls through to the next candidate in the same pass', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 10_000 })]);
    // Someone changed py-pool-a since the cache saw it.
    client.live.get('sandboxes/py-pool-a')!.metadata.resourceVersion = '101';
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxes py-pool-b', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    expect(events(client)).toEqual(['SandboxAdopted Adopted warm pool Sandbox "py-pool-b"']);
    expect(live(client, 'sandboxes', 'py-pool-a').metadata.ownerReferences[0].kind).toBe('SandboxWarmPool');
    expect(reconciler.claimed.size).toBe(1);
  });

  test('an adoption whose response is lost but which landed: read back, kept, no second member', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 10_000 })]);
    client.loseResponseOnce({ verb: 'patch', resource: 'sandboxes', name: 'py-pool-a', error: apiError(504, 'Timeout') });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    expect(client.calls.filter((c) => c.verb === 'get').map((c) => c.name)).toEqual(['py-pool-a']);
    expect(live(client, 'sandboxes', 'py-pool-b').metadata.ownerReferences[0].kind).toBe('SandboxWarmPool');
    expect(live(client, 'sandboxclaims', 'my-claim').status.sandbox.name).toBe('py-pool-a');
  });

  test('an adoption that failed with a 5xx and did not land: read back, the next member taken', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 10_000 })]);
    client.failOnce({ verb: 'patch', resource: 'sandboxes', name: 'py-pool-a', error: apiError(503, 'ServiceUnavailable') });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxes py-pool-b', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    expect(live(client, 'sandboxes', 'py-pool-a').metadata.ownerReferences[0].kind).toBe('SandboxWarmPool');
    expect(live(client, 'sandboxclaims', 'my-claim').status.sandbox.name).toBe('py-pool-b');
  });

  test('an adoption with no answer and no way to read back: the member stays reserved, the claim waits for the cache', async () => {
    const { client, reconciler, sync } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 10_000 })]);
    client.loseResponseOnce({ verb: 'patch', resource: 'sandboxes', name: 'py-pool-a', error: apiError(504, 'Timeout') });
    client.failOnce({ verb: 'get', resource: 'sandboxes', name: 'py-pool-a', error: apiError(503, 'ServiceUnavailable') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow(/Timeout/);
    client.calls.length = 0;
    await reconciler.reconcile(KEY);
    expect(client.writes.filter((w) => w.startsWith('patch sandboxes'))).toEqual([]);
    // The cache catches up with the adoption that did land: the claim is served from it.
    sync('sandboxes');
    await reconciler.reconcile(KEY);
    expect(client.writes.filter((w) => w.startsWith('patch sandboxes'))).toEqual([]);
    expect(live(client, 'sandboxclaims', 'my-claim').status.sandbox.name).toBe('py-pool-a');
  });

  test('two claims of one process in flight at once take different members: no 409', async () => {
    const other = claim({}, { name: 'other-claim', uid: 'other-uid' });
    const { client, reconciler } = setup([claim(), other, pool(), TEMPLATE, warm('py-pool-a'), warm('py-pool-b')]);
    await Promise.all([reconciler.reconcile(KEY), reconciler.reconcile('team-a/other-claim')]);
    const adoptions = client.writes.filter((w) => w.startsWith('patch sandboxes'));
    expect(adoptions.sort()).toEqual(['patch sandboxes py-pool-a', 'patch sandboxes py-pool-b']);
  });

  describe('the wall clock stepped an hour from the API server\'s: members without an IP are waited for, then taken, as the process watched them', () => {
    const HOUR = 3_600_000;
    // Members made 5 s and 40 s ago by the API server's clock, no Pod IP yet; the claim 0.1 s ago.
    const pendingMember = (name: string, age: number) => member({ name, age, nodeName: 'n1', conditions: [notReady()] });
    const start = (wallMs: number) => {
      const elapsed = { now: 0 };
      const env = setup([claim({}, { creationTimestamp: iso(NOW - 100) }), pool(), TEMPLATE], { elapsed: () => elapsed.now });
      env.reconciler.follow(env.stores.claims, env.stores.sandboxes);
      // The members arrive on the watch while the process runs (noted at elapsed 0).
      env.client.seed(resourceOf, pendingMember('starting', 5_000), pendingMember('long-pending', 40_000));
      env.sync('sandboxes');
      env.clock.now = wallMs;
      return { ...env, elapsed };
    };

    test.each([['ahead', NOW + HOUR], ['behind', NOW - HOUR]])('clock %s: the grace runs its 2 s, then the oldest member not stuck is taken', async (_, wall) => {
      const { client, elapsed, reconciler } = start(wall);
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 500 });
      elapsed.now = 1_900;
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 100 });
      expect(client.writes).toEqual([]);
      // Grace over. 'long-pending' is 40 s old by its timestamp but watched 2 s: not stuck, and the oldest.
      elapsed.now = 2_000;
      await reconciler.reconcile(KEY);
      expect(client.writes[0]).toBe('patch sandboxes long-pending');
    });

    // At 29.999 s of watching the oldest is still taken; at 30 s (the control) both count as stuck and the claim starts cold.
    test.each([[29_999, 'patch sandboxes long-pending'], [30_000, 'create sandboxes my-claim']])('watched %d ms without an IP: %s', async (watched, write) => {
      const { client, elapsed, reconciler } = start(NOW + HOUR);
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 500 });
      expect(client.writes).toEqual([]);
      elapsed.now = watched;
      await reconciler.reconcile(KEY);
      expect(client.writes[0]).toBe(write);
    });

    test('after a restart the watch starts afresh, but an unschedulable member is passed over at once', async () => {
      const { client, clock, elapsed, sync, fresh } = start(NOW);
      // The old process: 'long-pending' is 40 s old, and its Pod cannot be scheduled.
      const unplaceable = member({ name: 'long-pending', age: 40_000, nodeName: 'n1', conditions: unschedulable() });
      client.seed(resourceOf, { ...unplaceable, metadata: { ...unplaceable.metadata, resourceVersion: '101' } });
      sync('sandboxes');
      // A new process (a restart, a new leader): nothing watched yet; the claim waits its grace again.
      const restarted = fresh();
      elapsed.now = 100_000;
      clock.now = NOW + 60_000;
      await expect(restarted.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 500 });
      elapsed.now = 102_000;
      await restarted.reconcile(KEY);
      // 'starting' (watched 0 s by the new process) is taken; 'long-pending', older, is unschedulable.
      expect(client.writes[0]).toBe('patch sandboxes starting');
    });

    test('with the clocks agreeing: the same 30 s as before, since a member watched 30 s is at least that old', async () => {
      const { client, clock, elapsed, reconciler } = start(NOW);
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 500 });
      clock.now = NOW + 30_000;
      elapsed.now = 30_000;
      await reconciler.reconcile(KEY);
      // Made 35 s and 70 s ago by now, watched 30 s: stuck; cold.
      expect(client.writes[0]).toBe('create sandboxes my-claim');
    });
  });

  test('a cold start: the claim-named Sandbox created, the status says it is not ready, no annotations yet', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create sandboxes my-claim', 'patch sandboxclaims my-claim/status']);
    expect(client.calls[0].options).toMatchObject({ fieldManager: CLAIM_FIELD_MANAGER, priority: 'urgent' });
    expect(events(client)).toEqual(['SandboxProvisioned Created Sandbox "my-claim"']);
    expect(readyCondition(live(client, 'sandboxclaims', 'my-claim'))).toMatchObject({ status: 'False', reason: 'SandboxNotReady' });
  });

  test('a cold start under the claim\'s idle policy: still one create, carrying the policy and the stamp', async () => {
    const { client, reconciler } = setup([claim({ idlePolicy: { suspendAfterSeconds: 2, resumeOnRequest: false } }), pool(), TEMPLATE]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create sandboxes my-claim', 'patch sandboxclaims my-claim/status']);
    const created = live(client, 'sandboxes', 'my-claim');
    expect(created.spec.idlePolicy).toEqual({ suspendAfterSeconds: 2, resumeOnRequest: false });
    expect(created.metadata.annotations[SandboxAnnotations.LAST_ACTIVITY]).toBe(new Date(NOW).toISOString());
  });

  test('a cold start from a Managed template whose NetworkPolicy the cache does not show: no Sandbox, NetworkPolicyNotReady; created once it shows', async () => {
    const { client, reconciler, networkPolicies } = setup([claim(), pool(), TEMPLATE]);
    networkPolicies.remove(TEMPLATE.metadata.namespace, 'python-network-policy');
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 60_000 });
    expect(client.writes).toEqual(['patch sandboxclaims my-claim/status']);
    expect(readyCondition(live(client, 'sandboxclaims', 'my-claim'))).toMatchObject({
      status: 'False', reason: 'NetworkPolicyNotReady', message: expect.stringMatching(/NetworkPolicy "python-network-policy".*does not exist yet/),
    });
    networkPolicies.put(policyOf(TEMPLATE));
    client.calls.length = 0;
    await reconciler.reconcile(KEY);
    expect(client.writes).toContain('create sandboxes my-claim');
  });

  test('a cold start from a template whose Pods would carry the router\'s labels: refused, naming the label', async () => {
    const spoof = { ...TEMPLATE, spec: { ...TEMPLATE.spec, podTemplate: { ...TEMPLATE.spec.podTemplate, metadata: { labels: { app: 'sandbox-router' } } } } };
    const { client, reconciler } = setup([claim(), pool(), spoof]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxclaims my-claim/status']);
    expect(readyCondition(live(client, 'sandboxclaims', 'my-claim'))).toMatchObject({
      status: 'False', reason: 'RouterLabelsRefused', message: expect.stringMatching(/app=sandbox-router/),
    });
  });

  test('a cold start the cache does not show yet: the next pass waits instead of creating again', async () => {
    const { client, reconciler, sync } = setup([claim(), pool(), TEMPLATE]);
    await reconciler.reconcile(KEY);
    client.calls.length = 0;
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 1000 });
    expect(client.writes).toEqual([]);
    sync('sandboxes');
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual([]);
    expect(reconciler.claimed.size).toBe(0);
  });

  test('stale caches after a warm claim: no second adoption, no repeated status or annotations write', async () => {
    const { client, reconciler, sync } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a'), warm('py-pool-b')]);
    await reconciler.reconcile(KEY);
    client.calls.length = 0;
    // Neither cache shows our writes: the adoption is pending, nothing else is taken.
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 1000 });
    // The Sandbox cache caught up, the claim cache did not: decided on our written claim.
    sync('sandboxes');
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    sync();
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual([]);
    expect([reconciler.claimed.size, reconciler.annotated.size]).toEqual([0, 0]);
  });

  test('a crash between the adoption and the status write: a new process finishes with one status write', async () => {
    const { client, reconciler, sync, fresh } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a'), warm('py-pool-b')]);
    client.failOnce({ verb: 'patch', resource: 'sandboxclaims', error: new Error('process killed') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow('process killed');
    client.calls.length = 0;
    sync();
    await fresh().reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    expect(live(client, 'sandboxclaims', 'my-claim').status.sandbox.name).toBe('py-pool-a');
    expect(live(client, 'sandboxes', 'py-pool-b').metadata.ownerReferences[0].kind).toBe('SandboxWarmPool');
  });

  test('two Sandboxes owned: the extra is released with a uid precondition, the status names the kept one', async () => {
    const kept = ofClaim('py-pool-kept', { age: 10_000 });
    const extra = ofClaim('py-pool-extra', { age: 90_000, conditions: [notReady()] });
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, kept, extra]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['delete sandboxes py-pool-extra', 'patch sandboxclaims my-claim/status', 'patch sandboxclaims my-claim']);
    expect(client.calls[0].options).toEqual({ uid: 'py-pool-extra-uid' });
    expect(client.live.has('sandboxes/py-pool-extra')).toBe(false);
    expect(live(client, 'sandboxclaims', 'my-claim').status.sandbox.name).toBe('py-pool-kept');
  });

  test('a bound Sandbox without a launch-type label gets it back', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, ofClaim('py-pool-mine', { labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } })]);
    await reconciler.reconcile(KEY);
    expect(client.writes[0]).toBe('patch sandboxes py-pool-mine');
    expect(client.calls[0].body).toEqual({ metadata: { labels: { [SandboxLabels.LAUNCH_TYPE]: 'warm' } } });
    expect(live(client, 'sandboxes', 'py-pool-mine').metadata.labels[SandboxLabels.LAUNCH_TYPE]).toBe('warm');
  });

  const expiredClaim = (shutdownPolicy: 'Retain' | 'Delete' | 'DeleteForeground') => claim({ lifecycle: { shutdownTime: iso(NOW - 1000), shutdownPolicy } });
  test.each<['Retain' | 'Delete' | 'DeleteForeground', string[], object]>([
    ['Retain', ['patch sandboxclaims my-claim/status', 'delete sandboxes py-pool-mine'], { uid: 'py-pool-mine-uid' }],
    ['Delete', ['patch sandboxclaims my-claim/status', 'delete sandboxclaims my-claim'], { uid: 'claim-uid', propagationPolicy: 'Background' }],
    ['DeleteForeground', ['patch sandboxclaims my-claim/status', 'delete sandboxclaims my-claim'], { uid: 'claim-uid', propagationPolicy: 'Foreground' }],
  ])('expiry, %s: marked ClaimExpired first, then the delete', async (policy, writes, deleteOptions) => {
    const { client, reconciler } = setup([expiredClaim(policy), pool(), TEMPLATE, ofClaim('py-pool-mine', { conditions: [ready()] })]);
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(writes);
    expect(client.calls[0].body.status.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'False', reason: 'ClaimExpired' })]);
    expect(client.calls.find((c) => c.verb === 'delete')!.options).toEqual(deleteOptions);
    expect(events(client)[0]).toBe('ClaimExpired Claim expired');
  });

  test.each<[string, KubeObject[], string, number]>([
    ['no pool', [claim(), TEMPLATE], 'WarmPoolNotFound', 60_000],
    ['a cold start without the template', [claim({ env: [{ name: 'A', value: '1' }] }), pool()], 'TemplateNotFound', 60_000],
  ])('%s: Ready=False with its reason, and a safety-net requeue', async (_, objects, reason, requeueAfterMs) => {
    const { client, reconciler } = setup(objects);
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs });
    expect(client.writes).toEqual(['patch sandboxclaims my-claim/status']);
    expect(readyCondition(live(client, 'sandboxclaims', 'my-claim'))).toMatchObject({ status: 'False', reason });
  });

  test('a status write that lost a race looks again shortly and writes no annotations', async () => {
    const { client, reconciler } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a')]);
    client.live.get('sandboxclaims/my-claim')!.metadata.resourceVersion = '501';
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 100 });
    expect(client.writes).toEqual(['patch sandboxes py-pool-a', 'patch sandboxclaims my-claim/status']);
  });

  test('informer events: the first sighting is the claim\'s add, and the caches catching up settle the expectations', async () => {
    const handlers = { claims: [] as InformerHandlers<SandboxClaim>[], sandboxes: [] as InformerHandlers<Sandbox>[] };
    const informer = <T extends KubeObject>(list: InformerHandlers<T>[]) =>
      ({ addHandlers: (h: InformerHandlers<T>) => list.push(h) }) as unknown as Informer<T>;
    const { client, reconciler, clock, sync, stores } = setup([claim(), pool(), TEMPLATE, warm('py-pool-a')]);
    reconciler.follow(informer(handlers.claims), informer(handlers.sandboxes));
    for (const h of handlers.claims) h.onAdd?.(stores.claims.get('team-a', 'my-claim')!);
    clock.now = NOW + 300; // queued behind other claims
    await reconciler.reconcile(KEY);
    expect(writeCalls(client)[2].body.metadata.annotations[SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]).toBe(rfc3339Nano(NOW));
    expect([reconciler.claimed.size, reconciler.annotated.size]).toEqual([1, 1]);
    sync();
    const adopted = stores.sandboxes.get('team-a', 'py-pool-a')!;
    for (const h of handlers.sandboxes) h.onUpdate?.(warm('py-pool-a'), adopted);
    for (const h of handlers.claims) h.onUpdate?.(claim(), stores.claims.get('team-a', 'my-claim')!);
    expect([reconciler.claimed.size, reconciler.annotated.size]).toEqual([0, 0]);
  });
});
