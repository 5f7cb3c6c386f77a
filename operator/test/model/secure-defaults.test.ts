import * as fc from 'fast-check';
import { PUBLIC_DNS_NAMESERVERS } from '../../../src/api/network-policy-defaults';
import { type PodSpec, type SandboxTemplateSpec } from '../../src/model';
import { applySecureDefaults } from '../../src/model/secure-defaults';
import { template } from '../controllers/template/fixtures';

const base: PodSpec = { containers: [{ name: 'main', image: 'python:3.12' }] };
const PUBLIC_DNS = { dnsPolicy: 'None', dnsConfig: { nameservers: [...PUBLIC_DNS_NAMESERVERS] } };
const CUSTOM_POLICY = { networkPolicy: { egress: [] } };

describe('applySecureDefaults', () => {
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
    expect(applySecureDefaults(spec, template(templateSpec))).toEqual(expected);
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
      const once = applySecureDefaults(spec, t);
      expect(spec).toEqual(before);
      expect(applySecureDefaults(once, t)).toEqual(once);
      expect(once.automountServiceAccountToken).toBe(spec.automountServiceAccountToken ?? false);
      const { automountServiceAccountToken: _a, dnsPolicy: _p, dnsConfig: _c, ...others } = once;
      const { automountServiceAccountToken: _b, dnsPolicy: _q, dnsConfig: _d, ...othersBefore } = spec;
      expect(others).toEqual(othersBefore);
      if (once.dnsPolicy === 'None' && !spec.dnsPolicy) expect(once.dnsConfig?.nameservers?.length).toBeGreaterThan(0);
      if (spec.dnsPolicy) expect(once.dnsPolicy).toBe(spec.dnsPolicy);
    }));
  });
});
