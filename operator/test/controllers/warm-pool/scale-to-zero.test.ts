/**
 * Warm pools that scale to zero (scaleToZeroAfterSeconds): the idle decision, the plan it gives
 * (members, condition, status.lastClaimTime, the timer), and the reconciler reading the pool's
 * claims from the cache. Pools without the field are the negative control throughout: their plans
 * and writes must not change.
 */
import { FLAGS, NOW, NS, TEMPLATE, iso, member, pool } from './fixtures';
import { RESOURCE_OF, poolStores } from './harness';
import { CLAIMS_BY_POOL_INDEX } from '../../../src/controllers/extension-informers';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { poolKeyOfClaim, poolKeyOfNewClaim } from '../../../src/controllers/warm-pool/controller';
import { INITIAL_POOL_STATE, planPool, type PoolPlan, type PoolState } from '../../../src/controllers/warm-pool/plan';
import { WarmPoolReconciler } from '../../../src/controllers/warm-pool/reconcile';
import { scaleToZero } from '../../../src/controllers/warm-pool/scale-to-zero';
import { findCondition, metaTime, type Sandbox, type SandboxClaim, type SandboxWarmPool } from '../../../src/model';
import { wasScaledToZeroAt } from '../../../src/model/warm-pool-scale';
import { FakeClient, FakeStore } from '../../fake-kube';
import { claim } from '../claim/fixtures';

const PERIOD_S = 60;
const PERIOD = PERIOD_S * 1000;
/** A pool with the field, created ten periods ago. */
const idlePool = (status?: SandboxWarmPool['status'], spec: Partial<SandboxWarmPool['spec']> = {}): SandboxWarmPool =>
  ({ ...pool({ scaleToZeroAfterSeconds: PERIOD_S, ...spec }, { creationTimestamp: metaTime(NOW - 10 * PERIOD) }), ...(status ? { status } : {}) });
/** The negative control: the same pool without the field. */
const plainPool = (status?: SandboxWarmPool['status']): SandboxWarmPool =>
  ({ ...pool({}, { creationTimestamp: metaTime(NOW - 10 * PERIOD) }), ...(status ? { status } : {}) });
const readyMembers = (n: number) => Array.from({ length: n }, () => member());

interface Setup {
  readonly sandboxes?: Sandbox[];
  readonly newestClaimMs?: number;
  readonly now?: number;
  readonly state?: PoolState;
  readonly flags?: typeof FLAGS;
}

function plan(p: SandboxWarmPool, o: Setup = {}): PoolPlan {
  const now = o.now ?? NOW;
  const flags = o.flags ?? FLAGS;
  return planPool({
    pool: p,
    template: TEMPLATE,
    gate: { ok: true },
    members: classifyMembers(p, TEMPLATE, o.sandboxes ?? [], now, flags),
    pendingCreates: 0,
    state: o.state ?? INITIAL_POOL_STATE,
    flags,
    now,
    ...(o.newestClaimMs !== undefined ? { newestClaimMs: o.newestClaimMs } : {}),
  });
}
const scaledToZero = (p: PoolPlan) => findCondition(p.status.conditions, 'ScaledToZero');

