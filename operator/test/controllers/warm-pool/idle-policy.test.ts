/**
 * A template's idlePolicy governs the Sandboxes claimed from it, not the pool's members (an
 * unclaimed member is idle by design): members are built without it, and adding, changing or
 * removing it leaves every member current, so no pool is rolled for a policy edit.
 */
import { FLAGS, TEMPLATE, member, pool } from './fixtures';
import { buildPoolSandbox } from '../../../src/controllers/warm-pool/desired';
import { isStale, staleCheck, templateFingerprint } from '../../../src/model/blueprint';
import { template } from '../template/fixtures';

const withIdle = template({ ...TEMPLATE.spec, idlePolicy: { suspendAfterSeconds: 60, resumeOnRequest: true } });

describe('pool members and the template\'s idlePolicy', () => {
  test('a member is built without the policy', () => {
    const built = buildPoolSandbox(pool(), withIdle, FLAGS);
    expect(built.spec).not.toHaveProperty('idlePolicy');
    expect(built).toEqual(buildPoolSandbox(pool(), TEMPLATE, FLAGS));
  });

  test('the blueprint fingerprint ignores it', () => {
    expect(templateFingerprint(withIdle)).toEqual(templateFingerprint(TEMPLATE));
  });

  test('members built before the policy was set stay current, by label and by comparison (orphans)', () => {
    const old = member({ name: 'py-pool-old' });
    const fp = templateFingerprint(withIdle);
    expect(isStale(old, 'python', fp, false)).toBe(false);
    expect(isStale(old, 'python', fp, true)).toBe(false);
    expect(staleCheck('python', fp)(old, false)).toBe(false);
    // Negative control: a change of the pod spec does make it stale.
    const edited = template({ ...withIdle.spec, podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });
    expect(isStale(old, 'python', templateFingerprint(edited), false)).toBe(true);
  });
});
