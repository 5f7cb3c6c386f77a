/**
 * The WarmPoolReconciler over the fake API server and its caches: which writes a pass makes, and
 * what a lagging cache, a lost event, a 409, an unknown outcome or a crash between writes does.
 */
import { SandboxAnnotations } from '#api/labels';
import { FLAGS, GRACE, NOW, NS, TEMPLATE, member, pool, template } from './fixtures';
import { RESOURCE_OF, policyOf, poolStores } from './harness';
import { ClaimPressure } from '../../../src/controllers/claims-first';
import { POOL_FIELD_MANAGER, WarmPoolReconciler } from '../../../src/controllers/warm-pool/reconcile';
import { isControlledBy, type Sandbox, type SandboxWarmPool } from '../../../src/model';
import type { KubeObject, ResourceType } from '../../../src/runtime/types';
import { FakeClient, apiError } from '../../fake-kube';
import { FakeClock } from '../../runtime/fake-clock';

const KEY = `${NS}/py-pool`;
const TTL = 10_000;
const CREATE = 'create sandboxes py-pool-*';
const STATUS = 'patch sandboxwarmpools py-pool/status';

/** A server whose next `resets` creates are made but answered with a connection reset, and which `reachable` creates reach at most. */
class FlakyServer extends FakeClient {
  public resets = 0;
  public reachable = Infinity;

  public override async create<T extends KubeObject>(type: ResourceType, ns: string | undefined, body: object, options?: object): Promise<T> {
    if (this.reachable-- <= 0) throw new Error('operator killed');
    const created = await super.create<T>(type, ns, body, options);
    if (this.resets-- > 0) throw new Error('connection reset');
    return created;
  }
}

function setup(o: { pool?: SandboxWarmPool; members?: Sandbox[]; live?: Sandbox[]; claimPressure?: ClaimPressure; elapsed?: { now: number } } = {}) {
  const clock = { now: NOW };
  const p = o.pool ?? pool();
  const members = o.members ?? [];
  const client = new FlakyServer(() => clock.now).seed(RESOURCE_OF, p, TEMPLATE, ...members, ...(o.live ?? []));
  const stores = poolStores();
  stores.pools.put(p);
  stores.templates.put(TEMPLATE);
  stores.sandboxes.put(...members);
  // Status coalescing is the plan's (plan.test.ts); here every change is written at once, so each pass's writes show.
  const reconciler = new WarmPoolReconciler({
    client,
    ...stores,
    flags: { ...FLAGS, statusWindowMs: 0 },
    now: () => clock.now,
    ...(o.elapsed ? { elapsed: () => o.elapsed!.now } : {}),
    memberWriteTtlMs: TTL,
    ...(o.claimPressure ? { claimPressure: o.claimPressure } : {}),
  });
  reconciler.follow(stores.sandboxes);
  /** The writes of one pass, member names masked (the pool picks them at random). */
  const pass = async (r: WarmPoolReconciler = reconciler) => {
    client.calls.length = 0;
    const result = await r.reconcile(KEY);
    return { writes: client.writes.map((w) => w.replace(/^create sandboxes py-pool-\w{5}$/, CREATE)), result };
  };
  /** Every watch caught up. */
  const catchUp = () => {
    stores.sandboxes.syncFrom(client, 'sandboxes');
    stores.pools.syncFrom(client, 'sandboxwarmpools');
  };
  const owned = () => [...client.live.values()].filter((obj) => obj.kind === 'Sandbox' && isControlledBy(obj, p.metadata.uid));
  return { client, stores, reconciler, clock, pass, catchUp, owned };
}

/** `sandbox` as a claim left it: controlled by the claim, out of the pool, a new resourceVersion. */
function claimed(sandbox: Sandbox): Sandbox {
  return member({ name: sandbox.metadata.name, owner: 'claim', labels: { 'agents.x-k8s.io/warm-pool-sandbox': undefined } });
}

const withVersion = (sandbox: Sandbox, resourceVersion: string): Sandbox => ({ ...sandbox, metadata: { ...sandbox.metadata, resourceVersion } });