describe('planPool with scaleToZeroAfterSeconds', () => {
  test('idle (no claim for the period): every unclaimed member goes by the scale-down path, replicas untouched, the condition says so', () => {
    const p = plan(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }), { sandboxes: readyMembers(3) });
    expect([p.creates, p.deletes.map((d) => d.cause)]).toEqual([0, ['scale-down', 'scale-down', 'scale-down']]);
    expect(p.status.replicas).toBe(3);
    expect(scaledToZero(p)).toMatchObject({
      status: 'True',
      reason: 'NoRecentClaims',
      message: `No claim for 60 s (last claim: ${metaTime(NOW - 2 * PERIOD)}): keeping no warm members (replicas stays 3); the next claim starts cold and refills the pool`,
    });
    // Idle: nothing to time; a claim's creation wakes the pool.
    expect(p.requeueAfterMs).toBeUndefined();
    // Negative control: the same pool without the field keeps its members.
    expect(plan(plainPool(), { sandboxes: readyMembers(3) }).deletes).toEqual([]);
  });

  test('a pool that never had a claim is idle a period after its creation, and says so', () => {
    const young = { ...idlePool(), metadata: { ...idlePool().metadata, creationTimestamp: metaTime(NOW - PERIOD + 5000) } };
    const p = plan(young, { sandboxes: readyMembers(3) });
    expect([p.deletes.length, scaledToZero(p)?.status, p.requeueAfterMs]).toEqual([0, 'False', 5000]);
    const later = plan(young, { sandboxes: readyMembers(3), now: NOW + 5000 });
    expect(later.deletes).toHaveLength(3);
    expect(scaledToZero(later)?.message).toContain(`last claim: none since the pool was created at ${metaTime(NOW - PERIOD + 5000)}`);
  });

  test('a recent claim in the cache keeps replicas, and the pass is timed to the idle moment', () => {
    const p = plan(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }), { sandboxes: readyMembers(2), newestClaimMs: NOW - 10_000 });
    expect([p.creates, p.deletes.length]).toEqual([1, 0]);
    expect(scaledToZero(p)).toMatchObject({ status: 'False', reason: 'RecentClaims' });
    expect(p.requeueAfterMs).toBe(PERIOD - 10_000);
  });

  test('the idle moment is exact: 1 ms before it the pool keeps its members and looks again then; at it they go', () => {
    const p = idlePool({ lastClaimTime: metaTime(NOW - PERIOD) });
    const before = plan(p, { sandboxes: readyMembers(3), now: NOW - 1 });
    expect([before.deletes.length, before.requeueAfterMs]).toEqual([0, 1]);
    expect(plan(p, { sandboxes: readyMembers(3), now: NOW }).deletes).toHaveLength(3);
  });

  test('at zero, a claim brings the pool back to replicas at once (no replenish hold), with its time recorded', () => {
    const flags = { ...FLAGS, replenishDelayMs: 30_000 };
    const atZero = plan(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }), { flags });
    expect([atZero.creates, scaledToZero(atZero)?.status]).toEqual([0, 'True']);
    const woken = plan({ ...idlePool(atZero.status) }, { newestClaimMs: NOW, now: NOW + 5, state: atZero.state, flags });
    expect([woken.creates, woken.statusChanged, scaledToZero(woken)?.status]).toEqual([3, true, 'False']);
    expect(woken.status.lastClaimTime).toBe(metaTime(NOW));
  });

  test('the deleted claims of a pool do not make it idle early: status.lastClaimTime keeps the clock', () => {
    const p = idlePool({ lastClaimTime: metaTime(NOW - 30_000) });
    expect(plan(p, { sandboxes: readyMembers(3) }).deletes).toEqual([]);
  });

  test('an HPA-set replicas is the target when not idle, and stays as it is when idle (never written)', () => {
    const scaled = idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }, { replicas: 7 });
    const idle = plan(scaled, { sandboxes: readyMembers(3) });
    expect(scaledToZero(idle)?.message).toContain('replicas stays 7');
    expect(plan(scaled, { newestClaimMs: NOW }).creates).toBe(7);
  });
});

