import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { claim } from './fixtures';
import { claimPodMetadata, validateAdditionalPodMetadata } from '../../../src/controllers/claim/adopt';

describe('validateAdditionalPodMetadata', () => {
  interface Case {
    readonly name: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly problem?: RegExp;
    readonly domains?: string[];
  }
  test.each<Case>([
    { name: 'nothing to check' },
    { name: 'an allowed label domain', labels: { 'sandbox.users.io/team': 'a' } },
    { name: 'a subdomain of an allowed domain', labels: { 'x.sandbox.users.io/team': 'a' } },
    { name: 'an unprefixed label', labels: { team: 'a' }, problem: /labels\["team"\]: .*needs a domain prefix/ },
    { name: 'another domain', labels: { 'example.com/team': 'a' }, problem: /labels\["example.com\/team"\]: .*not allowed/ },
    { name: 'a configured allow-list', labels: { 'example.com/team': 'a' }, domains: ['example.com'] },
    { name: 'app=sandbox-router is refused', labels: { app: 'sandbox-router' }, problem: /labels\["app"\]/ },
    { name: 'a bad label value', labels: { 'sandbox.users.io/team': 'a b' }, problem: /value "a b"/ },
    { name: 'an unprefixed annotation', annotations: { note: 'x' } },
    { name: 'a kubernetes.io annotation', annotations: { 'kubernetes.io/x': 'y' }, problem: /annotations\["kubernetes.io\/x"\]: .*reserved/ },
    { name: 'an agents.x-k8s.io annotation', annotations: { 'agents.x-k8s.io/claim-uid': 'y' }, problem: /reserved/ },
    { name: 'safe-to-evict may be set', annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' } },
    { name: 'an invalid key', annotations: { '-bad': 'x' }, problem: /annotations\["-bad"\]/ },
  ])('$name', ({ labels, annotations, problem, domains }) => {
    const c = claim({ additionalPodMetadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) } });
    const result = validateAdditionalPodMetadata(c, domains);
    if (!problem) expect(result).toBeUndefined();
    else expect(result).toEqual({ reason: 'InvalidMetadata', message: expect.stringMatching(problem) });
  });

  test('valid exactly when every key is, and every bad key is named (fast-check)', () => {
    const labelKey = fc.constantFrom('team', 'sandbox.users.io/team', 'example.com/x', 'a.sandbox.users.io/y', 'sandbox.users.io/-bad');
    const annotationKey = fc.constantFrom('note', 'kubernetes.io/x', 'example.com/y', 'cluster-autoscaler.kubernetes.io/safe-to-evict', 'agents.x-k8s.io/z');
    const good = new Set(['sandbox.users.io/team', 'a.sandbox.users.io/y', 'note', 'example.com/y', 'cluster-autoscaler.kubernetes.io/safe-to-evict']);
    fc.assert(fc.property(fc.dictionary(labelKey, fc.constantFrom('v', '')), fc.dictionary(annotationKey, fc.string()), (labels, annotations) => {
      const result = validateAdditionalPodMetadata(claim({ additionalPodMetadata: { labels, annotations } }));
      const bad = [...Object.keys(labels), ...Object.keys(annotations)].filter((k) => !good.has(k));
      expect(result === undefined).toBe(bad.length === 0);
      for (const k of bad) expect(result!.message).toContain(`["${k}"]`);
    }));
  });

  test('every problem is reported, in key order', () => {
    const c = claim({ additionalPodMetadata: { labels: { zeta: '1', alpha: '2' }, annotations: { 'k8s.io/a': 'b' } } });
    const message = validateAdditionalPodMetadata(c)!.message;
    expect(message.indexOf('labels["alpha"]')).toBeLessThan(message.indexOf('labels["zeta"]'));
    expect(message).toContain('annotations["k8s.io/a"]');
  });
});

describe('claimPodMetadata', () => {
  test('template metadata, plus the claim\'s, plus identity labels', () => {
    const c = claim({ additionalPodMetadata: { labels: { 'sandbox.users.io/t': 'x' }, annotations: { note: 'n' } } }, { labels: { [SandboxLabels.CREATED_BY]: 'python-client' } });
    const result = claimPodMetadata({ labels: { team: 'a' }, annotations: { a: 'b' } }, c, 'python');
    expect(result).toEqual({
      ok: true,
      value: {
        labels: {
          'team': 'a',
          'sandbox.users.io/t': 'x',
          [SandboxLabels.CLAIM_UID]: 'claim-uid',
          [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
          [SandboxLabels.CREATED_BY]: 'python-client',
        },
        annotations: { a: 'b', note: 'n' },
      },
    });
  });

  test('the same value as the template is fine; a different one is a ReconcilerError', () => {
    expect(claimPodMetadata({ labels: { l: 'v' } }, claim({ additionalPodMetadata: { labels: { l: 'v' } } }), 't').ok).toBe(true);
    const conflict = claimPodMetadata({ annotations: { a: 'x' } }, claim({ additionalPodMetadata: { annotations: { a: 'y' } } }), 't');
    expect(conflict).toEqual({ ok: false, problem: { reason: 'ReconcilerError', message: expect.stringMatching(/annotation "a"="y" conflicts with the template's value "x"/) } });
  });

  test('a created-by the template carries is removed when the claim has none', () => {
    const result = claimPodMetadata({ labels: { [SandboxLabels.CREATED_BY]: 'controller' } }, claim(), 't');
    expect(result.ok && result.value.labels![SandboxLabels.CREATED_BY]).toBeUndefined();
  });

  test('identity labels always win, template keys survive, claim keys are added (fast-check)', () => {
    const map = fc.dictionary(fc.constantFrom('a', 'b', 'c', SandboxLabels.CLAIM_UID, SandboxLabels.SANDBOX_TEMPLATE_REF_HASH), fc.constantFrom('1', '2'));
    fc.assert(fc.property(map, map, (base, extra) => {
      const result = claimPodMetadata({ labels: base }, claim({ additionalPodMetadata: { labels: extra } }), 'tpl');
      const conflict = Object.keys(extra).some((k) => k in base && base[k] !== extra[k]);
      expect(result.ok).toBe(!conflict);
      if (!result.ok) return;
      const labels = result.value.labels!;
      expect(labels[SandboxLabels.CLAIM_UID]).toBe('claim-uid');
      expect(labels[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]).toBe(NameHash.of('tpl'));
      for (const k of [...Object.keys(base), ...Object.keys(extra)]) expect(labels).toHaveProperty([k]);
    }));
  });
});
