import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { applyMergePatch, mapPatch } from '../../src/model';
import { canonicalJson, isStale, podTemplateHash, sandboxMatches, templateFingerprint } from '../../src/model/blueprint';
import { applySecureDefaults, applyUpstreamDefaults } from '../../src/model/secure-defaults';
import { sandbox, template } from '../controllers/template/fixtures';

const json = fc.jsonValue({ maxDepth: 3 });

/** `value` with every object's keys in reverse order. */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).reverse().map((k) => [k, reversedKeys((value as Record<string, unknown>)[k])]));
  }
  return value;
}

describe('canonicalJson', () => {
  test.each<[string, unknown, unknown]>([
    ['key order', { b: 1, a: { d: 2, c: 3 } }, { a: { c: 3, d: 2 }, b: 1 }],
    ['absent, null, empty list and empty map are all unset', { a: undefined, b: null, c: [], d: {} }, {}],
    ['nested empties vanish', { spec: { env: [], labels: {} } }, {}],
    ['array positions are kept', { l: [{}, 1] }, { l: [null, 1] }],
  ])('equal: %s', (_, a, b) => {
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  test.each<[string, unknown, unknown]>([
    ['false is not unset', { service: false }, {}],
    ['an empty string is a value', { label: '' }, {}],
    ['zero is a value', { replicas: 0 }, {}],
    ['order inside lists matters', { l: [1, 2] }, { l: [2, 1] }],
  ])('different: %s', (_, a, b) => {
    expect(canonicalJson(a)).not.toBe(canonicalJson(b));
  });

  test('independent of key order, and a fixed point of parse (fast-check)', () => {
    fc.assert(fc.property(json, (value) => {
      const canonical = canonicalJson(value);
      expect(canonicalJson(reversedKeys(value))).toBe(canonical);
      expect(canonicalJson(JSON.parse(canonical))).toBe(canonical);
    }));
  });
});

describe('templateFingerprint', () => {
  const t = template();
  const fp = templateFingerprint(t);

  test('is 8 hex digits and stable', () => {
    expect(fp.hash).toMatch(/^[0-9a-f]{8}$/);
    expect(templateFingerprint(structuredClone(t))).toEqual(fp);
  });

  test.each<[string, Parameters<typeof template>[0], boolean]>([
    ['podTemplate label edits do not change it', { podTemplate: { metadata: { labels: { team: 'b' } }, spec: t.spec.podTemplate.spec } }, true],
    ['policy fields that do not reach the Pod do not change it', { envVarsInjectionPolicy: 'Allowed', volumeClaimTemplatesPolicy: 'Overrides' }, true],
    ['an image change does', { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } }, false],
    ['Unmanaged changes the Pod DNS, so it does', { networkPolicyManagement: 'Unmanaged' }, false],
    ['custom rules change the Pod DNS, so they do', { networkPolicy: { egress: [] } }, false],
    ['service true does', { service: true }, false],
    ['service false differs from unset', { service: false }, false],
    ['a VCT does', { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'] } }] }, false],
  ])('%s', (_, spec, same) => {
    expect(templateFingerprint(template(spec)).hash === fp.hash).toBe(same);
  });

  test('VCT metadata other than the name is ignored', () => {
    const vct = (labels: Record<string, string>) => template({ volumeClaimTemplates: [{ metadata: { name: 'data', labels }, spec: { storageClassName: 'fast' } }] });
    expect(templateFingerprint(vct({ a: '1' }))).toEqual(templateFingerprint(vct({ b: '2' })));
  });

  test('a Sandbox built from the template matches it; one with the raw (undefaulted) spec does not', () => {
    const built = sandbox({ spec: { podTemplate: { spec: applySecureDefaults(t.spec.podTemplate.spec, t) } } });
    expect(sandboxMatches(built, fp)).toBe(true);
    expect(sandboxMatches(sandbox({ spec: { podTemplate: t.spec.podTemplate } }), fp)).toBe(false);
  });

  test('a member built before the hardening defaults (or by upstream) is not stale: an upgrade replaces no warm member', () => {
    const legacy = sandbox({
      labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(t.metadata.name), [SandboxLabels.SANDBOX_TEMPLATE_HASH]: 'oldhash0' },
      spec: { podTemplate: { spec: applyUpstreamDefaults(t.spec.podTemplate.spec, t) } },
    });
    expect(legacy.spec.podTemplate.spec.securityContext).toBeUndefined();
    expect(isStale(legacy, t.metadata.name, fp, false)).toBe(false);
    expect(isStale(legacy, t.metadata.name, fp, true)).toBe(false);
    // A real edit still makes it stale.
    const edited = template({ podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });
    expect(isStale(legacy, t.metadata.name, templateFingerprint(edited), false)).toBe(true);
  });

  test('a template that writes the hardening itself has one blueprint: hardened and legacy members are the same', () => {
    const written = template({
      podTemplate: {
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{ name: 'main', image: 'python:3.12', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
        },
      },
    });
    const f = templateFingerprint(written);
    expect(f.upstreamCanonical).toBe(f.canonical);
  });

  test('sandboxMatches agrees with the hash (fast-check)', () => {
    const arbSpec = fc.record({
      image: fc.constantFrom('a', 'b'),
      service: fc.constantFrom(undefined, true, false),
      unmanaged: fc.boolean(),
      token: fc.constantFrom(undefined, true),
      label: fc.constantFrom('x', 'y'),
    });
    const build = (s: { image: string; service?: boolean; unmanaged: boolean; token?: boolean; label: string }) => template({
      podTemplate: { metadata: { labels: { l: s.label } }, spec: { containers: [{ name: 'main', image: s.image }], ...(s.token ? { automountServiceAccountToken: true } : {}) } },
      ...(s.service === undefined ? {} : { service: s.service }),
      ...(s.unmanaged ? { networkPolicyManagement: 'Unmanaged' } : {}),
    });
    fc.assert(fc.property(arbSpec, arbSpec, (a, b) => {
      const ta = build(a);
      const tb = build(b);
      const member = sandbox({ spec: { ...ta.spec, podTemplate: { spec: applySecureDefaults(ta.spec.podTemplate.spec, ta) } } });
      const fb = templateFingerprint(tb);
      expect(sandboxMatches(member, fb)).toBe(templateFingerprint(ta).hash === fb.hash);
    }));
  });

  test('podTemplateHash covers metadata too (informational label)', () => {
    expect(podTemplateHash(t)).toMatch(/^[0-9a-f]{8}$/);
    expect(podTemplateHash(template({ podTemplate: { metadata: { labels: { team: 'b' } }, spec: t.spec.podTemplate.spec } }))).not.toBe(podTemplateHash(t));
  });
});

describe('merge patches', () => {
  const map = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd/e'), fc.string({ maxLength: 3 }));

  test('mapPatch: applying it yields the desired map; undefined iff equal (fast-check)', () => {
    fc.assert(fc.property(fc.option(map, { nil: undefined }), map, (current, desired) => {
      const patch = mapPatch(current, desired);
      const same = canonicalJson(current ?? {}) === canonicalJson(desired) && Object.keys(current ?? {}).length === Object.keys(desired).length;
      expect(patch === undefined).toBe(same);
      expect(applyMergePatch(current ?? {}, patch ?? {})).toEqual(desired);
    }));
  });

  test.each<[string, unknown, unknown, unknown]>([
    ['null deletes', { a: 1, b: 2 }, { a: null }, { b: 2 }],
    ['objects merge', { m: { a: 1 } }, { m: { b: 2 } }, { m: { a: 1, b: 2 } }],
    ['arrays replace', { l: [1, 2] }, { l: [3] }, { l: [3] }],
    ['a non-object target becomes an object', { m: 'x' }, { m: { a: 1 } }, { m: { a: 1 } }],
  ])('applyMergePatch: %s', (_, target, patch, expected) => {
    const before = structuredClone(target);
    expect(applyMergePatch(target, patch)).toEqual(expected);
    expect(target).toEqual(before);
  });
});
