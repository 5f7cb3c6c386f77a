import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NOW, claim, iso, member, notReady, ownerRef, ready, sandbox } from './fixtures';
import { recoverBinding } from '../../../src/controllers/claim/plan';
import { type Sandbox } from '../../../src/model';

const ofClaim = (name: string, uid = 'claim-uid', o: Parameters<typeof member>[0] = {}): Sandbox => {
  const m = member({ name, ...o });
  return { ...m, metadata: { ...m.metadata, ownerReferences: [ownerRef('SandboxClaim', 'my-claim', uid)] } };
};

describe('recoverBinding', () => {
  test('the Sandbox controlled by the claim\'s UID is the binding, whatever the status says', () => {
    const mine = ofClaim('py-pool-a');
    const c = claim({}, {}, { sandbox: { name: 'something-else' } });
    expect(recoverBinding(c, [member({ name: 'something-else' }), mine])).toEqual({ kind: 'bound', sandbox: mine });
  });

  test('a missing launch-type is repaired: cold when named after the claim, warm otherwise', () => {
    const cold = ofClaim('my-claim', 'claim-uid', { labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } });
    const warm = ofClaim('py-pool-a', 'claim-uid', { labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } });
    expect(recoverBinding(claim(), [cold])).toMatchObject({ launchTypePatch: { metadata: { labels: { [SandboxLabels.LAUNCH_TYPE]: 'cold' } } } });
    expect(recoverBinding(claim(), [warm])).toMatchObject({ launchTypePatch: { metadata: { labels: { [SandboxLabels.LAUNCH_TYPE]: 'warm' } } } });
  });

  test('a Sandbox of a previous claim with the same name is not ours', () => {
    const previous = ofClaim('my-claim', 'old-claim-uid');
    expect(recoverBinding(claim(), [previous])).toMatchObject({ kind: 'unbound', coldBlocked: { reason: 'SandboxCreatePending', transient: true } });
  });

  test('a namesake someone else owns blocks the cold path only; warm adoption stays open', () => {
    const foreign = sandbox({ name: 'my-claim' });
    expect(recoverBinding(claim(), [foreign])).toEqual({
      kind: 'unbound',
      clearStatus: false,
      coldBlocked: { reason: 'ReconcilerError', message: expect.stringMatching(/^Error seen: Sandbox "my-claim" exists and is not controlled by this claim/), transient: false },
    });
    const deleting = sandbox({ name: 'my-claim', deleting: true });
    expect(recoverBinding(claim(), [deleting])).toMatchObject({ coldBlocked: { transient: true } });
  });

  test('our adoption, not in the cache yet: wait rather than adopt another', () => {
    const m = member({ name: 'py-pool-a' });
    expect(recoverBinding(claim(), [m], 'py-pool-a')).toEqual({ kind: 'pending', sandboxName: 'py-pool-a' });
  });

  test('our cold create, not in the cache yet: wait rather than create it again', () => {
    expect(recoverBinding(claim(), [], 'c')).toEqual({ kind: 'pending', sandboxName: 'c' });
  });

  test('a status naming a Sandbox we do not own is cleared', () => {
    const c = claim({}, {}, { sandbox: { name: 'py-pool-a' } });
    expect(recoverBinding(c, [member({ name: 'py-pool-a' })])).toEqual({ kind: 'unbound', clearStatus: true });
    expect(recoverBinding(c, [])).toEqual({ kind: 'unbound', clearStatus: true });
  });

  test('several owned: keep the one the status names, else a Ready one, else the oldest', () => {
    const a = ofClaim('a', 'claim-uid', { age: 90_000, conditions: [notReady()] });
    const b = ofClaim('b', 'claim-uid', { age: 50_000 });
    const c = ofClaim('c', 'claim-uid', { age: 10_000 });
    expect(recoverBinding(claim({}, {}, { sandbox: { name: 'c' } }), [a, b, c])).toMatchObject({ kind: 'multiple', keep: c, release: [a, b] });
    expect(recoverBinding(claim(), [a, b, c])).toMatchObject({ kind: 'multiple', keep: b, release: [a, c] });
    expect(recoverBinding(claim(), [{ ...a }, { ...b, status: { conditions: [notReady()] } }])).toMatchObject({ kind: 'multiple', keep: { metadata: { name: 'a' } } });
  });

  test('never binds a Sandbox another claim or a pool controls; releases only its own (fast-check)', () => {
    const arb = fc.array(fc.record({
      owner: fc.constantFrom('me', 'other-claim', 'pool', 'none', 'previous'),
      named: fc.constantFrom('my-claim', 'x', 'y'),
      ready: fc.boolean(),
    }), { maxLength: 6 });
    fc.assert(fc.property(arb, fc.option(fc.constantFrom('x', 'y', 'my-claim'), { nil: undefined }), (specs, statusName) => {
      const sandboxes = specs.map((s, i) => {
        const base = member({ name: `${s.named}`, conditions: s.ready ? [ready()] : [notReady()] });
        const uid = `s${i}`;
        const owners = {
          'me': [ownerRef('SandboxClaim', 'my-claim', 'claim-uid')],
          'other-claim': [ownerRef('SandboxClaim', 'other', 'other-uid')],
          'pool': base.metadata.ownerReferences!,
          'none': [],
          'previous': [ownerRef('SandboxClaim', 'my-claim', 'old-uid')],
        }[s.owner];
        return { ...base, metadata: { ...base.metadata, uid, ownerReferences: owners, creationTimestamp: iso(NOW - i) } };
      });
      const result = recoverBinding(claim({}, {}, statusName ? { sandbox: { name: statusName } } : undefined), sandboxes);
      const mine = sandboxes.filter((_, i) => specs[i].owner === 'me');
      if (result.kind === 'bound') {expect(mine).toEqual([result.sandbox]);} else if (result.kind === 'multiple') {
        expect([result.keep, ...result.release].sort((a, b) => a.metadata.uid!.localeCompare(b.metadata.uid!))).toEqual(mine);
      } else {expect(mine).toEqual([]);}
    }));
  });
});
