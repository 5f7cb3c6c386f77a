/**
 * The claim's Ready message when its cold start comes from a warm pool scaled to zero: said when
 * the claim first reports its cold Sandbox, carried on (also once Ready mirrors the Sandbox's), and
 * absent in every other case.
 */
import { SandboxLabels } from '#api/labels';
import { NOW, claim, iso, member, notReady, pool, ready } from './fixtures';
import { servedStatus } from '../../../src/controllers/claim/plan';
import { type Condition, metaTime, type Sandbox, type SandboxClaim, type SandboxWarmPool } from '../../../src/model';

const NOTE = 'cold start: warm pool py-pool was scaled to zero after 60 s without claims; it is refilling to 3';
const pastIdle = { creationTimestamp: metaTime(NOW - 3_600_000) };
const scaledToZero = (status: 'True' | 'False', at: number, spec: Partial<SandboxWarmPool['spec']> = { scaleToZeroAfterSeconds: 60 }): SandboxWarmPool => ({
  ...pool(spec, pastIdle),
  status: { conditions: [{ type: 'ScaledToZero', status, reason: status === 'True' ? 'NoRecentClaims' : 'RecentClaims', message: '', lastTransitionTime: metaTime(at) }] },
});
const AT_ZERO = scaledToZero('True', NOW - 120_000);

/** The claim's cold Sandbox (named after it, launch-type=cold), in the given state. */
const cold = (conditions: Condition[]): Sandbox =>
  member({ name: 'my-claim', owner: 'claim', conditions, labels: { [SandboxLabels.LAUNCH_TYPE]: 'cold', [SandboxLabels.WARM_POOL_SANDBOX]: undefined } });
const readyMessage = (c: SandboxClaim, sandbox: Sandbox, p?: SandboxWarmPool) =>
  servedStatus(c, { kind: 'sandbox', sandbox }, NOW, p).status.conditions!.find((x) => x.type === 'Ready')!;

describe('the cold start of a scaled-to-zero pool, on the claim', () => {
  test('first report of the cold Sandbox: the Ready message ends with the note', () => {
    expect(readyMessage(claim(), cold([]), AT_ZERO)).toMatchObject({ status: 'False', message: `Sandbox is not ready; ${NOTE}` });
    expect(readyMessage(claim(), cold([notReady()]), AT_ZERO).message).toBe(`Pod exists with phase: Pending; ${NOTE}`);
  });

  test('the pool turned False before the claim\'s pass read it (the claim woke it): still the note', () => {
    expect(readyMessage(claim(), cold([]), scaledToZero('False', NOW)).message).toContain(NOTE);
  });

  test('carried from the claim\'s own status once reported, also when Ready mirrors the Sandbox and the pool refilled', () => {
    const first = servedStatus(claim(), { kind: 'sandbox', sandbox: cold([]) }, NOW, AT_ZERO).status;
    const refilled = scaledToZero('False', NOW - 60_000);
    const later = readyMessage(claim({}, {}, first), cold([ready()]), refilled);
    expect(later).toMatchObject({ status: 'True', reason: 'DependenciesReady', message: `Pod is Ready; ${NOTE}` });
    // Stable: the same pass again writes nothing.
    const settled = claim({}, {}, servedStatus(claim({}, {}, first), { kind: 'sandbox', sandbox: cold([ready()]) }, NOW, refilled).status);
    expect(servedStatus(settled, { kind: 'sandbox', sandbox: cold([ready()]) }, NOW, refilled).changed).toBe(false);
  });

  test.each<[string, SandboxClaim, Sandbox, SandboxWarmPool | undefined]>([
    ['a warm member adopted', claim(), member({ owner: 'claim', conditions: [ready()] }), AT_ZERO],
    ['a pool that was not at zero', claim(), cold([]), scaledToZero('False', NOW - 60_000)],
    ['a pool without scaleToZeroAfterSeconds', claim(), cold([]), { ...AT_ZERO, spec: pool().spec }],
    ['a claim that starts cold anyway (env)', claim({ env: [{ name: 'A', value: '1' }] }), cold([]), AT_ZERO],
    ['no pool in the cache', claim(), cold([]), undefined],
    ['a reported cold Sandbox without the note is not given one later', claim({}, { creationTimestamp: iso(NOW - 100) }, { sandbox: { name: 'my-claim' }, conditions: [] }), cold([]), AT_ZERO],
  ])('no note: %s', (_, c, sandbox, p) => {
    expect(readyMessage(c, sandbox, p).message).not.toContain('cold start');
  });
});
