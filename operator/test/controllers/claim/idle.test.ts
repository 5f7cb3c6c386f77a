import { SandboxAnnotations } from '#api/labels';
import { NOW, TEMPLATE, claim, member, pool, template } from './fixtures';
import { adoptionPatch } from '../../../src/controllers/claim/adopt';
import { coldSandbox } from '../../../src/controllers/claim/cold';
import { claimedIdlePolicy } from '../../../src/controllers/claim/idle';
import type { IdlePolicy, Sandbox, SandboxClaim, SandboxTemplate } from '../../../src/model';

const STAMP = new Date(NOW).toISOString();
const withPolicy = (idlePolicy: IdlePolicy) => template({ ...TEMPLATE.spec, idlePolicy });
const claimWith = (idlePolicy: IdlePolicy) => claim({ idlePolicy });
const m = member({ name: 'py-pool-abcde', podIPs: ['10.0.0.1'] });

function adopt(sandbox: Sandbox, c: SandboxClaim, t: SandboxTemplate | undefined): any {
  const result = adoptionPatch(sandbox, c, t, NOW);
  if (!result.ok) throw new Error(result.problem.message);
  return result.value;
}

function cold(c: SandboxClaim, t: SandboxTemplate): Sandbox {
  const result = coldSandbox(c, pool(), t, NOW);
  if (!result.ok) throw new Error(result.problem.message);
  return result.value;
}

describe('claimedIdlePolicy', () => {
  test.each<[string, IdlePolicy | undefined, IdlePolicy | undefined, IdlePolicy | undefined]>([
    ['the template\'s', undefined, { suspendAfterSeconds: 300 }, { suspendAfterSeconds: 300, resumeOnRequest: true }],
    ['the claim\'s overrides the template\'s, whole', { suspendAfterSeconds: 60 }, { suspendAfterSeconds: 300, resumeOnRequest: false }, { suspendAfterSeconds: 60, resumeOnRequest: true }],
    ['the claim\'s without a template policy', { suspendAfterSeconds: 5, resumeOnRequest: false }, undefined, { suspendAfterSeconds: 5, resumeOnRequest: false }],
    ['neither: none', undefined, undefined, undefined],
  ])('%s', (_name, claimPolicy, templatePolicy, effective) => {
    const c = claimPolicy ? claimWith(claimPolicy) : claim();
    const t = templatePolicy ? withPolicy(templatePolicy) : TEMPLATE;
    expect(claimedIdlePolicy(c, t)).toEqual(effective);
  });

  test('the template unknown (not in the cache): the claim\'s alone', () => {
    expect(claimedIdlePolicy(claimWith({ suspendAfterSeconds: 9 }), undefined)).toEqual({ suspendAfterSeconds: 9, resumeOnRequest: true });
    expect(claimedIdlePolicy(claim(), undefined)).toBeUndefined();
  });
});

describe('warm adoption carries the idle policy in its one write', () => {
  test('the template\'s policy and the claim as the last activity, beside the ownership change', () => {
    const { patch, expected } = adopt(m, claim(), withPolicy({ suspendAfterSeconds: 300 }));
    expect(patch.metadata.resourceVersion).toBe('100');
    expect(patch.metadata.annotations[SandboxAnnotations.LAST_ACTIVITY]).toBe(STAMP);
    expect(patch.spec.idlePolicy).toEqual({ suspendAfterSeconds: 300, resumeOnRequest: true });
    // Pod metadata still rides in the same patch.
    expect(patch.spec.podTemplate.metadata).toBeDefined();
    expect(expected.spec.idlePolicy).toEqual({ suspendAfterSeconds: 300, resumeOnRequest: true });
    expect(expected.metadata.annotations[SandboxAnnotations.LAST_ACTIVITY]).toBe(STAMP);
  });

  test('the claim\'s policy wins over the template\'s', () => {
    const { patch } = adopt(m, claimWith({ suspendAfterSeconds: 7, resumeOnRequest: false }), withPolicy({ suspendAfterSeconds: 300 }));
    expect(patch.spec.idlePolicy).toEqual({ suspendAfterSeconds: 7, resumeOnRequest: false });
  });

  test('neither sets one: the patch is exactly the one without the feature (no policy, no stamp)', () => {
    const { patch } = adopt(m, claim(), TEMPLATE);
    expect(patch.spec).not.toHaveProperty('idlePolicy');
    expect(patch.metadata.annotations ?? {}).not.toHaveProperty([SandboxAnnotations.LAST_ACTIVITY]);
    // Negative control: the same member with a template policy does get both.
    expect(adopt(m, claim(), withPolicy({ suspendAfterSeconds: 1 })).patch.spec.idlePolicy).toBeDefined();
  });

  test('a member that somehow carries a policy loses it when neither the claim nor the template sets one', () => {
    const stray: Sandbox = { ...m, spec: { ...m.spec, idlePolicy: { suspendAfterSeconds: 1, resumeOnRequest: false } } };
    const { patch, expected } = adopt(stray, claim(), TEMPLATE);
    expect(patch.spec.idlePolicy).toBeNull();
    expect(expected.spec).not.toHaveProperty('idlePolicy');
    // A policy set replaces every field of the stray one.
    const replaced = adopt(stray, claimWith({ suspendAfterSeconds: 30 }), TEMPLATE).expected.spec.idlePolicy;
    expect(replaced).toEqual({ suspendAfterSeconds: 30, resumeOnRequest: true });
  });
});

describe('the cold Sandbox carries the idle policy in its create', () => {
  test('the template\'s policy, and last-activity at the claim', () => {
    const s = cold(claim(), withPolicy({ suspendAfterSeconds: 120 }));
    expect(s.spec.idlePolicy).toEqual({ suspendAfterSeconds: 120, resumeOnRequest: true });
    expect(s.metadata.annotations![SandboxAnnotations.LAST_ACTIVITY]).toBe(STAMP);
  });

  test('the claim\'s policy wins', () => {
    expect(cold(claimWith({ suspendAfterSeconds: 4 }), withPolicy({ suspendAfterSeconds: 120 })).spec.idlePolicy)
      .toEqual({ suspendAfterSeconds: 4, resumeOnRequest: true });
  });

  test('neither: no policy and no stamp', () => {
    const s = cold(claim(), TEMPLATE);
    expect(s.spec).not.toHaveProperty('idlePolicy');
    expect(s.metadata.annotations).not.toHaveProperty([SandboxAnnotations.LAST_ACTIVITY]);
  });
});