describe('status.lastClaimTime: coalesced to a quarter of the period', () => {
  const recorded = NOW - 30_000;
  const at = (newestClaimMs: number) => scaleToZero({ pool: idlePool({ lastClaimTime: metaTime(recorded) }), newestClaimMs, now: NOW })!;

  test('a claim a quarter period newer or less is not recorded; more is', () => {
    expect([at(recorded + PERIOD / 4).lastClaimAdvanced, at(recorded + PERIOD / 4).lastClaimTime]).toEqual([false, metaTime(recorded)]);
    expect([at(recorded + PERIOD / 4 + 1000).lastClaimAdvanced, at(recorded + PERIOD / 4 + 1000).lastClaimTime])
      .toEqual([true, metaTime(recorded + PERIOD / 4 + 1000)]);
  });

  test('a newer claim does not change the condition\'s message (it would be a status write per claim)', () => {
    expect(at(recorded + 1000).condition).toEqual(at(recorded + 2000).condition);
  });

  test('it rides with the replica counts: held within the status window, written at its end', () => {
    const p = idlePool({ lastClaimTime: metaTime(recorded) });
    const first = plan(p, { sandboxes: readyMembers(3), newestClaimMs: recorded + 1000 });
    const settled = { ...p, status: first.status };
    const soon = plan(settled, { sandboxes: readyMembers(3), newestClaimMs: NOW, now: NOW + 100, state: first.state });
    expect([soon.statusChanged, soon.requeueAfterMs]).toEqual([false, FLAGS.statusWindowMs - 100]);
    const later = plan(settled, { sandboxes: readyMembers(3), newestClaimMs: NOW, now: NOW + FLAGS.statusWindowMs, state: soon.state });
    expect([later.statusChanged, later.status.lastClaimTime]).toEqual([true, metaTime(NOW)]);
  });

  test('a busy pool (a claim a second for two periods) writes it about once per quarter period, not per claim', () => {
    let p = idlePool({ lastClaimTime: metaTime(NOW - PERIOD) });
    let state = INITIAL_POOL_STATE;
    let writes = 0;
    for (let t = NOW; t < NOW + 2 * PERIOD; t += 1000) {
      const next = plan(p, { sandboxes: readyMembers(3), newestClaimMs: t, now: t, state });
      state = next.state;
      if (next.statusChanged) {
        writes++;
        p = { ...p, status: next.status };
      }
    }
    expect(writes).toBeGreaterThanOrEqual(6);
    expect(writes).toBeLessThanOrEqual(9);
  });
});

describe('pools without scaleToZeroAfterSeconds: unchanged', () => {
  test('the claims seen change nothing in the plan; no lastClaimTime, no ScaledToZero', () => {
    for (const sandboxes of [[], readyMembers(2), readyMembers(5)]) {
      const base = plan(plainPool(), { sandboxes });
      const withClaims = plan(plainPool(), { sandboxes, newestClaimMs: NOW - 1000 });
      expect(withClaims).toEqual(base);
      expect(withClaims.status.lastClaimTime).toBeUndefined();
      expect(scaledToZero(withClaims)).toBeUndefined();
    }
    const settled = plan(plainPool(), { sandboxes: readyMembers(3) });
    expect(plan(plainPool(settled.status), { sandboxes: readyMembers(3), newestClaimMs: NOW }).statusChanged).toBe(false);
  });

  test('the field unset again: ScaledToZero is dropped in one write, and the pool refills to replicas', () => {
    const wasIdle = plan(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }));
    const p = plan(plainPool(wasIdle.status));
    expect([p.creates, p.statusChanged, scaledToZero(p)]).toEqual([3, true, undefined]);
  });
});

describe('wasScaledToZeroAt: how the claim controller reads the pool', () => {
  const claimAt = NOW;
  const withCondition = (status: 'True' | 'False', at: number, reason = status === 'True' ? 'NoRecentClaims' : 'RecentClaims') =>
    idlePool({ conditions: [{ type: 'ScaledToZero', status, reason, message: '', lastTransitionTime: metaTime(at) }] });

  test('True, or turned False no earlier than the claim\'s second in a pool old enough to have been idle', () => {
    expect(wasScaledToZeroAt(withCondition('True', NOW - PERIOD), claimAt)).toBe(true);
    expect(wasScaledToZeroAt(withCondition('False', NOW + 200), claimAt + 400)).toBe(true);
  });

  test('negative controls: False before the claim, a young pool, no field', () => {
    expect(wasScaledToZeroAt(withCondition('False', NOW - 5000), claimAt)).toBe(false);
    const young = withCondition('False', NOW);
    expect(wasScaledToZeroAt({ ...young, metadata: { ...young.metadata, creationTimestamp: metaTime(NOW - 1000) } }, claimAt)).toBe(false);
    expect(wasScaledToZeroAt({ ...withCondition('True', NOW), spec: plainPool().spec }, claimAt)).toBe(false);
  });
});

