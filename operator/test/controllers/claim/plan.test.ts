import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NOW, TEMPLATE, claim, condition, iso, member, notReady, ownerRef, pool, ready, sandbox } from './fixtures';
import {
  type Acquisition, type ClaimPlan, type ClaimState, expiredStatus, planClaim, servedRequeueMs, servedStatus, type ServePlan,
} from '../../../src/controllers/claim/plan';
import { CandidateRanking, isAdoptable } from '../../../src/controllers/claim/select';
import { type Sandbox, type SandboxClaim } from '../../../src/model';

const warm = (name: string, o: Parameters<typeof member>[0] = {}) => member({ name, podIPs: ['10.0.0.1'], nodeName: 'n1', ...o });
const ofClaim = (name: string, o: Parameters<typeof member>[0] = {}, uid = 'claim-uid'): Sandbox => {
  const m = member({ name, podIPs: ['10.0.0.9'], ...o });
  return { ...m, metadata: { ...m.metadata, ownerReferences: [ownerRef('SandboxClaim', 'my-claim', uid)] } };
};

/** Candidates ranked from `members()` each time a plan asks for them. */
const ranked = (members: () => Sandbox[]): ClaimState['rankCandidates'] => (strategy, context) => new CandidateRanking(members(), strategy, context);

function state(over: Partial<ClaimState> = {}, members: Sandbox[] = []): ClaimState {
  return {
    claim: claim(),
    pool: pool(),
    template: TEMPLATE,
    sandboxes: [],
    rankCandidates: ranked(() => members),
    beingClaimed: new Set(),
    now: NOW,
    ...over,
  };
}

/** A plan in one line: what it does, so a table row states it. */
function summary(plan: ClaimPlan): string {
  if (plan.kind === 'wait-for-cache') return `wait-for-cache ${plan.requeueAfterMs}`;
  const cleanup = [
    ...(plan.release?.extras ?? []).map((s) => `release ${s.metadata.name}`),
    ...(plan.repair ? [`repair ${plan.repair.sandbox.metadata.name} ${JSON.stringify(plan.repair.patch)}`] : []),
  ];
  if (plan.kind === 'expire') {
    const e = plan.expiry;
    const actions = [
      ...(e.markExpired ? ['mark expired'] : []),
      ...(e.deleteClaim ? [`delete claim ${e.deleteClaim.propagationPolicy}`] : []),
      ...(e.deleteSandbox ? [`delete sandbox ${e.deleteSandbox.name}`] : []),
      ...(e.skippedMessage ? ['skip'] : []),
      ...e.events.map((ev) => `event ${ev.action}`),
    ];
    return ['expire', ...cleanup, ...actions].join('; ');
  }
  return [...cleanup, step(plan.acquisition), ...(plan.requeueAfterMs !== undefined ? [`requeue ${plan.requeueAfterMs}`] : [])].join('; ');
}

function step(a: Acquisition): string {
  switch (a.kind) {
    case 'sandbox': return `have ${a.sandbox.metadata.name}`;
    case 'adopt': return `adopt ${a.candidate.metadata.name}`;
    case 'create': return `create ${a.sandbox.metadata.name}`;
    case 'wait': return `wait ${a.requeueAfterMs}`;
    case 'problem': return `problem ${a.problem.reason}${a.requeueAfterMs !== undefined ? ` ${a.requeueAfterMs}` : ''}`;
  }
}

const expired = (policy?: 'Delete' | 'DeleteForeground' | 'Retain') => claim({ lifecycle: { shutdownTime: iso(NOW - 1000), ...(policy ? { shutdownPolicy: policy } : {}) } });

