import * as fc from 'fast-check';
import { FLAGS, GRACE, NOW, TEMPLATE, iso, member, notReady, pool, ready, template, unschedulable } from './fixtures';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { INITIAL_POOL_STATE, planPool, type PoolPlan, type PoolPlanInput, type PoolState } from '../../../src/controllers/warm-pool/plan';
import { poolFlags, type PoolFlags } from '../../../src/controllers/warm-pool/types';
import { type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import { type TemplateGate } from '../../../src/model/template-gate';

const NEW_IMAGE = template({ podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });

interface Setup {
  readonly pool?: SandboxWarmPool;
  readonly template?: SandboxTemplate | null;
  readonly sandboxes?: Sandbox[];
  readonly pendingCreates?: number;
  readonly state?: PoolState;
  readonly flags?: PoolFlags;
  readonly now?: number;
  readonly elapsed?: number;
  readonly gate?: TemplateGate;
}

function plan(s: Setup): PoolPlan {
  const p = s.pool ?? pool();
  const t = s.template === null ? undefined : s.template ?? TEMPLATE;
  const flags = s.flags ?? FLAGS;
  const now = s.now ?? NOW;
  const input: PoolPlanInput = {
    pool: p,
    template: t,
    gate: s.gate ?? { ok: true },
    members: classifyMembers(p, t, s.sandboxes ?? [], now, flags),
    pendingCreates: s.pendingCreates ?? 0,
    state: s.state ?? INITIAL_POOL_STATE,
    flags,
    now,
    ...(s.elapsed !== undefined ? { elapsed: s.elapsed } : {}),
  };
  return planPool(input);
}

const readyMembers = (n: number, extra: Parameters<typeof member>[0] = {}) => Array.from({ length: n }, () => member(extra));
const names = (p: PoolPlan) => p.deletes.map((d) => `${d.cause}:${d.sandbox.metadata.name}`);

describe('planPool: the template gate', () => {
  const closed: TemplateGate = { ok: false, reason: 'NetworkPolicyNotReady', message: 'NetworkPolicy "python-network-policy" ... does not exist yet' };
  const withCondition = (reason: string, status: 'True' | 'False' = 'False'): SandboxWarmPool =>
    ({ ...pool(), status: { conditions: [{ type: 'TemplateReady', status, reason, message: '', lastTransitionTime: iso(NOW - 1000), observedGeneration: 2 }] } });

  test('closed: no creates, the condition says why, one Warning naming the reason; deletes and status go on', () => {
    const p = plan({ gate: closed, sandboxes: readyMembers(5) });
    expect(p.creates).toBe(0);
    expect(p.deletes).toHaveLength(2);
    expect(p.status.conditions).toEqual([expect.objectContaining({ type: 'TemplateReady', status: 'False', reason: 'NetworkPolicyNotReady', message: closed.message })]);
    expect(p.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'NetworkPolicyNotReady', message: closed.message })]);
  });

  test('the Warning is given once per cause: the condition already saying so (also after a restart) gives none', () => {
    expect(plan({ gate: closed, pool: withCondition('NetworkPolicyNotReady') }).events).toEqual([]);
    expect(plan({ gate: { ...closed, reason: 'TemplateNotFound' }, pool: withCondition('NetworkPolicyNotReady') }).events)
      .toEqual([expect.objectContaining({ type: 'Warning', reason: 'TemplateNotFound' })]);
  });

  test('open again: creates resume, the condition turns True, one Normal event', () => {
    const p = plan({ gate: { ok: true }, pool: withCondition('TemplateNotFound') });
    expect(p.creates).toBe(3);
    expect(p.status.conditions).toEqual([expect.objectContaining({ status: 'True', reason: 'TemplateReady' })]);
    expect(p.events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'TemplateReady' })]);
    expect(plan({ gate: { ok: true }, pool: withCondition('TemplateReady', 'True') }).events).toEqual([]);
  });
});

