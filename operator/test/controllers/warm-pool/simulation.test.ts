/**
 * The real WarmPoolReconciler against the fake API server, in virtual time, with watch events that
 * reach the cache late (in order), never, or before the call's response, and creates whose
 * response comes late, is a refusal (nothing created) or an error after the object was created:
 * the property tests of "never over-create while earlier creates are unobserved" and "a lost event
 * cannot wedge the pool".
 */
import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NOW, TEMPLATE, pool } from './fixtures';
import { poolStores, RESOURCE_OF } from './harness';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { WarmPoolReconciler } from '../../../src/controllers/warm-pool/reconcile';
import { poolFlags } from '../../../src/controllers/warm-pool/types';
import { isControlledBy, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import type { DeleteOptions, KubeObject, ResourceType } from '../../../src/runtime/types';
import { FakeClient, apiError } from '../../fake-kube';

const TTL = 10_000;
const KEY = 'team-a/py-pool';

type Outcome = 'ok' | 'refused' | 'ambiguous';
type Action = { kind: 'pass' } | { kind: 'claim'; pick: number } | { kind: 'tick'; ms: number };

interface Run {
  readonly desired: number;
  readonly batch: number;
  readonly actions: Action[];
  readonly outcomes: Outcome[];
  readonly eventDelays: number[];
  readonly responseDelays: number[];
  readonly lose?: boolean[];
}

/** Deliveries in virtual time: watch events to the cache, responses to the reconciler. */
class Timeline {
  public now = NOW;
  private readonly due: { at: number; seq: number; apply: () => void }[] = [];
  private seq = 0;

  public at(at: number, apply: () => void): void {
    this.due.push({ at, seq: this.seq++, apply });
  }

  /** Deliver everything due by now. */
  public deliver(): void {
    for (let next = this.next(this.now); next; next = this.next(this.now)) next.apply();
  }

  /** Move to the next delivery and make it; false when nothing is scheduled. */
  public step(): boolean {
    const next = this.next(Infinity);
    if (!next) return false;
    this.now = Math.max(this.now, next.at);
    next.apply();
    return true;
  }

  private next(until: number): { readonly at: number; readonly apply: () => void } | undefined {
    this.due.sort((a, b) => a.at - b.at || a.seq - b.seq);
    return this.due[0] && this.due[0].at <= until ? this.due.shift() : undefined;
  }
}

function simulate(run: Run) {
  const time = new Timeline();
  let outcomes = run.outcomes;
  let n = 0;
  const pick = <T>(list: readonly T[] | undefined, fallback: T): T => (list && list.length > 0 ? list[n++ % list.length] : fallback);
  const p = pool({ replicas: run.desired });
  const stores = poolStores();
  stores.pools.put(p);
  stores.templates.put(TEMPLATE);
  let lastEventAt = NOW;
  /** The server changed an object: its watch event reaches the cache later, in order, or never. */
  const emit = (obj: Sandbox, deleted: boolean) => {
    lastEventAt = Math.max(lastEventAt, time.now + pick(run.eventDelays, 0));
    if (pick(run.lose, false)) return;
    const snapshot = structuredClone(obj);
    const { namespace, name } = snapshot.metadata;
    time.at(lastEventAt, () => (deleted ? stores.sandboxes.remove(namespace, name) : stores.sandboxes.put(snapshot)));
  };
  const respond = <T>(result: () => T): Promise<T> => new Promise((resolve, reject) => time.at(time.now + pick(run.responseDelays, 0), () => {
    try {
      resolve(result());
    } catch (error) {
      reject(error);
    }
  }));

  class LaggingServer extends FakeClient {
    public override async create<T extends KubeObject>(type: ResourceType, ns: string | undefined, body: object, options?: object): Promise<T> {
      const outcome = pick(outcomes, 'ok');
      if (outcome === 'refused') return respond(() => { throw apiError(403, 'Forbidden', 'exceeded quota'); });
      const created = await super.create<T>(type, ns, body, options);
      emit(created as unknown as Sandbox, false);
      return respond(() => {
        if (outcome === 'ambiguous') throw new Error('connection reset');
        return created;
      });
    }

    public override async delete(type: ResourceType, ns: string | undefined, name: string, options?: DeleteOptions): Promise<void> {
      const doomed = this.live.get(`${type.resource}/${name}`) as Sandbox | undefined;
      await super.delete(type, ns, name, options);
      emit(doomed!, true);
      return respond(() => undefined);
    }
  }
  const client = new LaggingServer(() => time.now);
  client.seed(RESOURCE_OF, p, TEMPLATE);
  const flags = poolFlags({ 'sandbox-warm-pool-max-batch-size': run.batch });
  const reconciler = new WarmPoolReconciler({ client, ...stores, flags, now: () => time.now, memberWriteTtlMs: TTL });
  reconciler.follow(stores.sandboxes);

  const unclaimed = () => [...client.live.values()].filter((o) => o.kind === 'Sandbox' && isControlledBy(o, p.metadata.uid)).length;
  let maxUnclaimed = 0;
  const pass = async () => {
    let done = false;
    const result = reconciler.reconcile(KEY).finally(() => (done = true));
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (done) break;
      // The pass waits for a response: let time run to the next delivery.
      if (!time.step()) throw new Error('the pass waits for a response that is never coming');
      maxUnclaimed = Math.max(maxUnclaimed, unclaimed());
    }
    await result;
    stores.pools.syncFrom(client, 'sandboxwarmpools');
  };
  const claim = (index: number) => {
    const members = [...client.live.values()].filter((o): o is Sandbox => o.kind === 'Sandbox' && isControlledBy(o, p.metadata.uid));
    if (members.length === 0) return;
    const taken = structuredClone(members[index % members.length]);
    delete taken.metadata.labels![SandboxLabels.WARM_POOL_SANDBOX];
    taken.metadata.ownerReferences = [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', name: 'c', uid: 'claim-uid', controller: true }];
    taken.metadata.resourceVersion = `${taken.metadata.resourceVersion}-claimed`;
    client.live.set(`sandboxes/${taken.metadata.name}`, taken);
    emit(taken, false);
  };

  return {
    time,
    client,
    stores,
    flags,
    get maxUnclaimed() {
      return maxUnclaimed;
    },
    unclaimed,
    /** From now on every create succeeds. */
    settle() {
      outcomes = ['ok'];
    },
    async play(actions: readonly Action[]) {
      for (const action of actions) {
        if (action.kind === 'tick') time.now += action.ms;
        time.deliver();
        if (action.kind === 'pass') await pass();
        if (action.kind === 'claim') claim(action.pick);
        maxUnclaimed = Math.max(maxUnclaimed, unclaimed());
      }
    },
    pass,
  };
}

const arbAction: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'pass' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('claim' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
);
const arbRun = fc.record({
  desired: fc.integer({ min: 0, max: 8 }),
  batch: fc.integer({ min: 1, max: 5 }),
  actions: fc.array(arbAction, { minLength: 1, maxLength: 60 }),
  outcomes: fc.array(fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'refused', 'ambiguous'), { maxLength: 10 }),
  // Watch latency below the TTL: the bound holds only while events arrive in time.
  eventDelays: fc.array(fc.integer({ min: 0, max: TTL - 1 }), { maxLength: 10 }),
  responseDelays: fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 10 }),
});