describe('planClaim', () => {
  const mine = ofClaim('py-pool-mine', { conditions: [ready()] });
  test.each<[string, ClaimState, string]>([
    ['a claim with nothing: adopt the pool\'s Ready member', state({}, [warm('py-pool-a', { conditions: [notReady()] }), warm('py-pool-b')]), 'adopt py-pool-b'],
    ['bound: nothing to get', state({ sandboxes: [mine] }), 'have py-pool-mine'],
    ['bound without a launch-type label: restore it (warm: named unlike the claim)',
      state({ sandboxes: [ofClaim('py-pool-m', { labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } })] }),
      `repair py-pool-m {"metadata":{"labels":{"${SandboxLabels.LAUNCH_TYPE}":"warm"}}}; have py-pool-m`],
    ['owns two: keep the Ready one, release the other',
      state({ sandboxes: [ofClaim('py-pool-old', { conditions: [notReady()], age: 90_000 }), ofClaim('py-pool-new', { age: 10_000 })] }),
      'release py-pool-old; have py-pool-new'],
    ['our adoption not in the cache yet: write nothing', state({ pendingSandbox: 'py-pool-b' }, [warm('py-pool-c')]), 'wait-for-cache 1000'],
    ['no pool', state({ pool: undefined }), 'problem WarmPoolNotFound 60000'],
    ['invalid additionalPodMetadata, before anything else', state({ claim: claim({ additionalPodMetadata: { labels: { bad: 'x' } } }), pool: undefined }),
      'problem InvalidMetadata'],
    ['env forces a cold start', state({ claim: claim({ env: [{ name: 'A', value: '1' }] }), template: { ...TEMPLATE, spec: { ...TEMPLATE.spec, envVarsInjectionPolicy: 'Allowed' } } },
      [warm('py-pool-a')]), 'create my-claim'],
    ['env and no template', state({ claim: claim({ env: [{ name: 'A', value: '1' }] }), template: undefined }), 'problem TemplateNotFound 60000'],
    ['an empty pool: cold', state(), 'create my-claim'],
    ['members without an IP and a young claim: wait for them', state({}, [member({ name: 'py-pool-a' })]), 'wait 500'],
    ['members without an IP past the grace period: take the oldest (further along than a cold start)',
      state({ now: NOW + 10_000 }, [member({ name: 'py-pool-a', age: 1000 }), member({ name: 'py-pool-b', age: 3000 })]), 'adopt py-pool-b'],
    ['past the grace period, members starting for 30 s or more without an IP: cold', state({ now: NOW + 10_000 }, [member({ name: 'py-pool-a', age: 20_000 })]), 'create my-claim'],
    ['past the grace period, a stuck oldest member is passed over for a younger one',
      state({ now: NOW + 10_000 }, [member({ name: 'py-pool-a', age: 20_000 }), member({ name: 'py-pool-b', age: 3000 })]), 'adopt py-pool-b'],
    ['a member another claim of this process is adopting is not a candidate',
      state({ beingClaimed: new Set(['py-pool-a-uid']) }, [warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 1000 })]), 'adopt py-pool-b'],
    ['a previous claim\'s namesake being deleted holds the cold start',
      state({ sandboxes: [ofClaim('my-claim', {}, 'old-claim-uid')] }), 'problem SandboxCreatePending 200'],
    ['someone else\'s namesake: a cold start is an error', state({ sandboxes: [sandbox({ name: 'my-claim' })] }), 'problem ReconcilerError'],
    ['someone else\'s namesake: warm adoption stays open', state({ sandboxes: [sandbox({ name: 'my-claim' })] }, [warm('py-pool-a')]), 'adopt py-pool-a'],
    ['shutdownTime ahead: look again then', state({ claim: claim({ lifecycle: { shutdownTime: iso(NOW + 5000) } }), sandboxes: [mine] }),
      'have py-pool-mine; requeue 5000'],
    ['expired, Retain: delete its Sandbox', state({ claim: expired(), sandboxes: [mine] }), 'expire; mark expired; delete sandbox py-pool-mine; event Claim Expired'],
    ['expired, Retain, no Sandbox', state({ claim: expired() }), 'expire; mark expired; event Claim Expired'],
    ['expired, Delete', state({ claim: expired('Delete'), sandboxes: [mine] }), 'expire; mark expired; delete claim Background; event Claim Expired; event Deleting'],
    ['expired, DeleteForeground', state({ claim: expired('DeleteForeground') }), 'expire; mark expired; delete claim Foreground; event Claim Expired; event Deleting'],
    ['expired and marked already: only the policy', state({
      claim: { ...expired(), status: { conditions: [condition('Ready', 'False', 'ClaimExpired')] } }, sandboxes: [mine],
    }), 'expire; delete sandbox py-pool-mine'],
  ])('%s', (_, s, expected) => {
    expect(summary(planClaim(s))).toBe(expected);
  });

  test('the adoption is one conditional write: the member\'s resourceVersion, and the claim as its controller', () => {
    const plan = planClaim(state({}, [warm('py-pool-a')])) as ServePlan;
    expect(plan.acquisition).toMatchObject({
      kind: 'adopt',
      patch: { metadata: { resourceVersion: '100', ownerReferences: [{ kind: 'SandboxClaim', name: 'my-claim', uid: 'claim-uid', controller: true }] } },
    });
  });

  test('the pool\'s members are not read when the claim has its Sandbox', () => {
    let reads = 0;
    planClaim({ ...state({ sandboxes: [mine] }), rankCandidates: ranked(() => [warm(`py-pool-${reads++}`)]) });
    expect(reads).toBe(0);
  });
});

