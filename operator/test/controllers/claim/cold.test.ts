import * as fc from 'fast-check';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, NS, claim, ownerRef, pool, template } from './fixtures';
import { coldSandbox, injectEnv, mergeVolumeClaimTemplates } from '../../../src/controllers/claim/cold';
import { type ClaimEnvVar, type PodSpec, type SandboxTemplateSpec, type VolumeClaimTemplate } from '../../../src/model';

const SPEC: PodSpec = {
  containers: [
    { name: 'main', image: 'python', env: [{ name: 'HOME', value: '/home' }, { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
    { name: 'sidecar', image: 'proxy' },
  ],
  initContainers: [{ name: 'setup', image: 'busybox' }],
};
const withPolicy = (policy?: SandboxTemplateSpec['envVarsInjectionPolicy'], spec: PodSpec = SPEC) =>
  template({ podTemplate: { spec }, ...(policy ? { envVarsInjectionPolicy: policy } : {}) });
const envOf = (spec: PodSpec, container: string) => [...spec.containers, ...(spec.initContainers ?? [])].find((c) => c.name === container)!.env;

describe('injectEnv', () => {
  interface Case {
    readonly name: string;
    readonly policy?: string;
    readonly env: ClaimEnvVar[];
    readonly spec?: PodSpec;
    readonly reason?: string;
    readonly check?: (spec: PodSpec) => void;
  }
  test.each<Case>([
    { name: 'no env: nothing to decide, even when disallowed', env: [], check: (s) => expect(s).toEqual(SPEC) },
    { name: 'Disallowed (the default) refuses', env: [{ name: 'A', value: '1' }], reason: 'EnvVarsInjectionRejected' },
    { name: 'explicit Disallowed refuses', policy: 'Disallowed', env: [{ name: 'A', value: '1' }], reason: 'EnvVarsInjectionRejected' },
    { name: 'Allowed adds to the first container', policy: 'Allowed', env: [{ name: 'A', value: '1' }], check: (s) => expect(envOf(s, 'main')!.at(-1)).toEqual({ name: 'A', value: '1' }) },
    { name: 'Allowed targets a named container', policy: 'Allowed', env: [{ name: 'A', value: '1', containerName: 'sidecar' }], check: (s) => expect(envOf(s, 'sidecar')).toEqual([{ name: 'A', value: '1' }]) },
    { name: 'an init container can be targeted', policy: 'Allowed', env: [{ name: 'A', value: '1', containerName: 'setup' }], check: (s) => expect(envOf(s, 'setup')).toEqual([{ name: 'A', value: '1' }]) },
    { name: 'an unknown container is a ReconcilerError', policy: 'Overrides', env: [{ name: 'A', value: '1', containerName: 'nope' }], reason: 'ReconcilerError' },
    { name: 'Allowed refuses an existing name (ReconcilerError)', policy: 'Allowed', env: [{ name: 'HOME', value: '/x' }], reason: 'ReconcilerError' },
    { name: 'Allowed refuses a repeated name', policy: 'Allowed', env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }], reason: 'ReconcilerError' },
    {
      name: 'Allowed refuses a container with envFrom',
      policy: 'Allowed',
      spec: { containers: [{ name: 'main', envFrom: [{ configMapRef: { name: 'c' } }] }] },
      env: [{ name: 'A', value: '1' }],
      reason: 'EnvVarsInjectionRejected',
    },
    {
      name: 'Overrides accepts a container with envFrom',
      policy: 'Overrides',
      spec: { containers: [{ name: 'main', envFrom: [{ configMapRef: { name: 'c' } }] }] },
      env: [{ name: 'A', value: '1' }],
      check: (s) => expect(s.containers[0].env).toEqual([{ name: 'A', value: '1' }]),
    },
    {
      name: 'Overrides replaces in place and drops valueFrom',
      policy: 'Overrides',
      env: [{ name: 'TOKEN', value: 'literal' }, { name: 'NEW', value: 'n' }],
      check: (s) => expect(envOf(s, 'main')).toEqual([{ name: 'HOME', value: '/home' }, { name: 'TOKEN', value: 'literal' }, { name: 'NEW', value: 'n' }]),
    },
    { name: 'Overrides: the last of a repeated name wins', policy: 'Overrides', env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }], check: (s) => expect(envOf(s, 'main')!.filter((e) => e.name === 'A')).toEqual([{ name: 'A', value: '2' }]) },
    { name: 'no containers at all', policy: 'Allowed', spec: { containers: [] }, env: [{ name: 'A', value: '1' }], reason: 'ReconcilerError' },
  ])('$name', ({ policy, env, spec, reason, check }) => {
    const base = spec ?? SPEC;
    const before = structuredClone(base);
    const result = injectEnv(base, env, withPolicy(policy as SandboxTemplateSpec['envVarsInjectionPolicy'], base));
    expect(base).toEqual(before);
    if (reason) {expect(result).toMatchObject({ ok: false, problem: { reason } });} else {
      expect(result.ok).toBe(true);
      if (result.ok) check?.(result.value);
    }
  });

  test('messages say what to do', () => {
    const disallowed = injectEnv(SPEC, [{ name: 'A', value: '1' }], withPolicy());
    expect(!disallowed.ok && disallowed.problem.message).toMatch(/envVarsInjectionPolicy Disallowed.*remove spec.env, or ask the template owner for Allowed or Overrides/);
    const unknown = injectEnv(SPEC, [{ name: 'A', value: '1', containerName: 'x' }], withPolicy('Allowed'));
    expect(!unknown.ok && unknown.problem.message).toMatch(/^Error seen: .*container "x".*"main", "sidecar", "setup"/);
  });

  test('Overrides: every claim name ends with its last value, template-only names are untouched (fast-check)', () => {
    const name = fc.constantFrom('A', 'B', 'HOME', 'TOKEN');
    fc.assert(fc.property(fc.array(fc.record({ name, value: fc.string({ maxLength: 3 }), containerName: fc.constantFrom(undefined, 'main', 'sidecar', 'setup') }), { maxLength: 8 }), (env) => {
      const clean: ClaimEnvVar[] = env.map(({ containerName, ...e }) => (containerName ? { ...e, containerName } : e));
      const result = injectEnv(SPEC, clean, withPolicy('Overrides'));
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      for (const c of ['main', 'sidecar', 'setup']) {
        const mine = clean.filter((e) => (e.containerName ?? 'main') === c);
        const out = envOf(result.value, c) ?? [];
        expect(new Set(out.map((e) => e.name)).size).toBe(out.length);
        for (const e of mine) {
          const last = mine.filter((x) => x.name === e.name).at(-1)!;
          expect(out.find((o) => o.name === e.name)).toEqual({ name: e.name, value: last.value });
        }
        for (const original of envOf(SPEC, c) ?? []) if (!mine.some((e) => e.name === original.name)) expect(out).toContainEqual(original);
      }
    }));
  });
});

