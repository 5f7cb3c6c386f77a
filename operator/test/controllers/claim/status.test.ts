import * as fc from 'fast-check';
import { NOW, claim, condition, member, notReady, ready } from './fixtures';
import { CLAIM_EXPIRED_MESSAGE, SANDBOX_EXPIRED_MESSAGE, claimStatus, type StatusInput } from '../../../src/controllers/claim/status';
import { applyMergePatch, type Condition, type Sandbox } from '../../../src/model';

const NOW_TEXT = '2026-09-01T12:00:00Z';
const bound = (conditions: Condition[], podIPs = ['10.0.0.7']): Sandbox => member({ name: 'py-pool-x', conditions, podIPs });
const FQDN = 'py-pool-x.team-a.svc.cluster.local';
/** The Sandbox with a Service: its status.serviceFQDN set as the Sandbox controller writes it. */
const served = (sb: Sandbox, serviceFQDN = FQDN): Sandbox => ({ ...sb, status: { ...sb.status, service: sb.metadata.name, serviceFQDN } });
const readyOf = (input: Partial<StatusInput>) => claimStatus({ claim: claim(), now: NOW, ...input }).status.conditions!.find((c) => c.type === 'Ready')!;

describe('claimStatus: Ready', () => {
  test.each<[string, Partial<StatusInput>, Partial<Condition>]>([
    ['a problem comes first', { problem: { reason: 'WarmPoolNotFound', message: 'SandboxWarmPool "p" not found' }, sandbox: bound([ready()]) }, { status: 'False', reason: 'WarmPoolNotFound', message: 'SandboxWarmPool "p" not found' }],
    ['expired', { expired: true, sandbox: bound([ready()]) }, { status: 'False', reason: 'ClaimExpired', message: CLAIM_EXPIRED_MESSAGE }],
    ['no Sandbox', {}, { status: 'False', reason: 'SandboxMissing', message: 'Sandbox does not exist' }],
    ['the Sandbox expired on its own', { sandbox: bound([condition('Ready', 'False', 'SandboxExpired')]) }, { status: 'False', reason: 'SandboxExpired', message: SANDBOX_EXPIRED_MESSAGE }],
    ['the Sandbox has no Ready yet', { sandbox: bound([]) }, { status: 'False', reason: 'SandboxNotReady', message: 'Sandbox is not ready' }],
    ['Ready is mirrored verbatim at the claim\'s generation', { sandbox: bound([{ ...ready('2026-09-01T11:59:00Z'), observedGeneration: 9 }]) }, { status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready', lastTransitionTime: '2026-09-01T11:59:00Z', observedGeneration: 3 }],
    ['not Ready is mirrored too', { sandbox: bound([notReady('2026-09-01T11:58:00Z')]) }, { status: 'False', reason: 'DependenciesNotReady', lastTransitionTime: '2026-09-01T11:58:00Z' }],
  ])('%s', (_, input, expected) => {
    expect(readyOf(input)).toMatchObject({ type: 'Ready', observedGeneration: 3, ...expected });
  });

  test('a computed condition keeps its transition time while its status holds', () => {
    const old: Condition = { type: 'Ready', status: 'False', reason: 'SandboxMissing', message: 'm', lastTransitionTime: '2026-09-01T10:00:00Z', observedGeneration: 3 };
    const c = claim({}, {}, { conditions: [old] });
    expect(readyOf({ claim: c, problem: { reason: 'TemplateNotFound', message: 'x' } }).lastTransitionTime).toBe('2026-09-01T10:00:00Z');
    const flipped = claim({}, {}, { conditions: [{ ...old, status: 'True' }] });
    expect(readyOf({ claim: flipped }).lastTransitionTime).toBe(NOW_TEXT);
  });
});

describe('claimStatus: Finished, binding, writes', () => {
  const finished = condition('Finished', 'True', 'PodSucceeded', '2026-09-01T11:30:00Z');

  test('binding and Finished mirrored; conditions sorted by type', () => {
    const d = claimStatus({ claim: claim(), sandbox: bound([ready(), finished]), now: NOW });
    expect(d.status.sandbox).toEqual({ name: 'py-pool-x', podIPs: ['10.0.0.7'] });
    expect(d.status.conditions!.map((c) => c.type)).toEqual(['Finished', 'Ready']);
    expect(d.status.conditions![0]).toEqual(finished);
  });

  test('Finished is removed when the Sandbox has none, kept when there is no Sandbox', () => {
    const c = claim({}, {}, { conditions: [finished] });
    expect(claimStatus({ claim: c, sandbox: bound([ready()]), now: NOW }).status.conditions!.map((x) => x.type)).toEqual(['Ready']);
    expect(claimStatus({ claim: c, expired: true, now: NOW }).status.conditions!.map((x) => x.type)).toEqual(['Finished', 'Ready']);
  });

  test('the binding is cleared without a Sandbox, kept on a transient failure', () => {
    const c = claim({}, {}, { sandbox: { name: 'py-pool-x', podIPs: ['10.0.0.7'] } });
    expect(claimStatus({ claim: c, now: NOW }).status.sandbox).toBeUndefined();
    expect(claimStatus({ claim: c, now: NOW, keepBinding: true, problem: { reason: 'ReconcilerError', message: 'x' } }).status.sandbox).toEqual({ name: 'py-pool-x', podIPs: ['10.0.0.7'] });
  });

  test('serviceFQDN is mirrored from the Sandbox\'s status, absent while it has none, and goes with the binding', () => {
    const d = claimStatus({ claim: claim(), sandbox: served(bound([ready()])), now: NOW });
    expect(d.status.sandbox).toEqual({ name: 'py-pool-x', podIPs: ['10.0.0.7'], serviceFQDN: FQDN });
    expect(d.patch).toMatchObject({ status: { sandbox: { name: 'py-pool-x', podIPs: ['10.0.0.7'], serviceFQDN: FQDN } } });
    expect(claimStatus({ claim: claim(), sandbox: bound([ready()]), now: NOW }).status.sandbox).toEqual({ name: 'py-pool-x', podIPs: ['10.0.0.7'] });

    // Only the name changes (another cluster domain): that alone is a change, written in the one status patch.
    const c = claim({}, {}, { conditions: d.status.conditions, sandbox: d.status.sandbox });
    expect(claimStatus({ claim: c, sandbox: served(bound([ready()])), now: NOW }).changed).toBe(false);
    const moved = claimStatus({ claim: c, sandbox: served(bound([ready()]), 'py-pool-x.team-a.svc.corp.internal'), now: NOW });
    expect(moved.changed).toBe(true);
    expect(applyMergePatch(c, moved.patch).status!.sandbox!.serviceFQDN).toBe('py-pool-x.team-a.svc.corp.internal');

    // The Service went away (spec.service: false): the claim drops the name with a null in the merge patch.
    const unserved = claimStatus({ claim: c, sandbox: bound([ready()]), now: NOW });
    expect(unserved.patch).toMatchObject({ status: { sandbox: { serviceFQDN: null } } });
    expect(applyMergePatch(c, unserved.patch).status!.sandbox).toEqual({ name: 'py-pool-x', podIPs: ['10.0.0.7'] });

    // No Sandbox: cleared with the rest of the binding; a transient failure keeps it.
    expect(applyMergePatch(c, claimStatus({ claim: c, now: NOW }).patch).status!.sandbox).toBeUndefined();
    expect(claimStatus({ claim: c, now: NOW, keepBinding: true, problem: { reason: 'ReconcilerError', message: 'x' } }).status.sandbox!.serviceFQDN).toBe(FQDN);
  });

  test('foreign condition types are kept', () => {
    const other = condition('example.com/Audited', 'True', 'Yes');
    expect(claimStatus({ claim: claim({}, {}, { conditions: [other] }), now: NOW }).status.conditions).toContainEqual(other);
  });

  test('the patch replaces conditions and binding, with the resourceVersion precondition; null clears', () => {
    const c = claim({}, {}, { sandbox: { name: 'old', podIPs: ['1.1.1.1'] } });
    const withIps = claimStatus({ claim: c, sandbox: bound([ready()], []), now: NOW });
    expect(withIps.patch).toMatchObject({ metadata: { resourceVersion: '500' }, status: { sandbox: { name: 'py-pool-x', podIPs: null } } });
    expect(applyMergePatch(c, withIps.patch).status!.sandbox).toEqual({ name: 'py-pool-x' });
    const gone = claimStatus({ claim: c, now: NOW });
    expect(applyMergePatch(c, gone.patch).status!.sandbox).toBeUndefined();
  });

  const arbInput = fc.record({
    sandboxReady: fc.constantFrom('none', 'True', 'False', 'expired', 'absent'),
    finished: fc.boolean(),
    ips: fc.array(fc.ipV4(), { maxLength: 2 }),
    fqdn: fc.option(fc.constantFrom(FQDN, 'py-pool-x.team-a.svc.corp.internal'), { nil: undefined }),
    oldFqdn: fc.option(fc.constant(FQDN), { nil: undefined }),
    problem: fc.option(fc.constantFrom('TemplateNotFound', 'AdoptionConflict', 'ReconcilerError'), { nil: undefined }),
    expired: fc.boolean(),
    keepBinding: fc.boolean(),
    oldSandbox: fc.option(fc.constantFrom('a', 'py-pool-x'), { nil: undefined }),
  });

  type Generated = typeof arbInput extends fc.Arbitrary<infer T> ? T : never;

  function build(a: Generated): StatusInput {
    const conditions: Condition[] = [];
    if (a.sandboxReady === 'True') conditions.push(ready());
    if (a.sandboxReady === 'False') conditions.push(notReady());
    if (a.sandboxReady === 'expired') conditions.push(condition('Ready', 'False', 'SandboxExpired'));
    if (a.finished) conditions.push(condition('Finished', 'True', 'PodFailed'));
    return {
      claim: claim({}, {}, a.oldSandbox ? { sandbox: { name: a.oldSandbox, ...(a.oldFqdn ? { serviceFQDN: a.oldFqdn } : {}) } } : undefined),
      ...(a.sandboxReady !== 'absent' ? { sandbox: a.fqdn ? served(bound(conditions, a.ips), a.fqdn) : bound(conditions, a.ips) } : {}),
      ...(a.problem ? { problem: { reason: a.problem, message: 'm' } } : {}),
      expired: a.expired,
      keepBinding: a.keepBinding,
      now: NOW,
    };
  }

  test('writing the status and deciding again changes nothing; Ready is always there; sorted (fast-check)', () => {
    fc.assert(fc.property(arbInput, (a) => {
      const first = claimStatus(build(a));
      const types = first.status.conditions!.map((c) => c.type);
      expect(types).toEqual([...types].sort());
      expect(types).toContain('Ready');
      if (first.changed) {
        const written = applyMergePatch(build(a).claim, first.patch);
        const again = claimStatus({ ...build(a), claim: written });
        expect(again.changed).toBe(false);
        expect(again.patch).toBeUndefined();
      }
      if (build(a).sandbox) expect(first.status.sandbox?.serviceFQDN).toBe(a.fqdn);
      const readyCondition = first.status.conditions!.find((c) => c.type === 'Ready')!;
      expect(readyCondition.observedGeneration).toBe(3);
    }));
  });
});
