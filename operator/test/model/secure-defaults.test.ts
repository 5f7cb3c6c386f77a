import * as fc from 'fast-check';
import { PUBLIC_DNS_NAMESERVERS } from '#api/network-policy-defaults';
import { SECURE_DEFAULTS_OPT_OUT_ANNOTATION } from '#api/secure-defaults';
import { type PodSpec, type SandboxTemplateSpec } from '../../src/model';
import { applyHardeningDefaults, applySecureDefaults, applyUpstreamDefaults, defaultBareSandboxPod } from '../../src/model/secure-defaults';
import { template } from '../controllers/template/fixtures';

const base: PodSpec = { containers: [{ name: 'main', image: 'python:3.12' }] };
const PUBLIC_DNS = { dnsPolicy: 'None', dnsConfig: { nameservers: [...PUBLIC_DNS_NAMESERVERS] } };
const CUSTOM_POLICY = { networkPolicy: { egress: [] } };

describe('applyUpstreamDefaults', () => {
  test.each<[string, PodSpec, Partial<SandboxTemplateSpec>, PodSpec]>([
    ['Managed default policy: no token, public resolvers', base, {}, { ...base, automountServiceAccountToken: false, ...PUBLIC_DNS }],
    ['explicit Managed behaves the same', base, { networkPolicyManagement: 'Managed' }, { ...base, automountServiceAccountToken: false, ...PUBLIC_DNS }],
    ['empty management value counts as Managed (upstream)', base, { networkPolicyManagement: '' as SandboxTemplateSpec['networkPolicyManagement'] }, { ...base, automountServiceAccountToken: false, ...PUBLIC_DNS }],
    ['a token the template asks for is kept', { ...base, automountServiceAccountToken: true }, {}, { ...base, automountServiceAccountToken: true, ...PUBLIC_DNS }],
    ['an explicit false stays false', { ...base, automountServiceAccountToken: false }, {}, { ...base, automountServiceAccountToken: false, ...PUBLIC_DNS }],
    ['custom policy rules: cluster DNS left alone', base, CUSTOM_POLICY, { ...base, automountServiceAccountToken: false }],
    ['Unmanaged: DNS left alone', base, { networkPolicyManagement: 'Unmanaged' }, { ...base, automountServiceAccountToken: false }],
    ['a chosen dnsPolicy is kept', { ...base, dnsPolicy: 'ClusterFirst' }, {}, { ...base, dnsPolicy: 'ClusterFirst', automountServiceAccountToken: false }],
    ['an empty dnsPolicy is unset', { ...base, dnsPolicy: '' }, {}, { ...base, automountServiceAccountToken: false, ...PUBLIC_DNS }],
    [
      'searches and options are kept, nameservers filled in',
      { ...base, dnsConfig: { searches: ['svc.example'], options: [{ name: 'ndots', value: '2' }] } },
      {},
      { ...base, automountServiceAccountToken: false, dnsPolicy: 'None', dnsConfig: { searches: ['svc.example'], options: [{ name: 'ndots', value: '2' }], nameservers: [...PUBLIC_DNS_NAMESERVERS] } },
    ],
    [
      'nameservers the template chose are kept',
      { ...base, dnsConfig: { nameservers: ['9.9.9.9'] } },
      {},
      { ...base, automountServiceAccountToken: false, dnsPolicy: 'None', dnsConfig: { nameservers: ['9.9.9.9'] } },
    ],
  ])('%s', (_, spec, templateSpec, expected) => {
    expect(applyUpstreamDefaults(spec, template(templateSpec))).toEqual(expected);
  });

  const arbSpec: fc.Arbitrary<PodSpec> = fc.record({
    containers: fc.constant([{ name: 'main' }]),
    automountServiceAccountToken: fc.option(fc.boolean(), { nil: undefined }),
    dnsPolicy: fc.option(fc.constantFrom('', 'ClusterFirst', 'Default', 'None'), { nil: undefined }),
    dnsConfig: fc.option(
      fc.record({ nameservers: fc.array(fc.ipV4(), { maxLength: 2 }), searches: fc.array(fc.domain(), { maxLength: 2 }) }, { requiredKeys: [] }),
      { nil: undefined },
    ),
    hostname: fc.option(fc.string(), { nil: undefined }),
  }, { requiredKeys: ['containers'] });
  const arbTemplateSpec = fc.record({
    networkPolicyManagement: fc.constantFrom('Managed', 'Unmanaged', ''),
    networkPolicy: fc.constantFrom(undefined, { egress: [] }),
  }, { requiredKeys: [] });

  test('idempotent, pure, and touches only the token and DNS fields (fast-check)', () => {
    fc.assert(fc.property(arbSpec, arbTemplateSpec, (spec, tspec) => {
      const t = template(tspec as Partial<SandboxTemplateSpec>);
      const before = structuredClone(spec);
      const once = applyUpstreamDefaults(spec, t);
      expect(spec).toEqual(before);
      expect(applyUpstreamDefaults(once, t)).toEqual(once);
      expect(once.automountServiceAccountToken).toBe(spec.automountServiceAccountToken ?? false);
      const { automountServiceAccountToken: _a, dnsPolicy: _p, dnsConfig: _c, ...others } = once;
      const { automountServiceAccountToken: _b, dnsPolicy: _q, dnsConfig: _d, ...othersBefore } = spec;
      expect(others).toEqual(othersBefore);
      if (once.dnsPolicy === 'None' && !spec.dnsPolicy) expect(once.dnsConfig?.nameservers?.length).toBeGreaterThan(0);
      if (spec.dnsPolicy) expect(once.dnsPolicy).toBe(spec.dnsPolicy);
    }));
  });
});