const vct = (name: string, size = '1Gi'): VolumeClaimTemplate => ({ metadata: { name }, spec: { resources: { requests: { storage: size } } } });

describe('mergeVolumeClaimTemplates', () => {
  interface Case {
    readonly name: string;
    readonly policy?: string;
    readonly base?: VolumeClaimTemplate[];
    readonly claimVcts?: VolumeClaimTemplate[];
    readonly result?: string[];
    readonly error?: RegExp;
  }
  test.each<Case>([
    { name: 'none anywhere', result: undefined },
    { name: 'the template\'s only', base: [vct('data')], result: ['data:1Gi'] },
    { name: 'claim VCTs under Disallowed (the default)', base: [vct('data')], claimVcts: [vct('more')], error: /volumeClaimTemplatesPolicy Disallowed/ },
    { name: 'Allowed appends new names', policy: 'Allowed', base: [vct('data')], claimVcts: [vct('more', '5Gi')], result: ['data:1Gi', 'more:5Gi'] },
    { name: 'Allowed refuses a clash', policy: 'Allowed', base: [vct('data')], claimVcts: [vct('data', '5Gi')], error: /has the name of one of the template's/ },
    { name: 'Overrides replaces in place and appends', policy: 'Overrides', base: [vct('a'), vct('b')], claimVcts: [vct('c', '3Gi'), vct('a', '9Gi')], result: ['a:9Gi', 'b:1Gi', 'c:3Gi'] },
    { name: 'an unnamed claim VCT', policy: 'Overrides', claimVcts: [{ spec: {} }], error: /claim's volumeClaimTemplates\[0\] has no metadata.name/ },
    { name: 'a duplicated claim name', policy: 'Overrides', claimVcts: [vct('x'), vct('x')], error: /"x" twice/ },
    { name: 'a broken template is reported even without claim VCTs', base: [vct('x'), vct('x')], error: /template's volumeClaimTemplates has "x" twice/ },
  ])('$name', ({ policy, base, claimVcts, result, error }) => {
    const t = template({ ...(base ? { volumeClaimTemplates: base } : {}), ...(policy ? { volumeClaimTemplatesPolicy: policy as SandboxTemplateSpec['volumeClaimTemplatesPolicy'] } : {}) });
    const out = mergeVolumeClaimTemplates(t, claimVcts);
    if (error) expect(out).toEqual({ ok: false, problem: { reason: 'VolumeClaimTemplatesError', message: expect.stringMatching(error) } });
    else expect(out.ok && out.value?.map((v) => `${v.metadata!.name}:${(v.spec as { resources: { requests: { storage: string } } }).resources.requests.storage}`)).toEqual(result);
  });
});

describe('mergeVolumeClaimTemplates (fast-check)', () => {
  test('Overrides: template order kept, claim names win, new names appended; Allowed: same unless a clash', () => {
    const names = fc.uniqueArray(fc.constantFrom<string>('a', 'b', 'c', 'd', 'e'), { maxLength: 4 });
    fc.assert(fc.property(names, names, fc.constantFrom('Allowed', 'Overrides', 'Disallowed'), (base, extra, policy) => {
      const t = template({ volumeClaimTemplates: base.map((n) => vct(n, '1Gi')), volumeClaimTemplatesPolicy: policy });
      const out = mergeVolumeClaimTemplates(t, extra.map((n) => vct(n, '9Gi')));
      const clash = extra.some((n) => base.includes(n));
      if (extra.length === 0) return expect(out.ok).toBe(true);
      if (policy === 'Disallowed' || (policy === 'Allowed' && clash)) return expect(out).toMatchObject({ ok: false, problem: { reason: 'VolumeClaimTemplatesError' } });
      expect(out.ok).toBe(true);
      if (!out.ok) return;
      const got = out.value!.map((v) => v.metadata!.name);
      expect(got).toEqual([...base, ...extra.filter((n) => !base.includes(n))]);
      for (const v of out.value!) {
        const size = (v.spec as { resources: { requests: { storage: string } } }).resources.requests.storage;
        expect(size).toBe(extra.includes(v.metadata!.name!) ? '9Gi' : '1Gi');
      }
    }));
  });
});

describe('coldSandbox', () => {
  const t = template({ envVarsInjectionPolicy: 'Allowed', volumeClaimTemplatesPolicy: 'Allowed', volumeClaimTemplates: [vct('data')], service: false });

  test('named after the claim, owned by it, built from the template with secure defaults', () => {
    const c = claim(
      { env: [{ name: 'A', value: '1' }], volumeClaimTemplates: [vct('scratch')], additionalPodMetadata: { labels: { 'sandbox.users.io/run': '1' } } },
      { labels: { [SandboxLabels.CREATED_BY]: 'python-client' }, annotations: { [SandboxAnnotations.TRACE_CONTEXT]: '{}' } },
    );
    const result = coldSandbox(c, pool(), t, NOW);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const s = result.value;
    expect(s.metadata).toEqual({
      name: 'my-claim',
      namespace: NS,
      labels: {
        [SandboxLabels.CLAIM_UID]: 'claim-uid',
        [SandboxLabels.LAUNCH_TYPE]: 'cold',
        [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
        [SandboxLabels.CREATED_BY]: 'python-client',
      },
      annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'python', [SandboxAnnotations.TRACE_CONTEXT]: '{}' },
      ownerReferences: [{ ...ownerRef('SandboxClaim', 'my-claim', 'claim-uid'), blockOwnerDeletion: true }],
    });
    expect(s.spec.podTemplate.metadata!.labels).toEqual({
      'team': 'a',
      'sandbox.users.io/run': '1',
      [SandboxLabels.CLAIM_UID]: 'claim-uid',
      [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python'),
      [SandboxLabels.CREATED_BY]: 'python-client',
    });
    expect(s.spec.podTemplate.spec.containers[0].env).toEqual([{ name: 'A', value: '1' }]);
    expect(s.spec.podTemplate.spec).toMatchObject({ automountServiceAccountToken: false, dnsPolicy: 'None' });
    expect(s.spec.volumeClaimTemplates!.map((v) => v.metadata!.name)).toEqual(['data', 'scratch']);
    expect(s.spec.service).toBe(false);
    expect(s.spec).not.toHaveProperty('shutdownTime');
    expect(s.metadata.labels).not.toHaveProperty([SandboxLabels.WARM_POOL_SANDBOX]);
  });

  interface Case {
    readonly name: string;
    readonly claimSpec: Parameters<typeof claim>[0];
    readonly templateSpec?: Partial<SandboxTemplateSpec>;
    readonly claimName?: string;
    readonly reason: string;
  }
  test.each<Case>([
    { name: 'invalid metadata comes first', claimSpec: { additionalPodMetadata: { labels: { bad: 'x' } }, env: [{ name: 'A', value: '1' }] }, templateSpec: { envVarsInjectionPolicy: 'Disallowed' }, reason: 'InvalidMetadata' },
    { name: 'then volume claim templates', claimSpec: { volumeClaimTemplates: [vct('x')], env: [{ name: 'A', value: '1' }] }, templateSpec: { envVarsInjectionPolicy: 'Disallowed' }, reason: 'VolumeClaimTemplatesError' },
    { name: 'then metadata conflicts with the template', claimSpec: { additionalPodMetadata: { annotations: { a: 'claim' } }, env: [{ name: 'A', value: '1' }] }, templateSpec: { envVarsInjectionPolicy: 'Disallowed', podTemplate: { metadata: { annotations: { a: 'template' } }, spec: SPEC } }, reason: 'ReconcilerError' },
    { name: 'then env', claimSpec: { env: [{ name: 'A', value: '1' }] }, templateSpec: { envVarsInjectionPolicy: 'Disallowed' }, reason: 'EnvVarsInjectionRejected' },
    { name: 'a Service needs a Service-safe claim name', claimSpec: {}, templateSpec: { service: true }, claimName: 'my.claim', reason: 'ReconcilerError' },
  ])('$name', ({ claimSpec, templateSpec, claimName, reason }) => {
    const result = coldSandbox(claim(claimSpec, claimName ? { name: claimName } : {}), pool(), template(templateSpec ?? {}), NOW);
    expect(result).toMatchObject({ ok: false, problem: { reason } });
  });

  test('a pool naming another template is refused', () => {
    expect(coldSandbox(claim(), pool({ sandboxTemplateRef: { name: 'other' } }), t, NOW)).toMatchObject({ ok: false, problem: { reason: 'ReconcilerError' } });
  });

  test('a configured label allow-list applies', () => {
    const c = claim({ additionalPodMetadata: { labels: { 'corp.example/team': 'a' } } });
    expect(coldSandbox(c, pool(), t, NOW).ok).toBe(false);
    expect(coldSandbox(c, pool(), t, NOW, { allowedLabelDomains: ['corp.example'] }).ok).toBe(true);
  });

  test('never modifies its inputs, and the result is always the claim\'s (fast-check)', () => {
    fc.assert(fc.property(
      fc.constantFrom('Allowed', 'Overrides', 'Disallowed'),
      fc.array(fc.record({ name: fc.constantFrom('A', 'HOME'), value: fc.string({ maxLength: 2 }) }), { maxLength: 3 }),
      fc.boolean(),
      (policy, env, service) => {
        const tt = template({ envVarsInjectionPolicy: policy, service, podTemplate: { spec: SPEC } });
        const c = claim({ env });
        const before = structuredClone([tt, c]);
        const result = coldSandbox(c, pool(), tt, NOW);
        expect([tt, c]).toEqual(before);
        if (result.ok) {
          expect(result.value.metadata.name).toBe(c.metadata.name);
          expect(result.value.metadata.ownerReferences).toEqual([{ ...ownerRef('SandboxClaim', 'my-claim', 'claim-uid'), blockOwnerDeletion: true }]);
          expect(result.value.metadata.labels![SandboxLabels.LAUNCH_TYPE]).toBe('cold');
        } else {
          expect(env.length).toBeGreaterThan(0);
        }
      },
    ));
  });
});
