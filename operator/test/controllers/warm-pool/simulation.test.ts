/**
 * The warm pool's decisions run against a model API server whose watch events reach the cache late,
 * out of step with create responses, or never: the property tests of "never over-create while
 * earlier creates are unobserved" and "a lost event cannot wedge the pool".
 */
import * as fc from 'fast-check';
import { NOW, TEMPLATE, member, pool } from './fixtures';
import { SandboxLabels } from '../../../../src/api/labels';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { PoolExpectations } from '../../../src/controllers/warm-pool/expectations';
import { INITIAL_POOL_STATE, planPool, type PoolPlan, type PoolState } from '../../../src/controllers/warm-pool/plan';
import { poolFlags } from '../../../src/controllers/warm-pool/types';
import { type Sandbox } from '../../../src/model';

const TIMEOUT = 10_000;

type Outcome = 'ok' | 'refused' | 'ambiguous';
type Action = { kind: 'pass' } | { kind: 'claim'; pick: number } | { kind: 'tick'; ms: number };

interface World {
  now: number;
  /** The API server: uid -> object. */
  readonly server: Map<string, Sandbox>;
  /** The informer cache. */
  readonly cache: Map<string, Sandbox>;
  /** Pending deliveries (watch events and call responses), applied in time order. */
  readonly queue: { at: number; seq: number; apply: () => void }[];
  seq: number;
  /** Watch events are delivered in order: never before the previous one. */
  lastEventAt: number;
  state: PoolState;
  readonly expectations: PoolExpectations;
  created: number;
}

function isMember(s: Sandbox): boolean {
  return s.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX] !== undefined && s.metadata.ownerReferences?.[0]?.kind === 'SandboxWarmPool';
}

function runWorld(opts: {
  desired: number; batch: number; actions: Action[]; outcomes: Outcome[]; eventDelays: number[]; responseDelays: number[]; lose: boolean[];
}): { world: World; maxMembers: number; plans: PoolPlan[] } {
  const p = pool({ replicas: opts.desired });
  const flags = poolFlags({ 'sandbox-warm-pool-max-batch-size': opts.batch });
  const world: World = {
    now: NOW,
    server: new Map(),
    cache: new Map(),
    queue: [],
    seq: 0,
    lastEventAt: NOW,
    state: INITIAL_POOL_STATE,
    expectations: new PoolExpectations(TIMEOUT),
    created: 0,
  };
  let n = 0;
  const pick = <T>(list: T[], fallback: T): T => (list.length === 0 ? fallback : list[n++ % list.length]);
  const schedule = (at: number, apply: () => void) => world.queue.push({ at, seq: world.seq++, apply });
  const emit = (uid: string, obj: Sandbox | undefined) => {
    world.lastEventAt = Math.max(world.lastEventAt, world.now + pick(opts.eventDelays, 0));
    if (pick(opts.lose, false)) return;
    schedule(world.lastEventAt, () => {
      if (obj) world.cache.set(uid, obj);
      else world.cache.delete(uid);
      world.expectations.observe(uid, obj === undefined);
    });
  };
  const deliver = () => {
    world.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
    while (world.queue.length > 0 && world.queue[0].at <= world.now) world.queue.shift()!.apply();
  };
  const members = () => [...world.server.values()].filter(isMember).length;
  let maxMembers = 0;
  const plans: PoolPlan[] = [];

  const pass = () => {
    const seen = (uid: string) => world.cache.has(uid);
    const pendingDeletes = world.expectations.pendingDeletes(world.now, seen);
    const classified = classifyMembers(p, TEMPLATE, [...world.cache.values()], world.now, flags, pendingDeletes);
    const plan = planPool({
      pool: p,
      template: TEMPLATE,
      members: classified,
      pendingCreates: world.expectations.pendingCreates(world.now, seen),
      state: world.state,
      flags,
      now: world.now,
    });
    plans.push(plan);
    world.state = plan.state;
    for (const d of plan.deletes) {
      world.expectations.expectDelete(d.uid, world.now);
      const current = world.server.get(d.uid);
      if (current && current.metadata.resourceVersion === d.resourceVersion) {
        world.server.delete(d.uid);
        emit(d.uid, undefined);
      } else if (current) {
        world.expectations.deleteFailed(d.uid);
      }
    }
    for (const token of world.expectations.expectCreates(plan.creates, world.now)) {
      const outcome = pick(opts.outcomes, 'ok');
      const at = world.now + pick(opts.responseDelays, 0);
      if (outcome === 'refused') {
        schedule(at, () => world.expectations.createFailed(token, true, at));
        continue;
      }
      const obj = member({ pool: p, name: `py-pool-${world.created}`, age: 0 });
      world.created++;
      obj.metadata.creationTimestamp = new Date(world.now).toISOString();
      const uid = obj.metadata.uid!;
      world.server.set(uid, obj);
      emit(uid, obj);
      if (outcome === 'ok') schedule(at, () => world.expectations.createSucceeded(token, uid, at));
      else schedule(at, () => world.expectations.createFailed(token, false, at));
    }
  };

  for (const action of opts.actions) {
    if (action.kind === 'tick') world.now += action.ms;
    deliver();
    if (action.kind === 'pass') pass();
    if (action.kind === 'claim') {
      const candidates = [...world.server.values()].filter(isMember);
      if (candidates.length > 0) {
        const s = candidates[action.pick % candidates.length];
        const claimed: Sandbox = {
          ...s,
          metadata: {
            ...s.metadata,
            resourceVersion: String(Number(s.metadata.resourceVersion) + 1),
            labels: { ...s.metadata.labels, [SandboxLabels.WARM_POOL_SANDBOX]: undefined as never },
            ownerReferences: [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', name: 'c', uid: 'c', controller: true }],
          },
        };
        delete claimed.metadata.labels![SandboxLabels.WARM_POOL_SANDBOX];
        world.server.set(s.metadata.uid!, claimed);
        emit(s.metadata.uid!, claimed);
      }
    }
    maxMembers = Math.max(maxMembers, members());
  }
  return { world, maxMembers, plans };
}

const arbAction: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'pass' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('claim' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
);
const arbRun = fc.record({
  desired: fc.integer({ min: 0, max: 8 }),
  batch: fc.integer({ min: 1, max: 5 }),
  actions: fc.array(arbAction, { minLength: 1, maxLength: 80 }),
  outcomes: fc.array(fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'refused', 'ambiguous'), { maxLength: 10 }),
  // Watch latency below the expectations timeout: the bound holds only while events arrive in time.
  eventDelays: fc.array(fc.integer({ min: 0, max: TIMEOUT - 1 }), { maxLength: 10 }),
  responseDelays: fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 10 }),
});