const HARDENED_CONTAINER = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
const HARDENED_POD = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
const optingOut = (value: string) => template({}, { annotations: { [SECURE_DEFAULTS_OPT_OUT_ANNOTATION]: value } });

describe('applyHardeningDefaults', () => {
  const withInit: PodSpec = { ...base, initContainers: [{ name: 'setup', image: 'busybox' }] };

  test('an unhardened template gets what the constructs write: non-root, seccomp, no escalation, ALL dropped', () => {
    expect(applyHardeningDefaults(withInit, template())).toEqual({
      securityContext: HARDENED_POD,
      containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }],
      initContainers: [{ name: 'setup', image: 'busybox', securityContext: HARDENED_CONTAINER }],
    });
  });

  test.each<[string, PodSpec, PodSpec]>([
    ['explicit runAsNonRoot false is kept', { ...base, securityContext: { runAsNonRoot: false } },
      { securityContext: { runAsNonRoot: false, seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
    ['an explicit seccomp profile is kept', { ...base, securityContext: { seccompProfile: { type: 'Unconfined' } } },
      { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'Unconfined' } }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
    ['a pod runAsUser 0 means root on purpose: no runAsNonRoot', { ...base, securityContext: { runAsUser: 0 } },
      { securityContext: { runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
    ['a container runAsUser 0 too', { containers: [{ name: 'main', securityContext: { runAsUser: 0 } }] },
      { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', securityContext: { runAsUser: 0, ...HARDENED_CONTAINER } }] }],
    ['a container runAsNonRoot false too', { containers: [{ name: 'main', securityContext: { runAsNonRoot: false } }] },
      { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', securityContext: { runAsNonRoot: false, ...HARDENED_CONTAINER } }] }],
    ['explicit allowPrivilegeEscalation true and a chosen drop list are kept; add is kept', { containers: [{ name: 'main', securityContext: { allowPrivilegeEscalation: true, capabilities: { add: ['CHOWN'], drop: ['NET_RAW'] } } }] },
      { securityContext: HARDENED_POD, containers: [{ name: 'main', securityContext: { allowPrivilegeEscalation: true, capabilities: { add: ['CHOWN'], drop: ['NET_RAW'] } } }] }],
    ['an empty drop list is an explicit choice', { containers: [{ name: 'main', securityContext: { capabilities: { drop: [] } } }] },
      { securityContext: HARDENED_POD, containers: [{ name: 'main', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: [] } } }] }],
    ['add without drop: ALL dropped, add kept', { containers: [{ name: 'main', securityContext: { capabilities: { add: ['NET_BIND_SERVICE'] } } }] },
      { securityContext: HARDENED_POD, containers: [{ name: 'main', securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] } } }] }],
    ['SYS_ADMIN: no allowPrivilegeEscalation false (the API refuses the pair)', { containers: [{ name: 'main', securityContext: { capabilities: { add: ['CAP_SYS_ADMIN'] } } }] },
      { securityContext: HARDENED_POD, containers: [{ name: 'main', securityContext: { capabilities: { add: ['CAP_SYS_ADMIN'], drop: ['ALL'] } } }] }],
    ['a privileged container is left alone', { containers: [{ name: 'main', securityContext: { privileged: true } }] },
      { securityContext: HARDENED_POD, containers: [{ name: 'main', securityContext: { privileged: true } }] }],
    ['a Windows Pod gets nothing', { ...base, os: { name: 'windows' } }, { ...base, os: { name: 'windows' } }],
  ])('%s', (_, spec, expected) => {
    expect(applyHardeningDefaults(spec, template())).toEqual(expected);
  });

  test.each<[string, PodSpec]>([
    ['runAsNonRoot', { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
    ['seccompProfile', { securityContext: { runAsNonRoot: true }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
    ['allowPrivilegeEscalation', { securityContext: HARDENED_POD, containers: [{ name: 'main', image: 'python:3.12', securityContext: { capabilities: { drop: ['ALL'] } } }] }],
    ['dropCapabilities', { securityContext: HARDENED_POD, containers: [{ name: 'main', image: 'python:3.12', securityContext: { allowPrivilegeEscalation: false } }] }],
    ['runAsNonRoot, seccompProfile , allowPrivilegeEscalation,dropCapabilities', base],
    ['runAsNonRoot,someFutureDefault', { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }] }],
  ])('opting out of %s leaves exactly that unset', (value, expected) => {
    expect(applyHardeningDefaults(base, optingOut(value))).toEqual(expected);
  });

  test('a template that writes what the constructs write is unchanged: its members keep their hash', () => {
    const written: PodSpec = {
      securityContext: HARDENED_POD,
      containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }],
    };
    expect(applyHardeningDefaults(written, template())).toEqual(written);
  });

  const arbContext = fc.record({
    privileged: fc.option(fc.boolean(), { nil: undefined }),
    allowPrivilegeEscalation: fc.option(fc.boolean(), { nil: undefined }),
    runAsUser: fc.option(fc.constantFrom(0, 1000), { nil: undefined }),
    runAsNonRoot: fc.option(fc.boolean(), { nil: undefined }),
    capabilities: fc.option(fc.record({
      add: fc.option(fc.subarray(['NET_BIND_SERVICE', 'SYS_ADMIN', 'CAP_SYS_ADMIN']), { nil: undefined }),
      drop: fc.option(fc.subarray(['ALL', 'NET_RAW']), { nil: undefined }),
    }, { requiredKeys: [] }), { nil: undefined }),
  }, { requiredKeys: [] });
  const arbContainer = (name: string) => fc.record({ name: fc.constant(name), securityContext: fc.option(arbContext, { nil: undefined }) }, { requiredKeys: ['name'] });
  const arbPod: fc.Arbitrary<PodSpec> = fc.record({
    containers: fc.tuple(arbContainer('a'), arbContainer('b')).map((cs) => [...cs]),
    initContainers: fc.option(fc.tuple(arbContainer('init')).map((cs) => [...cs]), { nil: undefined }),
    securityContext: fc.option(fc.record({
      runAsNonRoot: fc.option(fc.boolean(), { nil: undefined }),
      runAsUser: fc.option(fc.constantFrom(0, 1000), { nil: undefined }),
      seccompProfile: fc.option(fc.constant({ type: 'Unconfined' }), { nil: undefined }),
    }, { requiredKeys: [] }), { nil: undefined }),
  }, { requiredKeys: ['containers'] });

  test('explicit values always win; idempotent; pure; never a combination the API server refuses (fast-check)', () => {
    fc.assert(fc.property(arbPod, fc.subarray(['runAsNonRoot', 'seccompProfile', 'allowPrivilegeEscalation', 'dropCapabilities']), (spec, optOuts) => {
      const t = optOuts.length ? optingOut(optOuts.join(',')) : template();
      const before = structuredClone(spec);
      const out = applyHardeningDefaults(spec, t);
      expect(spec).toEqual(before);
      expect(applyHardeningDefaults(out, t)).toEqual(out);
      // Every value the input set is still there, unchanged.
      expect(out).toMatchObject(JSON.parse(JSON.stringify(spec)));
      for (const c of [...out.containers, ...(out.initContainers ?? [])]) {
        const sc = c.securityContext ?? {};
        const input = [...spec.containers, ...(spec.initContainers ?? [])].find((x) => x.name === c.name)?.securityContext;
        // Validation of the Pod API: escalation false is refused with privileged or with CAP_SYS_ADMIN.
        if (sc.allowPrivilegeEscalation === false && input?.allowPrivilegeEscalation === undefined) {
          expect(sc.privileged === true).toBe(false);
          expect((sc.capabilities?.add ?? []).some((a) => /SYS_ADMIN/.test(a))).toBe(false);
        }
        if (optOuts.includes('dropCapabilities')) expect(sc.capabilities?.drop).toEqual(input?.capabilities?.drop);
        if (optOuts.includes('allowPrivilegeEscalation')) expect(sc.allowPrivilegeEscalation).toBe(input?.allowPrivilegeEscalation);
      }
      // runAsNonRoot is never added next to an explicit root user.
      const root = out.securityContext?.runAsUser === 0
        || [...out.containers, ...(out.initContainers ?? [])].some((c) => c.securityContext?.runAsUser === 0);
      if (root) expect(out.securityContext?.runAsNonRoot).toBe(spec.securityContext?.runAsNonRoot);
      if (optOuts.includes('seccompProfile')) expect(out.securityContext?.seccompProfile).toEqual(spec.securityContext?.seccompProfile);
    }));
  });
});

describe('applySecureDefaults', () => {
  test('upstream\'s defaults, then the hardening', () => {
    expect(applySecureDefaults(base, template())).toEqual({
      ...PUBLIC_DNS,
      automountServiceAccountToken: false,
      securityContext: HARDENED_POD,
      containers: [{ name: 'main', image: 'python:3.12', securityContext: HARDENED_CONTAINER }],
    });
  });
});

describe('defaultBareSandboxPod', () => {
  test('no token unless the Sandbox set the field; an explicit value is kept', () => {
    expect(defaultBareSandboxPod(base)).toEqual({ ...base, automountServiceAccountToken: false });
    expect(defaultBareSandboxPod({ ...base, automountServiceAccountToken: true })).toEqual({ ...base, automountServiceAccountToken: true });
    expect(defaultBareSandboxPod({ ...base, automountServiceAccountToken: false })).toEqual({ ...base, automountServiceAccountToken: false });
    expect(base.automountServiceAccountToken).toBeUndefined();
  });
});
