import * as fc from 'fast-check';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { PUBLIC_DNS_NAMESERVERS } from '#api/network-policy-defaults';
import { FLAGS, NOW, NS, TEMPLATE, member, pool, template } from './fixtures';
import { classifyMembers } from '../../../src/controllers/warm-pool/classify';
import { buildPoolSandbox, launchTypeLabelPatch, memberName, orphanAdoptionPatch, poolSelector, withMemberName } from '../../../src/controllers/warm-pool/desired';
import { poolFlags } from '../../../src/controllers/warm-pool/types';
import { applyMergePatch } from '../../../src/model';
import { sandboxMatches, templateFingerprint } from '../../../src/model/blueprint';
import { ownerRef } from '../template/fixtures';

describe('memberName', () => {
  test('the pool name, a dash and 5 characters from the API server\'s generateName alphabet', () => {
    fc.assert(fc.property(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (r) => {
      expect(memberName(pool(), () => r)).toMatch(/^py-pool-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    }));
  });

  test('a long pool name is cut to 58 characters before the suffix, as generateName does', () => {
    const name = memberName(pool({}, { name: 'p'.repeat(70) }));
    expect(name).toHaveLength(63);
    expect(name.slice(0, 58)).toBe('p'.repeat(58));
  });

  test('withMemberName sets the name and the pod-name annotation, keeping the rest', () => {
    const named = withMemberName(buildPoolSandbox(pool(), TEMPLATE, FLAGS), 'py-pool-abcde');
    expect(named.metadata.name).toBe('py-pool-abcde');
    expect(named.metadata.annotations).toEqual({ [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'python', [SandboxAnnotations.POD_NAME]: 'py-pool-abcde' });
  });
});

describe('buildPoolSandbox', () => {
  const built = buildPoolSandbox(pool(), TEMPLATE, FLAGS);

  test('no name yet, namespace and a controller ref to the pool', () => {
    expect(built.metadata).toMatchObject({ name: '', namespace: NS });
    expect(built.metadata.generateName).toBeUndefined();
    expect(built.metadata.ownerReferences).toEqual([{ ...ownerRef('SandboxWarmPool', 'py-pool', 'pool-uid'), blockOwnerDeletion: true }]);
    expect(built.apiVersion).toBe('agents.x-k8s.io/v1beta1');
    expect(built.kind).toBe('Sandbox');
  });

  test('labels: membership, template ref, our blueprint hash, launch type, created-by', () => {
    expect(built.metadata.labels).toEqual({
      [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of('py-pool'),
      [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
      [SandboxLabels.SANDBOX_TEMPLATE_HASH]: templateFingerprint(TEMPLATE).hash,
      [SandboxLabels.SANDBOX_POD_TEMPLATE_HASH]: expect.stringMatching(/^[0-9a-f]{8}$/),
      [SandboxLabels.LAUNCH_TYPE]: 'warm',
      [SandboxLabels.CREATED_BY]: 'controller',
    });
    expect(built.metadata.annotations).toEqual({ [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'python' });
  });

  test('podTemplate: template labels plus the pool labels, safe-to-evict, secure defaults', () => {
    const { labels, annotations } = built.spec.podTemplate.metadata!;
    expect(labels).toMatchObject({ team: 'a', [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of('py-pool') });
    expect(labels![SandboxLabels.LAUNCH_TYPE]).toBeUndefined();
    expect(annotations).toEqual({ [SandboxAnnotations.SAFE_TO_EVICT]: 'true' });
    expect(built.spec.podTemplate.spec).toMatchObject({ automountServiceAccountToken: false, dnsPolicy: 'None', dnsConfig: { nameservers: [...PUBLIC_DNS_NAMESERVERS] } });
    expect(built.spec).not.toHaveProperty('shutdownTime');
    expect(built.spec).not.toHaveProperty('operatingMode');
  });

  test.each<[string, boolean, Record<string, string> | undefined, Record<string, string> | undefined]>([
    ['eviction off: no annotation', false, undefined, undefined],
    ['the template says false: kept', true, { [SandboxAnnotations.SAFE_TO_EVICT]: 'false' }, { [SandboxAnnotations.SAFE_TO_EVICT]: 'false' }],
    ['other template annotations kept', true, { 'a.example/x': '1' }, { 'a.example/x': '1', [SandboxAnnotations.SAFE_TO_EVICT]: 'true' }],
  ])('safe-to-evict: %s', (_, eviction, templateAnnotations, expected) => {
    const t = template({ podTemplate: { metadata: { annotations: templateAnnotations }, spec: TEMPLATE.spec.podTemplate.spec } });
    const s = buildPoolSandbox(pool(), t, poolFlags({ 'enable-warm-pool-eviction': eviction }));
    expect(s.spec.podTemplate.metadata?.annotations).toEqual(expected);
  });

  test('VCTs and service are copied; the template is not modified', () => {
    const t = template({ service: false, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '1Gi' } } } }] });
    const before = structuredClone(t);
    const s = buildPoolSandbox(pool(), t, FLAGS);
    expect(s.spec.service).toBe(false);
    expect(s.spec.volumeClaimTemplates).toEqual(t.spec.volumeClaimTemplates);
    expect(s.spec.volumeClaimTemplates).not.toBe(t.spec.volumeClaimTemplates);
    expect(t).toEqual(before);
  });

  test('a built member is a fresh, active member of its pool for any template (fast-check)', () => {
    const arb = fc.record({
      image: fc.string({ minLength: 1, maxLength: 10 }),
      labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.stringMatching(/^[a-z]{0,5}$/), { maxKeys: 3 }),
      service: fc.constantFrom(undefined, true, false),
      unmanaged: fc.boolean(),
      token: fc.constantFrom(undefined, true, false),
      eviction: fc.boolean(),
    });
    fc.assert(fc.property(arb, (a) => {
      const t = template({
        podTemplate: { metadata: { labels: a.labels }, spec: { containers: [{ name: 'main', image: a.image }], ...(a.token === undefined ? {} : { automountServiceAccountToken: a.token }) } },
        ...(a.service === undefined ? {} : { service: a.service }),
        ...(a.unmanaged ? { networkPolicyManagement: 'Unmanaged' } : {}),
      });
      const p = pool({ updateStrategy: { type: 'Recreate' } });
      const s = buildPoolSandbox(p, t, poolFlags({ 'enable-warm-pool-eviction': a.eviction }));
      const observed = { ...s, metadata: { ...s.metadata, name: 'py-pool-abcde', uid: 'u1', creationTimestamp: new Date(NOW).toISOString() } };
      const members = classifyMembers(p, t, [observed], NOW, FLAGS);
      expect(members.active).toEqual([observed]);
      expect(members.stale).toEqual([]);
      expect(sandboxMatches(observed, templateFingerprint(t))).toBe(true);
    }));
  });
});

