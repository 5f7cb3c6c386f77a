import { ElectionDecision, LeaseRecord, decideElection, nextRecord, releasedRecord } from '../../src/runtime/leader-election';

const NOW = Date.UTC(2026, 10, 29, 17, 0, 0, 123);
const ME = 'pod-a_1';
const OTHER = 'pod-b_2';
const held = (holder: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: '2026-11-29T16:00:00.000000Z', renewTime: '2026-11-29T16:59:59.000000Z', leaseTransitions: 3, ...extra,
});

describe('decideElection', () => {
  const cases: Array<[string, LeaseRecord | undefined, number, ElectionDecision]> = [
    ['no Lease yet: create it', undefined, 0, { action: 'create' }],
    ['we hold it: renew', held(ME), 0, { action: 'renew' }],
    ['we hold it even if our last renew looks old: renew', held(ME), 60_000, { action: 'renew' }],
    ['released (empty holder): take it at once', held('', { leaseDurationSeconds: 1 }), 0, { action: 'acquire', reason: 'free' }],
    ['holder missing entirely: free', { leaseDurationSeconds: 15 }, 0, { action: 'acquire', reason: 'free' }],
    ['another holder, seen changing 5 s ago: wait', held(OTHER), 5_000, { action: 'wait', holder: OTHER, expiresAt: NOW - 5_000 + 15_000 }],
    ['another holder, unchanged for exactly the lease duration: expired', held(OTHER), 15_000, { action: 'acquire', reason: 'expired' }],
    ['another holder, unchanged for longer: expired', held(OTHER), 40_000, { action: 'acquire', reason: 'expired' }],
    ['the record\'s own duration counts, not ours', held(OTHER, { leaseDurationSeconds: 60 }), 40_000, { action: 'wait', holder: OTHER, expiresAt: NOW - 40_000 + 60_000 }],
    ['no duration in the record: our default', held(OTHER, { leaseDurationSeconds: undefined }), 10_000, { action: 'wait', holder: OTHER, expiresAt: NOW + 5_000 }],
  ];
  test.each(cases)('%s', (_name, record, observedAgo, expected) => {
    expect(decideElection({ identity: ME, now: NOW, record, observedAt: NOW - observedAgo, leaseDurationMs: 15_000 })).toEqual(expected);
  });

  test("the holder's renewTime is never trusted: a stale-looking renew seen just now still waits (clock skew)", () => {
    const record = held(OTHER, { renewTime: '2020-01-01T00:00:00.000000Z' });
    expect(decideElection({ identity: ME, now: NOW, record, observedAt: NOW, leaseDurationMs: 15_000 }).action).toBe('wait');
  });
});

describe('the records written', () => {
  test('create: first holder, no transitions, MicroTimes with six digits', () => {
    expect(nextRecord(undefined, ME, NOW, 15_000)).toEqual({
      holderIdentity: ME, leaseDurationSeconds: 15, acquireTime: '2026-11-29T17:00:00.123000Z', renewTime: '2026-11-29T17:00:00.123000Z', leaseTransitions: 0,
    });
  });

  test('acquire from another holder: new acquireTime, one more transition, unknown fields kept', () => {
    expect(nextRecord(held(OTHER, { preferredHolder: 'x' }), ME, NOW, 15_000)).toEqual({
      holderIdentity: ME,
      leaseDurationSeconds: 15,
      acquireTime: '2026-11-29T17:00:00.123000Z',
      renewTime: '2026-11-29T17:00:00.123000Z',
      leaseTransitions: 4,
      preferredHolder: 'x',
    });
  });

  test('acquire after a release also counts a transition', () => {
    expect(nextRecord(releasedRecord(held(OTHER), NOW - 1000), ME, NOW, 15_000).leaseTransitions).toBe(4);
  });

  test('renew: only renewTime moves', () => {
    const before = held(ME);
    expect(nextRecord(before, ME, NOW, 15_000)).toEqual({ ...before, renewTime: '2026-11-29T17:00:00.123000Z' });
  });

  test('release: empty holder and a one-second duration, transitions kept', () => {
    expect(releasedRecord(held(ME), NOW)).toEqual({
      holderIdentity: '', leaseDurationSeconds: 1, acquireTime: '2026-11-29T17:00:00.123000Z', renewTime: '2026-11-29T17:00:00.123000Z', leaseTransitions: 3,
    });
  });
});
