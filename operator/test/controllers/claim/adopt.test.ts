import * as fc from 'fast-check';
import { SandboxAnnotations, SandboxLabels, isReservedLabelKey } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, TEMPLATE, claim, member, ownerRef, template } from './fixtures';
import { POOL_ONLY_LABELS, adoptionPatch } from '../../../src/controllers/claim/adopt';
import { applyMergePatch, type Sandbox } from '../../../src/model';

const CLAIM_REF = { ...ownerRef('SandboxClaim', 'my-claim', 'claim-uid'), blockOwnerDeletion: true };

function adopt(sandbox: Sandbox, c = claim(), t: typeof TEMPLATE | undefined = TEMPLATE) {
  const result = adoptionPatch(sandbox, c, t, NOW);
  if (!result.ok) throw new Error(result.problem.message);
  return result.value;
}

describe('adoptionPatch', () => {
  const m = member({ name: 'py-pool-abcde', podIPs: ['10.0.0.1'] });

  test('one conditional patch: ownership, labels, annotations, Pod metadata', () => {
    const { patch } = adopt(m, claim({}, { annotations: { [SandboxAnnotations.TRACE_CONTEXT]: '{"traceparent":"00-x"}' } }));
    expect(patch).toEqual({
      metadata: {
        resourceVersion: '100',
        ownerReferences: [CLAIM_REF],
        labels: {
          [SandboxLabels.WARM_POOL_SANDBOX]: null,
          [SandboxLabels.SANDBOX_TEMPLATE_HASH]: null,
          [SandboxLabels.SANDBOX_POD_TEMPLATE_HASH]: null,
          [SandboxLabels.LAUNCH_TYPE]: 'warm',
          [SandboxLabels.CLAIM_UID]: 'claim-uid',
          [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
          [SandboxLabels.CREATED_BY]: null,
        },
        annotations: { [SandboxAnnotations.POD_NAME]: 'py-pool-abcde', [SandboxAnnotations.TRACE_CONTEXT]: '{"traceparent":"00-x"}' },
      },
      spec: {
        podTemplate: {
          metadata: {
            labels: {
              [SandboxLabels.WARM_POOL_SANDBOX]: null,
              [SandboxLabels.SANDBOX_TEMPLATE_HASH]: null,
              [SandboxLabels.SANDBOX_POD_TEMPLATE_HASH]: null,
              [SandboxLabels.CLAIM_UID]: 'claim-uid',
            },
            annotations: { [SandboxAnnotations.SAFE_TO_EVICT]: null },
          },
        },
      },
    });
  });

  test('the expected object: the claim controls it, the pool lets go, the spec is untouched', () => {
    const { expected } = adopt(m);
    expect(expected.metadata.ownerReferences).toEqual([CLAIM_REF]);
    expect(expected.metadata.labels).toEqual({
      [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
      [SandboxLabels.LAUNCH_TYPE]: 'warm',
      [SandboxLabels.CLAIM_UID]: 'claim-uid',
    });
    expect(expected.spec.podTemplate.spec).toEqual(m.spec.podTemplate.spec);
    // The pool's safe-to-evict is gone; the server keeps the emptied map, as a merge patch leaves it.
    expect(expected.spec.podTemplate.metadata).toEqual({
      labels: { team: 'a', [SandboxLabels.CLAIM_UID]: 'claim-uid', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') },
      annotations: {},
    });
    expect(expected.status).toEqual(m.status);
  });

  test('the claim\'s created-by and additional metadata are applied', () => {
    const c = claim({ additionalPodMetadata: { labels: { 'sandbox.users.io/run': '7' }, annotations: { note: 'hi' } } }, { labels: { [SandboxLabels.CREATED_BY]: 'go-client' } });
    const { expected } = adopt(m, c);
    expect(expected.metadata.labels![SandboxLabels.CREATED_BY]).toBe('go-client');
    expect(expected.spec.podTemplate.metadata!.labels).toMatchObject({ 'sandbox.users.io/run': '7', [SandboxLabels.CREATED_BY]: 'go-client' });
    expect(expected.spec.podTemplate.metadata!.annotations).toEqual({ note: 'hi' });
  });

  test('a template label edit since the member was built reaches the claimed Pod', () => {
    const edited = template({ podTemplate: { metadata: { labels: { team: 'b' } }, spec: TEMPLATE.spec.podTemplate.spec } });
    expect(adopt(m, claim(), edited).expected.spec.podTemplate.metadata!.labels!.team).toBe('b');
  });

  test('without the template, the member\'s own Pod metadata minus the pool\'s decorations', () => {
    const { expected } = adopt(m, claim(), undefined);
    expect(expected.spec.podTemplate.metadata).toEqual({
      labels: { team: 'a', [SandboxLabels.CLAIM_UID]: 'claim-uid', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') },
      annotations: {},
    });
  });

  test('a template that says safe-to-evict "false" keeps it', () => {
    const t = template({ podTemplate: { metadata: { annotations: { [SandboxAnnotations.SAFE_TO_EVICT]: 'false' } }, spec: TEMPLATE.spec.podTemplate.spec } });
    const built = member({ template: t });
    expect(adopt(built, claim(), t).expected.spec.podTemplate.metadata!.annotations).toEqual({ [SandboxAnnotations.SAFE_TO_EVICT]: 'false' });
  });

  test('an existing pod-name annotation is kept; non-controller owners stay', () => {
    const other = ownerRef('Thing', 't', 't-uid', false);
    const s: Sandbox = { ...m, metadata: { ...m.metadata, annotations: { [SandboxAnnotations.POD_NAME]: 'custom' }, ownerReferences: [other, ...m.metadata.ownerReferences!] } };
    const { expected } = adopt(s);
    expect(expected.metadata.annotations![SandboxAnnotations.POD_NAME]).toBe('custom');
    expect(expected.metadata.ownerReferences).toEqual([other, CLAIM_REF]);
  });

  test('additional metadata that overrides the template is a ReconcilerError', () => {
    const result = adoptionPatch(m, claim({ additionalPodMetadata: { labels: { team: 'z' } } }), TEMPLATE, NOW);
    expect(result).toMatchObject({ ok: false, problem: { reason: 'ReconcilerError' } });
  });

  const arbLabels = fc.dictionary(
    fc.constantFrom('app', 'team', 'example.com/x', ...POOL_ONLY_LABELS, SandboxLabels.LAUNCH_TYPE, SandboxLabels.CREATED_BY, SandboxLabels.CLAIM_UID, SandboxLabels.SANDBOX_TEMPLATE_REF_HASH),
    fc.constantFrom('v1', 'v2', NameHash.of('python')),
  );
  const arbOwners = fc.array(fc.record({ kind: fc.constantFrom('SandboxWarmPool', 'Thing'), controller: fc.boolean() }), { maxLength: 3 });

  test('exactly one controller (the claim), no pool labels, reserved labels set right, the rest untouched (fast-check)', () => {
    fc.assert(fc.property(arbLabels, arbOwners, fc.option(fc.constantFrom('go-client', 'python-client'), { nil: undefined }), fc.boolean(), (labels, owners, createdBy, haveTemplate) => {
      const s: Sandbox = {
        ...m,
        metadata: {
          ...m.metadata,
          labels,
          ownerReferences: owners.map((o, i) => ownerRef(o.kind, `o${i}`, `u${i}`, o.controller)),
        },
      };
      const c = claim({}, createdBy ? { labels: { [SandboxLabels.CREATED_BY]: createdBy } } : {});
      const { patch, expected } = adopt(s, c, haveTemplate ? TEMPLATE : undefined);
      expect((patch.metadata as { resourceVersion: string }).resourceVersion).toBe(s.metadata.resourceVersion);
      const controllers = expected.metadata.ownerReferences!.filter((r) => r.controller);
      expect(controllers).toEqual([CLAIM_REF]);
      expect(expected.metadata.ownerReferences!.filter((r) => !r.controller)).toEqual(s.metadata.ownerReferences!.filter((r) => !r.controller));
      const out = expected.metadata.labels!;
      for (const key of POOL_ONLY_LABELS) {
        expect(out).not.toHaveProperty([key]);
        expect(expected.spec.podTemplate.metadata?.labels ?? {}).not.toHaveProperty([key]);
      }
      expect(out[SandboxLabels.LAUNCH_TYPE]).toBe('warm');
      expect(out[SandboxLabels.CLAIM_UID]).toBe('claim-uid');
      expect(out[SandboxLabels.CREATED_BY]).toBe(createdBy);
      const refHash = labels[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] ?? NameHash.of('python');
      expect(out[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]).toBe(refHash);
      expect(expected.spec.podTemplate.metadata?.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]).toBe(refHash);
      for (const [key, value] of Object.entries(labels)) if (!isReservedLabelKey(key)) expect(out[key]).toBe(value);
      expect(expected.spec.podTemplate.spec).toEqual(s.spec.podTemplate.spec);
      expect(expected.metadata.name).toBe(s.metadata.name);
    }));
  });
});