describe('warm pool against a lagging cache', () => {
  test('never more unclaimed members than replicas, however late events and responses arrive (fast-check)', () => {
    fc.assert(fc.property(arbRun, (run) => {
      const { maxMembers } = runWorld({ ...run, lose: [] });
      expect(maxMembers).toBeLessThanOrEqual(run.desired);
    }), { numRuns: 300 });
  });

  test('lost events never wedge the pool: one timeout after the last write it creates the whole deficit it sees (fast-check)', () => {
    fc.assert(fc.property(arbRun, fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }), (run, lose) => {
      // Let every response arrive and every record expire, then look once more.
      const after = runWorld({ ...run, lose, actions: [...run.actions, { kind: 'tick', ms: 2000 + TIMEOUT }] }).world;
      expect(after.expectations.pendingCreates(after.now, (uid) => after.cache.has(uid))).toBe(0);
      const seen = (uid: string) => after.cache.has(uid);
      const p = pool({ replicas: run.desired });
      const flags = poolFlags({ 'sandbox-warm-pool-max-batch-size': run.batch });
      const members = classifyMembers(p, TEMPLATE, [...after.cache.values()], after.now, flags, after.expectations.pendingDeletes(after.now, seen));
      const plan = planPool({ pool: p, template: TEMPLATE, members, pendingCreates: 0, state: after.state, flags, now: after.now });
      const visible = members.active.length + members.terminating.length;
      expect(plan.creates).toBe(Math.min(run.batch, Math.max(0, run.desired - visible)));
    }), { numRuns: 200 });
  });

  test('with prompt events the pool fills to replicas and stays there under claims', () => {
    const actions: Action[] = [];
    for (let i = 0; i < 30; i++) actions.push({ kind: 'pass' }, { kind: 'tick', ms: 50 }, { kind: 'claim', pick: i }, { kind: 'tick', ms: 50 });
    actions.push({ kind: 'pass' }, { kind: 'tick', ms: 50 }, { kind: 'pass' });
    const { world, maxMembers } = runWorld({ desired: 5, batch: 300, actions, outcomes: ['ok'], eventDelays: [10], responseDelays: [5], lose: [] });
    expect(maxMembers).toBe(5);
    expect([...world.server.values()].filter(isMember).length).toBe(5);
  });
});