describe('WarmPoolReconciler: the pool\'s claims from the cache', () => {
  const KEY = `${NS}/py-pool`;
  const claimsStore = () => new FakeStore<SandboxClaim>({ [CLAIMS_BY_POOL_INDEX]: (c) => [`${c.metadata.namespace}/${c.spec.warmPoolRef.name}`] });

  function setup(p: SandboxWarmPool, members: Sandbox[]) {
    const client = new FakeClient(() => NOW).seed(RESOURCE_OF, p, TEMPLATE, ...members);
    const stores = { ...poolStores(), claims: claimsStore() };
    stores.pools.put(p);
    stores.templates.put(TEMPLATE);
    stores.sandboxes.put(...members);
    const reconciler = new WarmPoolReconciler({ client, ...stores, flags: { ...FLAGS, statusWindowMs: 0 }, now: () => NOW });
    const pass = async () => {
      client.calls.length = 0;
      const result = await reconciler.reconcile(KEY);
      const status = client.calls.find((c) => c.verb === 'patch' && c.options?.subresource === 'status')?.body?.status;
      return { writes: client.writes, status, result };
    };
    return { stores, pass };
  }

  test('idle with no claim: members deleted; a claim in the cache: kept, its time recorded, a timer at the idle moment', async () => {
    const members = readyMembers(2);
    const idle = setup(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }, { replicas: 2 }), members);
    const first = await idle.pass();
    expect(first.writes.filter((w) => w.startsWith('delete'))).toHaveLength(2);
    expect(first.status.conditions.find((c: any) => c.type === 'ScaledToZero')).toMatchObject({ status: 'True' });

    const busy = setup(idlePool({ lastClaimTime: metaTime(NOW - 2 * PERIOD) }, { replicas: 2 }), readyMembers(2));
    busy.stores.claims.put(claim({}, { name: 'old', creationTimestamp: iso(NOW - 3 * PERIOD) }), claim({}, { name: 'new', creationTimestamp: iso(NOW - 5000) }));
    const kept = await busy.pass();
    expect(kept.writes.filter((w) => w.startsWith('delete'))).toEqual([]);
    expect(kept.status.lastClaimTime).toBe(metaTime(NOW - 5000));
    expect(kept.result?.requeueAfterMs).toBe(PERIOD - 5000);
  });

  test('negative control: a pool without the field writes what it wrote before, claims or not', async () => {
    const withoutClaims = await setup(plainPool(), readyMembers(3)).pass();
    const withClaims = setup(plainPool(), readyMembers(3));
    withClaims.stores.claims.put(claim({}, { creationTimestamp: iso(NOW) }));
    const seen = await withClaims.pass();
    expect(seen).toEqual(withoutClaims);
    expect(seen.status).not.toHaveProperty('lastClaimTime');
  });

  test('a claim wakes its pool only when the pool scales to zero', () => {
    const pools = new FakeStore<SandboxWarmPool>().put(idlePool());
    expect(poolKeyOfClaim(claim(), pools)).toBe(KEY);
    expect(poolKeyOfClaim(claim(), new FakeStore<SandboxWarmPool>().put(plainPool()))).toBeUndefined();
    expect(poolKeyOfClaim(claim({ warmPoolRef: { name: 'other' } }), pools)).toBeUndefined();
  });

  test('a new claim also wakes a pool whose refill waits for its claims, and no other', () => {
    const plain = new FakeStore<SandboxWarmPool>().put(plainPool());
    const held = new Set([KEY]);
    expect(poolKeyOfNewClaim(claim(), plain, (k) => held.has(k))).toBe(KEY);
    expect(poolKeyOfNewClaim(claim(), plain, () => false)).toBeUndefined();
    expect(poolKeyOfNewClaim(claim({ warmPoolRef: { name: 'other' } }), plain, (k) => held.has(k))).toBeUndefined();
  });
});