describe('WarmPoolReconciler: members only from a template that is safe to build from', () => {
  const templateReady = (body: any) => body.status.conditions.find((c: any) => c.type === 'TemplateReady');
  const warnings = (client: FakeClient) => client.calls.filter((c) => c.verb === 'event').map((c) => `${c.body.type}/${c.body.reason}`);

  test('a Managed template whose NetworkPolicy the cache does not show: no member, NetworkPolicyNotReady; creates once it shows', async () => {
    const { client, stores, pass, catchUp } = setup();
    stores.networkPolicies.remove(NS, 'python-network-policy');
    expect((await pass()).writes).toEqual([STATUS]);
    expect(templateReady(client.calls.find((c) => c.verb === 'patch')!.body)).toMatchObject({ status: 'False', reason: 'NetworkPolicyNotReady' });
    expect(warnings(client)).toEqual(['Warning/NetworkPolicyNotReady']);
    catchUp();
    expect((await pass()).writes).toEqual([]);
    stores.networkPolicies.put(policyOf(TEMPLATE));
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE, STATUS]);
    expect(warnings(client)).toEqual(['Normal/TemplateReady']);
  });

  test('a policy someone else made under the template\'s policy name does not count', async () => {
    const { stores, pass } = setup();
    const foreign = policyOf(TEMPLATE);
    stores.networkPolicies.put({ ...foreign, metadata: { ...foreign.metadata, labels: {}, annotations: {} } });
    expect((await pass()).writes).toEqual([STATUS]);
  });

  test('an Unmanaged template needs no policy of ours', async () => {
    const unmanaged = template({ networkPolicyManagement: 'Unmanaged' });
    const { stores, pass } = setup();
    stores.templates.put(unmanaged);
    stores.networkPolicies.remove(NS, 'python-network-policy');
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE, STATUS]);
  });

  test('a missing template: TemplateNotFound in the condition, one Warning, cleared when the template appears', async () => {
    const { client, stores, pass, catchUp } = setup();
    stores.templates.remove(NS, 'python');
    expect((await pass()).writes).toEqual([STATUS]);
    expect(templateReady(client.calls.find((c) => c.verb === 'patch')!.body)).toMatchObject({
      status: 'False', reason: 'TemplateNotFound', message: expect.stringMatching(/SandboxTemplate "python" does not exist.*spec.sandboxTemplateRef.name/),
    });
    expect(warnings(client)).toEqual(['Warning/TemplateNotFound']);
    catchUp();
    await pass();
    expect(warnings(client)).toEqual([]);
    stores.templates.put(TEMPLATE);
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE, STATUS]);
  });

  test('a template whose Pods would carry the router\'s labels: no member, RouterLabelsRefused naming the label and the fix', async () => {
    const spoof = template({ podTemplate: { metadata: { labels: { app: 'sandbox-router' } }, spec: { containers: [{ name: 'main', image: 'python:3.12' }] } } });
    const { client, stores, pass } = setup();
    stores.templates.put(spoof);
    stores.networkPolicies.put(policyOf(spoof));
    expect((await pass()).writes).toEqual([STATUS]);
    expect(templateReady(client.calls.find((c) => c.verb === 'patch')!.body)).toMatchObject({
      status: 'False', reason: 'RouterLabelsRefused', message: expect.stringMatching(/app=sandbox-router.*remove it from spec.podTemplate.metadata.labels/),
    });
  });
});

