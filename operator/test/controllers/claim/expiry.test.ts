import * as fc from 'fast-check';
import { NOW, claim, condition, iso, member, ownerRef, ready } from './fixtures';
import { claimExpiry, expiryPlan } from '../../../src/controllers/claim/plan';
import { type ClaimLifecycle, type Sandbox, type SandboxClaim } from '../../../src/model';

const finishedAt = (ms: number) => condition('Finished', 'True', 'PodSucceeded', iso(ms));
const withLifecycle = (lifecycle: ClaimLifecycle | undefined, status?: SandboxClaim['status']) => claim(lifecycle ? { lifecycle } : {}, {}, status);
const owned = (conditions = [ready()]): Sandbox => {
  const m = member({ name: 'py-pool-x', conditions });
  return { ...m, metadata: { ...m.metadata, ownerReferences: [ownerRef('SandboxClaim', 'my-claim', 'claim-uid')] } };
};

describe('claimExpiry', () => {
  test.each<[string, ClaimLifecycle | undefined, Sandbox | undefined, SandboxClaim['status'] | undefined, { expired: boolean; atMs?: number; action?: string; requeueAfterMs?: number }]>([
    ['no lifecycle: never', undefined, undefined, undefined, { expired: false, action: 'Retain' }],
    ['lifecycle without times: never', { shutdownPolicy: 'Delete' }, undefined, undefined, { expired: false, action: 'Delete' }],
    ['shutdownTime ahead: a timer', { shutdownTime: iso(NOW + 5000) }, undefined, undefined, { expired: false, atMs: NOW + 5000, requeueAfterMs: 5000 }],
    ['shutdownTime reached: expired at that instant', { shutdownTime: iso(NOW) }, undefined, undefined, { expired: true, atMs: NOW }],
    ['TTL waits for Finished', { ttlSecondsAfterFinished: 0 }, owned(), undefined, { expired: false }],
    ['TTL from the Sandbox\'s Finished', { ttlSecondsAfterFinished: 60 }, owned([finishedAt(NOW - 10_000)]), undefined, { expired: false, atMs: NOW + 50_000, requeueAfterMs: 50_000 }],
    ['TTL from the claim\'s mirrored Finished once the Sandbox is gone', { ttlSecondsAfterFinished: 5 }, undefined, { conditions: [finishedAt(NOW - 10_000)] }, { expired: true, atMs: NOW - 5000 }],
    ['a Finished=False does not start the TTL', { ttlSecondsAfterFinished: 0 }, owned([condition('Finished', 'False', 'x')]), undefined, { expired: false }],
    ['the earlier of the two wins', { shutdownTime: iso(NOW + 100_000), ttlSecondsAfterFinished: 1 }, owned([finishedAt(NOW)]), undefined, { expired: false, atMs: NOW + 1000 }],
    ['DeleteForeground is kept', { shutdownTime: iso(NOW - 1), shutdownPolicy: 'DeleteForeground' }, undefined, undefined, { expired: true, action: 'DeleteForeground' }],
    ['an unknown policy means Retain', { shutdownTime: iso(NOW - 1), shutdownPolicy: 'Bogus' as ClaimLifecycle['shutdownPolicy'] }, undefined, undefined, { expired: true, action: 'Retain' }],
  ])('%s', (_, lifecycle, sandbox, status, expected) => {
    expect(claimExpiry(withLifecycle(lifecycle, status), sandbox, NOW)).toMatchObject(expected);
  });

  test('expired exactly from the earliest deadline on (fast-check)', () => {
    fc.assert(fc.property(
      fc.option(fc.integer({ min: -100_000, max: 100_000 }), { nil: undefined }),
      fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }),
      fc.option(fc.integer({ min: -100_000, max: 0 }), { nil: undefined }),
      (shutdownOffset, ttl, finishedOffset) => {
        const lifecycle: ClaimLifecycle = {
          ...(shutdownOffset !== undefined ? { shutdownTime: iso(NOW + shutdownOffset) } : {}),
          ...(ttl !== undefined ? { ttlSecondsAfterFinished: ttl } : {}),
        };
        const sandbox = owned(finishedOffset !== undefined ? [ready(), finishedAt(NOW + finishedOffset)] : [ready()]);
        const e = claimExpiry(withLifecycle(lifecycle), sandbox, NOW);
        const deadlines = [
          ...(shutdownOffset !== undefined ? [NOW + shutdownOffset] : []),
          ...(ttl !== undefined && finishedOffset !== undefined ? [NOW + finishedOffset + ttl * 1000] : []),
        ];
        expect(e.atMs).toBe(deadlines.length ? Math.min(...deadlines) : undefined);
        expect(e.expired).toBe(e.atMs !== undefined && NOW >= e.atMs);
        if (!e.expired && e.atMs !== undefined) expect(e.requeueAfterMs).toBe(e.atMs - NOW);
      },
    ));
  });
});