describe('planPool', () => {
  test('an empty pool creates every member, in slow-start waves', () => {
    const p = plan({});
    expect([p.creates, p.createWaves, p.deletes]).toEqual([3, [1, 2], []]);
    expect(p.status).toEqual({
      replicas: 0,
      readyReplicas: 0,
      selector: expect.stringMatching(/^agents\.x-k8s\.io\/warm-pool-sandbox=/),
      observedGeneration: 2,
      conditions: [expect.objectContaining({ type: 'TemplateReady', status: 'True', reason: 'TemplateReady', message: 'Members can be built from the template' })],
    });
  });

  test('a full pool does nothing, and an unchanged status is not written', () => {
    const sandboxes = readyMembers(3);
    const first = plan({ sandboxes });
    expect([first.creates, first.deletes.length, first.statusChanged]).toEqual([0, 0, true]);
    const again = plan({ pool: { ...pool(), status: first.status }, sandboxes });
    expect(again.statusChanged).toBe(false);
    expect(again.requeueAfterMs).toBeUndefined();
  });

  describe('replica counts coalesce after a status write', () => {
    const written = (sandboxes: Sandbox[], at: number) => {
      const p = plan({ sandboxes, now: at });
      expect(p.statusChanged).toBe(true);
      return { status: p.status, state: p.state };
    };

    test('a count change within the window waits for its end, then is written once', () => {
      const first = written(readyMembers(3), NOW);
      const fewer = readyMembers(2);
      const soon = plan({ pool: { ...pool(), status: first.status }, sandboxes: fewer, state: first.state, now: NOW + 300 });
      expect(soon.statusChanged).toBe(false);
      expect(soon.requeueAfterMs).toBe(FLAGS.statusWindowMs - 300);
      const later = plan({ pool: { ...pool(), status: first.status }, sandboxes: fewer, state: soon.state, now: NOW + FLAGS.statusWindowMs });
      expect(later.statusChanged).toBe(true);
      expect(later.status.readyReplicas).toBe(2);
      expect(later.state.statusWrittenAtMs).toBe(NOW + FLAGS.statusWindowMs);
    });

    test('the window runs on the elapsed clock: a wall clock stepped an hour back holds the counts no hour', () => {
      const HOUR = 3_600_000;
      const first = plan({ sandboxes: readyMembers(3), now: NOW, elapsed: 5_000 });
      expect(first.state.statusWrittenAtMs).toBe(5_000);
      const fewer = readyMembers(2);
      const back = plan({
        pool: { ...pool(), status: first.status }, sandboxes: fewer, state: first.state, now: NOW - HOUR, elapsed: 5_000 + FLAGS.statusWindowMs,
      });
      expect(back.statusChanged).toBe(true);
      expect(back.status.readyReplicas).toBe(2);
      // The negative control: on the wall clock the step back holds them for the hour.
      const wall = written(readyMembers(3), NOW);
      const held = plan({ pool: { ...pool(), status: wall.status }, sandboxes: fewer, state: wall.state, now: NOW - HOUR });
      expect(held.statusChanged).toBe(false);
      expect(held.requeueAfterMs).toBe(HOUR + FLAGS.statusWindowMs);
    });

    test('a condition change is written at once, counts or not', () => {
      const first = written(readyMembers(3), NOW);
      const gated = plan({ pool: { ...pool(), status: first.status }, sandboxes: readyMembers(2), state: first.state, now: NOW + 10, gate: { ok: false, reason: 'TemplateNotFound', message: 'gone' } });
      expect(gated.statusChanged).toBe(true);
    });

    test('0s writes every change at once', () => {
      const first = written(readyMembers(3), NOW);
      const flags = { ...FLAGS, statusWindowMs: 0 };
      const next = plan({ pool: { ...pool(), status: first.status }, sandboxes: readyMembers(2), state: first.state, now: NOW + 1, flags });
      expect(next.statusChanged).toBe(true);
    });

    test('the first write of a process is never held', () => {
      expect(plan({ pool: { ...pool(), status: { replicas: 5, readyReplicas: 5 } }, sandboxes: readyMembers(3) }).statusChanged).toBe(true);
    });
  });

  test('the status as the API server returns it (keys sorted) is not written again', () => {
    const sandboxes = readyMembers(3);
    const first = plan({ sandboxes });
    const fromServer = JSON.parse(JSON.stringify(sortedKeys(first.status)));
    expect(JSON.stringify(fromServer.conditions)).not.toBe(JSON.stringify(first.status.conditions));
    expect(plan({ pool: { ...pool(), status: fromServer }, sandboxes }).statusChanged).toBe(false);
  });

  test.each<[string, Setup, number]>([
    ['creates in flight count', { sandboxes: readyMembers(1), pendingCreates: 1 }, 1],
    ['terminating members count', { sandboxes: [...readyMembers(2), member({ deleting: true })] }, 0],
    ['young not-Ready members count', { sandboxes: [...readyMembers(2), member({ conditions: [notReady(iso(NOW - 1000))], age: 1000 })] }, 0],
    ['replicas unset means 1', { pool: pool({ replicas: undefined }) }, 1],
    ['replicas 0 creates nothing', { pool: pool({ replicas: 0 }) }, 0],
    ['no template, no creates', { template: null }, 0],
    ['the batch size caps a pass', { pool: pool({ replicas: 10 }), flags: poolFlags({ 'sandbox-warm-pool-max-batch-size': 4 }) }, 4],
    ['more in flight than needed: nothing, never negative', { sandboxes: readyMembers(2), pendingCreates: 5 }, 0],
  ])('creates: %s', (_, setup, creates) => {
    expect(plan(setup).creates).toBe(creates);
  });

  test('a stuck member is deleted, and replaced only once it is gone', () => {
    const stuck = member({ name: 'stuck', conditions: [], age: GRACE + 1 });
    const p = plan({ sandboxes: [...readyMembers(2), stuck] });
    expect(names(p)).toEqual(['stuck:stuck']);
    expect(p.creates).toBe(0);
    expect(p.deletes[0]).toMatchObject({ uid: 'stuck-uid', resourceVersion: '100' });
  });

  test('Recreate deletes stale members; OnReplenish keeps them', () => {
    const recreate = pool({ updateStrategy: { type: 'Recreate' } });
    const old = member({ name: 'old', template: NEW_IMAGE, pool: recreate });
    expect(names(plan({ pool: recreate, sandboxes: [...readyMembers(2, { pool: recreate }), old] }))).toEqual(['stale:old']);
    const owned = { ...old, metadata: { ...old.metadata, ownerReferences: member().metadata.ownerReferences } };
    expect(names(plan({ sandboxes: [...readyMembers(2), owned] }))).toEqual([]);
  });

  test('scale-down: not Ready first, then stale, then newest; never below replicas', () => {
    const sandboxes = [
      member({ name: 'old-ready', age: 50_000 }),
      member({ name: 'new-ready', age: 1000 }),
      member({ name: 'mid-ready', age: 20_000 }),
      member({ name: 'stale-old', age: 90_000, template: NEW_IMAGE }),
      member({ name: 'not-ready', age: 500, conditions: [notReady(iso(NOW - 500))] }),
    ];
    expect(names(plan({ pool: pool({ replicas: 2 }), sandboxes }))).toEqual(['scale-down:not-ready', 'scale-down:stale-old', 'scale-down:new-ready']);
    expect(names(plan({ pool: pool({ replicas: 0 }), sandboxes })).length).toBe(5);
    expect(plan({ pool: pool({ replicas: 2 }), sandboxes }).deleteWaves).toEqual([1, 2]);
  });

  test('orphans are adopted and counted, not deleted for scale-down', () => {
    const orphan = member({ name: 'orphan', owner: 'none' });
    const p = plan({ pool: pool({ replicas: 1 }), sandboxes: [orphan, member({ name: 'mine' })] });
    expect(p.adopt).toEqual([orphan]);
    expect(names(p)).toEqual(['scale-down:mine']);
  });

  test('deletes beyond the batch size wait for the next pass', () => {
    const p = plan({ pool: pool({ replicas: 0 }), sandboxes: readyMembers(5), flags: poolFlags({ 'sandbox-warm-pool-max-batch-size': 2 }) });
    expect(p.deletes.length).toBe(2);
    // 1 ms, not 0: a requeue of 0 means none to the controller runtime.
    expect(p.requeueAfterMs).toBe(1);
  });

  test('the replenish delay holds creates after a claim and says when to look again', () => {
    const flags = poolFlags({ 'sandbox-warm-pool-replenish-delay': 3000 });
    const full = plan({ sandboxes: readyMembers(3), flags });
    const afterClaim = plan({ sandboxes: readyMembers(2), flags, state: full.state, now: NOW + 100 });
    expect([afterClaim.creates, afterClaim.requeueAfterMs]).toEqual([0, 3000]);
    const later = plan({ sandboxes: readyMembers(2), flags, state: afterClaim.state, now: NOW + 3100 });
    expect(later.creates).toBe(1);
  });

  test('the refill rate paces creates and says when the next token comes', () => {
    const flags = poolFlags({ 'sandbox-warm-pool-max-refill-rate': 2 });
    const first = plan({ pool: pool({ replicas: 5 }), flags });
    expect([first.creates, first.requeueAfterMs]).toEqual([2, 500]);
    const second = plan({ pool: pool({ replicas: 5 }), flags, pendingCreates: 2, state: first.state, now: NOW + 500 });
    expect(second.creates).toBe(1);
  });

  test('unschedulable members: held, one Warning, a periodic recheck, one Normal on recovery', () => {
    const held = member({ conditions: unschedulable(), age: 2 * GRACE });
    const first = plan({ sandboxes: [...readyMembers(2), held] });
    expect(first.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'WarmPoolNotProgressing', message: expect.stringMatching(/^1\/3 sandboxes are unschedulable past the 5m /) })]);
    expect(first.deletes).toEqual([]);
    expect(first.requeueAfterMs).toBe(FLAGS.unschedulableRecheckMs);
    expect(plan({ sandboxes: [...readyMembers(2), held], state: first.state }).events).toEqual([]);
    const recovered = plan({ sandboxes: readyMembers(3), state: first.state });
    expect(recovered.events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'WarmPoolProgressing' })]);
    expect(recovered.state.notProgressing).toBe(false);
  });

  test('a young not-Ready member brings the pool back when its grace period ends', () => {
    const young = member({ conditions: [notReady(iso(NOW - 1000))], age: 1000 });
    expect(plan({ sandboxes: [...readyMembers(2), young] }).requeueAfterMs).toBe(GRACE - 1000);
  });

  const arbSetup = fc.record({
    replicas: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
    batch: fc.integer({ min: 1, max: 6 }),
    pending: fc.integer({ min: 0, max: 4 }),
    recreate: fc.boolean(),
    haveTemplate: fc.boolean(),
    members: fc.array(fc.record({
      state: fc.constantFrom('ready', 'young', 'stuck', 'unschedulable', 'deleting'),
      owner: fc.constantFrom('pool', 'pool', 'pool', 'none', 'claim') as fc.Arbitrary<'pool' | 'none' | 'claim'>,
      old: fc.boolean(),
      age: fc.integer({ min: 0, max: 100_000 }),
    }), { maxLength: 12 }),
  });

  test('invariants: never above replicas, never below on scale-down, batch-bounded, only own members deleted (fast-check)', () => {
    fc.assert(fc.property(arbSetup, (s) => {
      const p = pool({ replicas: s.replicas, ...(s.recreate ? { updateStrategy: { type: 'Recreate' } } : {}) });
      const flags = poolFlags({ 'sandbox-warm-pool-max-batch-size': s.batch });
      const t = s.haveTemplate ? TEMPLATE : undefined;
      const sandboxes = s.members.map((m) => member({
        pool: p,
        owner: m.owner,
        template: m.old ? NEW_IMAGE : TEMPLATE,
        deleting: m.state === 'deleting',
        age: m.state === 'stuck' || m.state === 'unschedulable' ? GRACE + m.age : Math.min(m.age, GRACE - 1),
        conditions: m.state === 'ready' ? [ready()] : m.state === 'unschedulable' ? unschedulable() : [notReady(iso(NOW - (m.state === 'stuck' ? GRACE + m.age : Math.min(m.age, GRACE - 1))))],
      }));
      const members = classifyMembers(p, t, sandboxes, NOW, flags);
      const result = planPool({
        pool: p, template: t, gate: { ok: true }, members, pendingCreates: s.pending, state: INITIAL_POOL_STATE, flags, now: NOW,
      });
      const desired = s.replicas ?? 1;
      const active = members.active.length;
      const goingAway = members.terminating.length + members.stale.length + members.stuck.length + members.orphansToDelete.length;

      expect(result.creates).toBeLessThanOrEqual(Math.max(0, desired - active - goingAway - s.pending));
      expect(result.creates).toBeLessThanOrEqual(s.batch);
      if (!t) expect(result.creates).toBe(0);
      expect(result.deletes.length).toBeLessThanOrEqual(s.batch);
      const scaleDown = result.deletes.filter((d) => d.cause === 'scale-down');
      expect(active - scaleDown.length).toBeGreaterThanOrEqual(Math.min(active, desired));
      for (const d of result.deletes) {
        expect(d.sandbox.metadata.ownerReferences?.find((r) => r.controller)?.kind ?? 'none').not.toBe('SandboxClaim');
        expect(members.orphansToAdopt).not.toContain(d.sandbox);
        expect(d.uid).toBe(d.sandbox.metadata.uid);
        expect(d.resourceVersion).toBe(d.sandbox.metadata.resourceVersion);
      }
      expect(new Set(result.deletes.map((d) => d.uid)).size).toBe(result.deletes.length);
      expect(result.status.replicas).toBe(active);
      expect(result.status.readyReplicas).toBe(members.ready.length);
      expect(result.createWaves.reduce((a, b) => a + b, 0)).toBe(result.creates);
      if (result.requeueAfterMs !== undefined) expect(result.requeueAfterMs).toBeGreaterThanOrEqual(0);
    }));
  });
});

/** `value` with every object's keys in sorted order, as Go's encoding/json writes an unstructured object. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortedKeys((value as any)[k])]));
  return value;
}