describe('member patches', () => {
  test('poolSelector is the membership label', () => {
    expect(poolSelector(pool())).toBe(`agents.x-k8s.io/warm-pool-sandbox=${NameHash.of('py-pool')}`);
  });

  test('orphanAdoptionPatch: the pool becomes controller, other owners stay, conditional on the version', () => {
    const other = ownerRef('ConfigMap', 'x', 'cm-uid', false);
    const orphan = { ...member({ owner: 'none' }), metadata: { ...member({ owner: 'none' }).metadata, ownerReferences: [other], resourceVersion: '55' } };
    const patch = orphanAdoptionPatch(pool(), orphan);
    const after = applyMergePatch(orphan, patch);
    expect(after.metadata.resourceVersion).toBe('55');
    expect(after.metadata.ownerReferences).toEqual([other, { ...ownerRef('SandboxWarmPool', 'py-pool', 'pool-uid'), blockOwnerDeletion: true }]);
    expect(after.metadata.labels![SandboxLabels.LAUNCH_TYPE]).toBe('warm');
    expect(after.metadata.labels![SandboxLabels.WARM_POOL_SANDBOX]).toBe(NameHash.of('py-pool'));
  });

  test('launchTypeLabelPatch sets warm, conditional on the version', () => {
    const m = member({ labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } });
    expect(launchTypeLabelPatch(m)).toEqual({ metadata: { resourceVersion: '100', labels: { [SandboxLabels.LAUNCH_TYPE]: 'warm' } } });
  });
});