describe('after a conflict on the adoption write', () => {
  const acquisition = (s: ClaimState) => (planClaim(s) as ServePlan).acquisition;
  const next = (a: Acquisition, beingClaimed: string[] = [], now = NOW): Acquisition => {
    if (a.kind !== 'adopt') throw new Error(`not an adoption: ${a.kind}`);
    return a.afterConflict(new Set(beingClaimed), now);
  };
  const three = [warm('py-pool-a', { age: 90_000 }), warm('py-pool-b', { age: 50_000 }), warm('py-pool-c', { age: 10_000 })];

  test('the next candidate, without ranking the pool again', () => {
    let reads = 0;
    const first = acquisition({ ...state(), rankCandidates: ranked(() => (reads++, three)) });
    expect(step(first)).toBe('adopt py-pool-a');
    expect(step(next(first))).toBe('adopt py-pool-b');
    expect(reads).toBe(1);
  });

  test('members other claims took meanwhile are left out', () => {
    expect(step(next(acquisition(state({}, three)), ['py-pool-b-uid']))).toBe('adopt py-pool-c');
  });

  test('all conflicted: AdoptionConflict, retried shortly, never a cold start', () => {
    const last = next(next(acquisition(state({}, three.slice(0, 2)))));
    expect(last).toEqual({ kind: 'problem', problem: { reason: 'AdoptionConflict', message: '2 warm Sandbox(es) changed while being adopted; retrying' }, requeueAfterMs: 50 });
  });

  test('five conflicts: leave the rest to a requeue', () => {
    const many = Array.from({ length: 7 }, (_, i) => warm(`py-pool-${i}`, { age: 90_000 - i }));
    let a = acquisition(state({}, many));
    for (let i = 0; i < 5; i++) a = next(a);
    expect(a).toEqual({ kind: 'wait', requeueAfterMs: 50 });
  });

  test('only members without an IP left: wait while the claim is young, else start cold', () => {
    const members = [warm('py-pool-a'), member({ name: 'py-pool-b' })];
    expect(step(next(acquisition(state({}, members))))).toBe('wait 500');
    expect(step(next(acquisition(state({}, members)), [], NOW + 10_000))).toBe('create my-claim');
  });

  test('never a member being claimed, never one twice, never more than five writes (fast-check)', () => {
    const arb = fc.array(fc.record({ ip: fc.boolean(), ready: fc.boolean(), owner: fc.constantFrom('pool', 'pool', 'claim', 'none'), claimed: fc.boolean() }),
      { maxLength: 12 });
    fc.assert(fc.property(arb, fc.array(fc.integer({ min: 0, max: 11 }), { maxLength: 4 }), (specs, takenLater) => {
      const members = specs.map((s, i) => warm(`py-pool-${i}`, {
        podIPs: s.ip ? ['10.0.0.1'] : undefined, conditions: s.ready ? undefined : [notReady()], owner: s.owner as 'pool', age: 1000 * i,
      }));
      const beingClaimed = members.filter((_, i) => specs[i].claimed).map((m) => m.metadata.uid!);
      let a = acquisition(state({ beingClaimed: new Set(beingClaimed) }, members));
      const tried: string[] = [];
      while (a.kind === 'adopt') {
        const { candidate } = a;
        expect(isAdoptable(candidate, claim(), 'pool-uid')).toBe(true);
        expect(beingClaimed).not.toContain(candidate.metadata.uid);
        expect(tried).not.toContain(candidate.metadata.uid);
        tried.push(candidate.metadata.uid!);
        beingClaimed.push(...takenLater.map((i) => `py-pool-${i}-uid`));
        a = a.afterConflict(new Set(beingClaimed), NOW);
      }
      expect(tried.length).toBeLessThanOrEqual(5);
    }));
  });
});