describe('WarmPoolReconciler against a lagging cache', () => {
  test('never more unclaimed members than replicas, however late events and responses arrive (fast-check)', async () => {
    await fc.assert(fc.asyncProperty(arbRun, async (run) => {
      const sim = simulate(run);
      await sim.play(run.actions);
      expect(sim.maxUnclaimed).toBeLessThanOrEqual(run.desired);
    }), { numRuns: 150 });
  });

  test('lost events never wedge the pool: one TTL after the last write it creates the whole deficit it sees (fast-check)', async () => {
    await fc.assert(fc.asyncProperty(arbRun, fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }), async (run, lose) => {
      const sim = simulate({ ...run, lose });
      // Let every response arrive and every write expire, then look once more.
      await sim.play([...run.actions, { kind: 'tick', ms: 2000 + TTL }]);
      const p = sim.stores.pools.get('team-a', 'py-pool') as SandboxWarmPool;
      const members = classifyMembers(p, TEMPLATE as SandboxTemplate, sim.stores.sandboxes.list(), sim.time.now, sim.flags);
      const visible = members.active.length + members.terminating.length;
      sim.client.calls.length = 0;
      sim.settle();
      await sim.pass();
      const creates = sim.client.calls.filter((c) => c.verb === 'create').length;
      expect(creates).toBe(Math.min(run.batch, Math.max(0, run.desired - visible)));
    }), { numRuns: 100 });
  });

  test('with prompt events the pool fills to replicas and stays there under claims', async () => {
    const actions: Action[] = [];
    for (let i = 0; i < 30; i++) actions.push({ kind: 'pass' }, { kind: 'tick', ms: 50 }, { kind: 'claim', pick: i }, { kind: 'tick', ms: 50 });
    actions.push({ kind: 'pass' }, { kind: 'tick', ms: 50 }, { kind: 'pass' });
    const sim = simulate({ desired: 5, batch: 300, actions, outcomes: ['ok'], eventDelays: [10], responseDelays: [5] });
    await sim.play(actions);
    expect(sim.maxUnclaimed).toBe(5);
    expect(sim.unclaimed()).toBe(5);
  });
});