describe('WarmPoolReconciler', () => {
  test('refill goes with the normal work only while claims wait on a pool short of Ready members', async () => {
    const pressure = new ClaimPressure(new FakeClock(), 10_000);
    pressure.waitingOn(`${NS}/a-claim`, KEY);
    // Empty (0 Ready, low water 1) with a claim waiting: its creates are what the claim needs.
    const short = setup({ claimPressure: pressure });
    await short.pass();
    expect(pressure.membersWanted(KEY)).toBe(true);
    expect(short.client.calls.filter((c) => c.verb === 'create').map((c) => (c.options as any).priority)).toEqual(['normal', 'normal', 'normal']);
    // Ready members above low water: the claim is served from them, refill waits in the background.
    const spare = setup({ claimPressure: pressure, members: [member(), member()] });
    await spare.pass();
    expect(pressure.membersWanted(KEY)).toBe(false);
  });

  test('more claims than Ready members: the pool is short above its low-water mark, and its refill goes at once, with the normal work', async () => {
    const pressure = new ClaimPressure(new FakeClock(), 10_000);
    for (const c of ['a', 'b']) pressure.waitingOn(`${NS}/${c}-claim`, KEY);
    // 2 Ready for 2 claims (low water 1): covered, so the one create waits for the claims.
    const covered = setup({ claimPressure: pressure, members: [member(), member()] });
    await covered.pass();
    expect([pressure.membersWanted(KEY), covered.client.calls.filter((c) => c.verb === 'create').length]).toEqual([false, 0]);
    // A third claim: the Ready members no longer cover the claims.
    pressure.waitingOn(`${NS}/c-claim`, KEY);
    const uncovered = setup({ claimPressure: pressure, members: [member(), member()] });
    await uncovered.pass();
    expect(pressure.membersWanted(KEY)).toBe(true);
    expect(uncovered.client.calls.filter((c) => c.verb === 'create').map((c) => (c.options as any).priority)).toEqual(['normal']);
  });

  test('a deleted pool is no longer short: its entry in the claim pressure goes with it', async () => {
    const pressure = new ClaimPressure(new FakeClock(), 10_000);
    pressure.waitingOn(`${NS}/a-claim`, KEY);
    const short = setup({ claimPressure: pressure });
    await short.pass();
    expect(pressure.membersWanted(KEY)).toBe(true);
    short.stores.pools.remove(NS, 'py-pool');
    await short.pass();
    expect(pressure.membersWanted(KEY)).toBe(false);
  });

  test('an empty pool: every member created from the template, named as its pod-name annotation says, then the status', async () => {
    const { client, pass } = setup();
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE, STATUS]);
    const creates = client.calls.filter((c) => c.verb === 'create');
    for (const c of creates) {
      expect(c.body.metadata.annotations[SandboxAnnotations.POD_NAME]).toBe(c.name);
      expect(c.options).toEqual({ fieldManager: POOL_FIELD_MANAGER, priority: 'background' });
    }
    expect(new Set(creates.map((c) => c.name)).size).toBe(3);
    expect(client.calls.at(-1)!.body).toEqual({
      status: {
        replicas: 0,
        readyReplicas: 0,
        selector: expect.any(String),
        observedGeneration: 2,
        conditions: [expect.objectContaining({ type: 'TemplateReady', status: 'True', reason: 'TemplateReady' })],
      },
    });
  });

  test('a pass on caches that have shown nothing yet writes nothing: no second create, no second status', async () => {
    const { pass, catchUp } = setup();
    await pass();
    expect((await pass()).writes).toEqual([]);
    catchUp();
    expect((await pass()).writes).toEqual([STATUS]);
    catchUp();
    expect((await pass()).writes).toEqual([]);
  });

  test('a foreign change to the pool wins over our last status write', async () => {
    const { client, stores, pass } = setup();
    await pass();
    const scaledUp = { ...pool({ replicas: 4 }), metadata: { ...pool().metadata, resourceVersion: '900' } };
    client.live.set('sandboxwarmpools/py-pool', scaledUp);
    stores.pools.put(scaledUp);
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
  });

  test('a delete the cache has not shown is not made twice; the member counts as going away meanwhile', async () => {
    const members = [member({ name: 'py-pool-old', age: 120_000 }), member({ name: 'py-pool-new' })];
    const { client, pass, catchUp } = setup({ pool: pool({ replicas: 1 }), members });
    expect((await pass()).writes).toEqual(['delete sandboxes py-pool-new', STATUS]);
    expect((await pass()).writes).toEqual([STATUS]);
    expect(client.calls.at(-1)!.body.status.replicas).toBe(1);
    catchUp();
    expect((await pass()).writes).toEqual([]);
  });

  test('a scale-down delete that loses to a claim (409 on the resourceVersion) leaves the member to the claim', async () => {
    const doomed = member({ name: 'py-pool-a' });
    const { client, pass, catchUp } = setup({ pool: pool({ replicas: 0 }), members: [doomed] });
    client.live.set('sandboxes/py-pool-a', withVersion(claimed(doomed), '150'));
    await expect(pass()).resolves.toMatchObject({ writes: ['delete sandboxes py-pool-a', STATUS] });
    expect(client.live.get('sandboxes/py-pool-a')).toBeDefined();
    catchUp();
    expect((await pass()).writes).toEqual([STATUS]);
    expect(client.live.get('sandboxes/py-pool-a')).toBeDefined();
  });

  test('an adoption that loses to a claim (409) is not an error; the next pass refills what the claim took', async () => {
    const orphan = member({ name: 'py-pool-orphan', owner: 'none' });
    const { client, pass, catchUp, owned } = setup({ members: [orphan] });
    client.live.set('sandboxes/py-pool-orphan', withVersion(claimed(orphan), '150'));
    expect((await pass()).writes).toEqual(['patch sandboxes py-pool-orphan', CREATE, CREATE, STATUS]);
    catchUp();
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
    expect(owned()).toHaveLength(3);
  });

  test('crash half-way through the creates: a fresh reconciler over the server\'s state creates only the rest', async () => {
    const first = setup();
    // The operator dies after the first wave (one create): the second wave's calls never reach the server.
    first.client.reachable = 1;
    await first.pass();
    expect(first.owned()).toHaveLength(1);
    const { client, stores, pass, catchUp, owned } = setup();
    for (const obj of first.owned()) client.live.set(`sandboxes/${obj.metadata.name}`, obj);
    catchUp();
    expect(stores.sandboxes.list()).toHaveLength(1);
    expect((await pass()).writes).toEqual([CREATE, CREATE, STATUS]);
    expect(owned()).toHaveLength(3);
  });

  test('a lost event holds its slot until the TTL; the pass that wrote looks again then, and creates anew', async () => {
    const { client, clock, pass } = setup({ pool: pool({ replicas: 1 }) });
    expect(await pass()).toEqual({ writes: [CREATE, STATUS], result: { requeueAfterMs: TTL } });
    // The member was deleted, and neither its add nor its delete event ever arrived.
    for (const obj of [...client.live.values()]) if (obj.kind === 'Sandbox') client.live.delete(`sandboxes/${obj.metadata.name}`);
    clock.now += TTL - 1;
    expect(await pass()).toEqual({ writes: [], result: { requeueAfterMs: 1 } });
    clock.now += 1;
    expect((await pass()).writes).toEqual([CREATE]);
  });

  test('a wall-clock step changes no write\'s TTL: measured on the elapsed clock, an hour forward creates nothing twice, an hour back waits no hour', async () => {
    const HOUR = 3_600_000;
    const elapsed = { now: 0 };
    const { clock, pass } = setup({ pool: pool({ replicas: 1 }), elapsed });
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
    // The member's event has not arrived; the wall clock jumps an hour ahead.
    clock.now += HOUR;
    expect(await pass()).toEqual({ writes: [], result: { requeueAfterMs: TTL } });
    // And back, with the TTL run out on the elapsed clock: the slot is freed then, not an hour later.
    clock.now -= HOUR;
    elapsed.now += TTL;
    expect((await pass()).writes).toEqual([CREATE]);

    // The negative control: TTLs on the wall clock (no elapsed clock) end at the step and create again.
    const wall = setup({ pool: pool({ replicas: 1 }) });
    expect((await wall.pass()).writes).toEqual([CREATE, STATUS]);
    wall.clock.now += HOUR;
    expect((await wall.pass()).writes).toEqual([CREATE]);
  });

  test('a wall clock ahead of the API server\'s makes no member stuck at birth: it is replaced after the grace period this process watched it', async () => {
    const HOUR = 3_600_000;
    const fresh = () => member({ name: 'py-pool-new', conditions: [] });
    const elapsed = { now: 0 };
    const { clock, pass } = setup({ pool: pool({ replicas: 1 }), members: [fresh()], elapsed });
    clock.now += HOUR;
    expect((await pass()).writes.filter((w) => w.startsWith('delete'))).toEqual([]);
    elapsed.now += GRACE - 1;
    expect((await pass()).writes.filter((w) => w.startsWith('delete'))).toEqual([]);
    elapsed.now += 1;
    expect((await pass()).writes).toContain('delete sandboxes py-pool-new');
    // (By the timestamps alone it would have gone at the first pass: classify.test.ts.)
  });

  test('a refused create (4xx) frees its slot at once and skips the rest of the pass', async () => {
    const { client, pass } = setup();
    client.failOnce({ verb: 'create', resource: 'sandboxes', error: apiError(403, 'Forbidden', 'exceeded quota') });
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE]);
  });

  test('a create of unknown outcome keeps its slot until the cache shows the member, or the TTL', async () => {
    const { client, pass, catchUp, owned } = setup({ pool: pool({ replicas: 1 }) });
    client.resets = 1;
    expect((await pass()).writes).toEqual([CREATE, STATUS]);
    expect((await pass()).writes).toEqual([]);
    catchUp();
    expect((await pass()).writes).toEqual([STATUS]);
    expect(owned()).toHaveLength(1);

    // Not made at all: held until the TTL.
    const lost = setup({ pool: pool({ replicas: 1 }) });
    lost.client.failOnce({ verb: 'create', resource: 'sandboxes', error: new Error('socket hang up') });
    await lost.pass();
    lost.clock.now += TTL - 1;
    expect((await lost.pass()).writes).toEqual([]);
    lost.clock.now += 1;
    expect((await lost.pass()).writes).toEqual([CREATE]);
  });

  test('a name collision (AlreadyExists) is retried under another name', async () => {
    const { client, pass, owned } = setup({ pool: pool({ replicas: 1 }) });
    client.failOnce({ verb: 'create', resource: 'sandboxes', error: apiError(409, 'AlreadyExists') });
    expect((await pass()).writes).toEqual([CREATE, CREATE, STATUS]);
    expect(owned()).toHaveLength(1);
  });

  test('a pool deleted and created again under its name starts afresh: the old one\'s creates do not hold it back', async () => {
    const { client, stores, pass } = setup();
    await pass();
    stores.pools.remove(NS, 'py-pool');
    expect((await pass()).writes).toEqual([]);
    const again = pool({}, { uid: 'new-pool-uid' });
    client.live.set('sandboxwarmpools/py-pool', again);
    stores.pools.put(again);
    expect((await pass()).writes).toEqual([CREATE, CREATE, CREATE, STATUS]);
  });

  test('a pool being deleted is left to garbage collection', async () => {
    const { pass } = setup({ pool: pool({}, { deletionTimestamp: '2026-09-01T11:00:00Z' }) });
    expect((await pass()).writes).toEqual([]);
  });
});