describe('the status and requeue that follow', () => {
  const c = claim({ lifecycle: { shutdownTime: iso(NOW + 30_000) } });
  const adopted = ofClaim('py-pool-a', { conditions: [ready(iso(NOW - 5000))] });

  test('a warm claim: Ready copied from its Sandbox, status.sandbox named, on the claim\'s resourceVersion', () => {
    const decision = servedStatus(claim(), { kind: 'sandbox', sandbox: adopted }, NOW);
    expect(decision.patch).toEqual({
      metadata: { resourceVersion: '500' },
      status: {
        conditions: [{ ...ready(iso(NOW - 5000)), observedGeneration: 3 }],
        // null: a merge patch drops a serviceFQDN the claim may hold from before (this Sandbox has no Service).
        sandbox: { name: 'py-pool-a', podIPs: ['10.0.0.9'], serviceFQDN: null },
      },
    });
  });

  test('a create pending on the cache keeps the binding the claim has; other problems clear it', () => {
    const bound = claim({}, {}, { sandbox: { name: 'my-claim' } });
    const pending = { reason: 'SandboxCreatePending', message: 'm' };
    expect(servedStatus(bound, { kind: 'problem', problem: pending }, NOW).status.sandbox).toEqual({ name: 'my-claim' });
    expect(servedStatus(bound, { kind: 'problem', problem: { reason: 'TemplateNotFound', message: 'm' } }, NOW).status.sandbox).toBeUndefined();
  });

  test('requeue: the problem\'s recheck or the expiry, whichever is sooner', () => {
    const plan = planClaim(state({ claim: c })) as ServePlan;
    expect(plan.requeueAfterMs).toBe(30_000);
    expect(servedRequeueMs(plan, c, { kind: 'problem', problem: { reason: 'x', message: 'm' }, requeueAfterMs: 200 }, NOW)).toBe(200);
    expect(servedRequeueMs(plan, c, { kind: 'problem', problem: { reason: 'x', message: 'm' } }, NOW)).toBe(30_000);
    const finished = ofClaim('py-pool-a', { conditions: [ready(), condition('Finished', 'True', 'PodSucceeded', iso(NOW - 1000))] });
    const ttl: SandboxClaim = claim({ lifecycle: { ttlSecondsAfterFinished: 3 } });
    expect(servedRequeueMs(planClaim(state({ claim: ttl })) as ServePlan, ttl, { kind: 'sandbox', sandbox: finished }, NOW)).toBe(2000);
  });

  test('expired: Ready=False ClaimExpired, the binding cleared', () => {
    const plan = planClaim(state({ claim: expired(), sandboxes: [adopted] }));
    if (plan.kind !== 'expire') throw new Error(plan.kind);
    const decision = expiredStatus(expired(), plan, NOW);
    expect(decision.status.conditions).toEqual([expect.objectContaining({ status: 'False', reason: 'ClaimExpired' })]);
    expect(decision.status.sandbox).toEqual({ name: 'py-pool-a', podIPs: ['10.0.0.9'] });
  });
});