describe('expiryPlan', () => {
  const expired = (policy: string) => ({ expired: true, atMs: NOW, action: policy as never });
  const marked = { conditions: [condition('Ready', 'False', 'ClaimExpired')] };

  test('not expired: nothing', () => {
    expect(expiryPlan(claim(), owned(), { expired: false, action: 'Retain' as never })).toEqual({ markExpired: false, events: [] });
  });

  test('Retain: mark, then delete the claim\'s Sandbox by UID', () => {
    expect(expiryPlan(claim(), owned(), expired('Retain'))).toEqual({
      markExpired: true,
      deleteSandbox: { name: 'py-pool-x', uid: 'py-pool-x-uid' },
      events: [{ type: 'Normal', reason: 'ClaimExpired', action: 'Claim Expired', note: 'Claim expired' }],
    });
    expect(expiryPlan(claim({}, {}, marked), owned(), expired('Retain'))).toMatchObject({ markExpired: false, events: [] });
  });

  test('Retain with a Sandbox already deleting, or none: only the mark', () => {
    const deleting = { ...owned(), metadata: { ...owned().metadata, deletionTimestamp: iso(NOW) } };
    expect(expiryPlan(claim(), deleting, expired('Retain')).deleteSandbox).toBeUndefined();
    expect(expiryPlan(claim(), undefined, expired('Retain')).deleteSandbox).toBeUndefined();
  });

  test('Retain with a Sandbox the claim does not control: skipped, with the message', () => {
    const plan = expiryPlan(claim(), member({ name: 'my-claim' }), expired('Retain'));
    expect(plan.deleteSandbox).toBeUndefined();
    expect(plan.skippedMessage).toBe('Claim expired. Sandbox "my-claim" is not controlled by this claim; deletion skipped.');
  });

  test.each([['Delete', 'Background'], ['DeleteForeground', 'Foreground']])('%s: mark, then delete the claim (%s)', (policy, propagation) => {
    expect(expiryPlan(claim(), owned(), expired(policy))).toEqual({
      markExpired: true,
      deleteClaim: { propagationPolicy: propagation, uid: 'claim-uid' },
      events: [
        { type: 'Normal', reason: 'ClaimExpired', action: 'Claim Expired', note: 'Claim expired' },
        { type: 'Normal', reason: 'ClaimExpired', action: 'Deleting', note: `Deleting Claim (ShutdownPolicy=${policy})` },
      ],
    });
  });

  test('at most one destructive step, always guarded by a UID, and only what the claim controls (fast-check)', () => {
    fc.assert(fc.property(
      fc.constantFrom('Delete', 'DeleteForeground', 'Retain'), fc.boolean(), fc.boolean(), fc.constantFrom('mine', 'foreign', 'none'), fc.boolean(),
      (policy, isExpired, alreadyMarked, which, claimDeleting) => {
        const c = claim({}, claimDeleting ? { deletionTimestamp: iso(NOW) } : {}, alreadyMarked ? marked : undefined);
        const s = which === 'mine' ? owned() : which === 'foreign' ? member({ name: 'my-claim' }) : undefined;
        const plan = expiryPlan(c, s, isExpired ? expired(policy) : { expired: false, action: policy as never });
        const steps = [plan.deleteClaim, plan.deleteSandbox].filter(Boolean);
        expect(steps.length).toBeLessThanOrEqual(1);
        if (!isExpired) expect(plan).toEqual({ markExpired: false, events: [] });
        if (plan.deleteSandbox) expect([which, plan.deleteSandbox.uid]).toEqual(['mine', s!.metadata.uid]);
        if (plan.deleteClaim) expect([policy === 'Retain', claimDeleting, plan.deleteClaim.uid]).toEqual([false, false, 'claim-uid']);
        expect(plan.markExpired).toBe(isExpired && !alreadyMarked);
      },
    ));
  });

  test('a claim already being deleted is not deleted again', () => {
    const c = claim({}, { deletionTimestamp: iso(NOW) }, marked);
    expect(expiryPlan(c, owned(), expired('DeleteForeground'))).toEqual({ markExpired: false, events: [] });
  });
});
