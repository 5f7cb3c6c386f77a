import { App, Chart, JsonPatch, Testing } from 'cdk8s';
import * as fc from 'fast-check';
import { NetworkPolicyManagement } from '../src/api/enums';
import { SandboxLabels } from '../src/api/labels';
import { NameHash } from '../src/api/name-hash';
import {
  CGNAT_CIDR, PUBLIC_DNS_NAMESERVERS, PUBLIC_INTERNET_IPV4_EXCEPT, PUBLIC_INTERNET_IPV6_EXCEPT,
  defaultSandboxNetworkPolicySpec, networkPolicyNameFor, sandboxTemplateSelector,
} from '../src/api/network-policy-defaults';
import {
  AllowRouterIngress, DnsAccess, SandboxDefaultDenyPolicy, SandboxNetworkPolicy, SandboxNetworkPolicyOptions, SandboxNetworkPort,
  SandboxPeer,
} from '../src/network-policy';
import { _renderTemplateNetwork } from '../src/network-policy/template-network';

const PART_OF = { 'app.kubernetes.io/part-of': 'agent-sandbox' };

function chart(): Chart {
  return new Chart(Testing.app(), 'test', { namespace: 'sandboxes' });
}

// An independent CIDR reader for the property tests (not the one under test).
function ipToBigInt(address: string): bigint {
  if (!address.includes(':')) return address.split('.').reduce((acc, o) => acc * 256n + BigInt(o), 0n);
  const [head, tail] = address.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => acc * 65536n + BigInt(parseInt(g, 16)), 0n);
}

function cidrContains(cidr: string, address: bigint, v6: boolean): boolean {
  const [ip, bits] = cidr.split('/');
  if (ip.includes(':') !== v6) return false;
  const hostRange = 2n ** BigInt((v6 ? 128 : 32) - Number(bits));
  return ipToBigInt(ip) / hostRange === address / hostRange;
}

/** Whether any ipBlock peer admits `address` (in its cidr and in none of its excepts). */
function peersAdmit(peers: any[], address: bigint, v6: boolean): boolean {
  return peers.some((p) => p.ipBlock && cidrContains(p.ipBlock.cidr, address, v6)
    && !(p.ipBlock.except ?? []).some((e: string) => cidrContains(e, address, v6)));
}

function addressIn(cidr: string, v6: boolean): fc.Arbitrary<bigint> {
  const [ip, bits] = cidr.split('/');
  const hostRange = 2n ** BigInt((v6 ? 128 : 32) - Number(bits));
  const base = (ipToBigInt(ip) / hostRange) * hostRange;
  return fc.bigInt(0n, hostRange - 1n).map((host) => base + host);
}

describe('the default template NetworkPolicy', () => {
  test('is upstream\'s default plus the CGNAT exclusion', () => {
    const spec = defaultSandboxNetworkPolicySpec('python');
    expect(spec).toEqual({
      podSelector: { matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': NameHash.of('python') } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{
        from: [{
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agent-sandbox-system' } },
          podSelector: { matchLabels: { app: 'sandbox-router' } },
        }],
      }],
      egress: [{
        to: [
          { ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'] } },
          { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10'] } },
        ],
      }],
    });
    expect(spec).toMatchSnapshot();
    expect(PUBLIC_INTERNET_IPV4_EXCEPT).toContain(CGNAT_CIDR);
  });

  test('trusts the router namespace it is given', () => {
    expect(defaultSandboxNetworkPolicySpec('python', 'sandbox-system').ingress![0].from![0].namespaceSelector)
      .toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'sandbox-system' } });
  });

  test('selects the template by NameHash(templateName) for any name', () => {
    fc.assert(fc.property(fc.string({ minLength: 1 }), (name) => {
      const hash = NameHash.of(name);
      expect(sandboxTemplateSelector(name)).toEqual({ matchLabels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: hash } });
      expect(defaultSandboxNetworkPolicySpec(name).podSelector).toEqual(sandboxTemplateSelector(name));
    }));
  });

  test('names and DNS rewrite match upstream', () => {
    expect(networkPolicyNameFor('python')).toBe('python-network-policy');
    expect(PUBLIC_DNS_NAMESERVERS).toEqual(['8.8.8.8', '1.1.1.1']);
  });

  test('keeps upstream\'s name while it fits in 253 characters, then a bounded name with a hash', () => {
    const longest = 'a'.repeat(253 - '-network-policy'.length);
    expect(networkPolicyNameFor(longest)).toBe(`${longest}-network-policy`);
    const long = `${'b'.repeat(200)}.${'c'.repeat(49)}`;
    const name = networkPolicyNameFor(long);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    expect(name).not.toMatch(/\.-|-\./);
    expect(name.endsWith(`-${NameHash.of(long)}-network-policy`)).toBe(true);
    expect(networkPolicyNameFor(`${long}x`)).not.toBe(name);
    fc.assert(fc.property(fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/), (template) => {
      const derived = networkPolicyNameFor(template);
      expect(derived.length).toBeLessThanOrEqual(253);
      expect(derived.endsWith('-network-policy')).toBe(true);
      if (derived !== `${template}-network-policy`) expect(derived).toMatch(new RegExp(`[a-z0-9]-${NameHash.of(template)}-network-policy$`));
    }));
  });
});

describe('SandboxPeer.publicInternet()', () => {
  const peers = SandboxPeer.publicInternet()._toKube();

  test.each(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'])('excludes every address of %s', (cidr) => {
    fc.assert(fc.property(addressIn(cidr, false), (address) => !peersAdmit(peers, address, false)));
  });

  test.each(['fc00::/7', 'fe80::/10'])('excludes every address of %s', (cidr) => {
    fc.assert(fc.property(addressIn(cidr, true), (address) => !peersAdmit(peers, address, true)));
  });

  test('admits every other IPv4 and IPv6 address', () => {
    const isExcluded = (a: bigint, v6: boolean) =>
      (v6 ? PUBLIC_INTERNET_IPV6_EXCEPT : PUBLIC_INTERNET_IPV4_EXCEPT).some((c) => cidrContains(c, a, v6));
    fc.assert(fc.property(fc.bigInt(0n, 2n ** 32n - 1n), (a) => isExcluded(a, false) || peersAdmit(peers, a, false)));
    fc.assert(fc.property(fc.bigInt(0n, 2n ** 128n - 1n), (a) => isExcluded(a, true) || peersAdmit(peers, a, true)));
    expect(peersAdmit(peers, ipToBigInt('8.8.8.8'), false)).toBe(true);
    expect(peersAdmit(peers, ipToBigInt('169.254.169.254'), false)).toBe(false);
  });

  test('is the default egress', () => {
    expect(defaultSandboxNetworkPolicySpec('t').egress).toEqual([{ to: peers }]);
  });
});

describe('SandboxPeer and SandboxNetworkPort', () => {
  test('factories render NetworkPolicy peers and ports', () => {
    expect({
      router: SandboxPeer.router()._toKube(),
      routerElsewhere: SandboxPeer.router({ namespace: 'edge', podLabels: { app: 'my-router' } })._toKube(),
      namespace: SandboxPeer.namespace('monitoring')._toKube(),
      namespaceLabels: SandboxPeer.namespaceLabels({ team: 'data' })._toKube(),
      podsHere: SandboxPeer.pods({ app: 'db' })._toKube(),
      podsThere: SandboxPeer.pods({ app: 'db' }, 'data')._toKube(),
      ipBlock: SandboxPeer.ipBlock('203.0.113.0/24', ['203.0.113.128/25'])._toKube(),
      ipBlockV6: SandboxPeer.ipBlock('2001:0db8:0:0:0:0:0:0/32', ['2001:db8:ff::/48'])._toKube(),
      anywhere: SandboxPeer.anywhere()._toKube(),
      ports: [
        SandboxNetworkPort.tcp(443), SandboxNetworkPort.udp(53), SandboxNetworkPort.tcpRange(8000, 8080),
        SandboxNetworkPort.allTcp(), SandboxNetworkPort.allUdp(),
      ].map((p) => p._toKube()),
    }).toMatchSnapshot();
    expect(SandboxPeer.pods({ app: 'db' }, 'data')._toKube()).toEqual([{
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'data' } },
      podSelector: { matchLabels: { app: 'db' } },
    }]);
    expect(SandboxNetworkPort.tcpRange(8000, 8080)._toKube()).toEqual({ protocol: 'TCP', port: 8000, endPort: 8080 });
  });

  test('the rendered JSON is a copy', () => {
    const peer = SandboxPeer.router();
    (peer._toKube()[0].podSelector!.matchLabels as any).app = 'changed';
    expect(peer._toKube()[0].podSelector!.matchLabels).toEqual({ app: 'sandbox-router' });
  });

  test.each([
    [() => SandboxPeer.ipBlock('10.0.0/8'), /SandboxPeer\.ipBlock\(\): invalid arguments:\n {2}- cidr: "10\.0\.0\/8" is not a CIDR block; use a form like "10\.0\.0\.0\/8"/],
    [() => SandboxPeer.ipBlock('10.0.0.0/33'), /cidr: "10\.0\.0\.0\/33" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('010.0.0.0/8'), /cidr: "010\.0\.0\.0\/8" is not a CIDR block/],
    [() => SandboxPeer.ipBlock(':::1/128'), /cidr: ":::1\/128" is not a CIDR block; use a form like .*"fc00::\/7"/],
    [() => SandboxPeer.ipBlock('1:2:3:4:5:6:7:8:9/64'), /cidr: "1:2:3:4:5:6:7:8:9\/64" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('1::2::3/64'), /cidr: "1::2::3\/64" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('2001:db8::g/64'), /cidr: "2001:db8::g\/64" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('1:2:3:4:5:6:7::8:9/64'), /cidr: "1:2:3:4:5:6:7::8:9\/64" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('10.0.0.0/8', ['nope']), /except\[0\]: "nope" is not a CIDR block/],
    [() => SandboxPeer.ipBlock('10.0.0.0/8', ['192.168.0.0/16']), /except\[0\]: "192\.168\.0\.0\/16" must be a strict sub-range of cidr "10\.0\.0\.0\/8", e\.g\./],
    [() => SandboxPeer.ipBlock('10.0.0.0/8', ['10.0.0.0/8']), /except\[0\]: .* strict sub-range/],
    [() => SandboxPeer.ipBlock('::/0', ['10.0.0.0/8']), /except\[0\]: "10\.0\.0\.0\/8" must be a strict sub-range of cidr "::\/0"/],
    [() => SandboxPeer.router({ namespace: 'Router_NS' }), /SandboxPeer\.router\(\): invalid arguments:\n {2}- namespace: "Router_NS" must consist of lowercase/],
    [() => SandboxPeer.router({ podLabels: { 'bad key!': 'x' } }), /podLabels: key "bad key!"/],
    [() => SandboxPeer.router({ podLabels: { app: 'has space' } }), /podLabels\["app"\]: value "has space"/],
    [() => SandboxPeer.namespace('-bad'), /SandboxPeer\.namespace\(\): invalid arguments:\n {2}- name: "-bad"/],
    [() => SandboxPeer.namespaceLabels({ team: '!' }), /SandboxPeer\.namespaceLabels\(\): .*\n.*labels\["team"\]: value "!"/],
    [() => SandboxPeer.pods({ app: 'db' }, 'Data'), /SandboxPeer\.pods\(\): .*\n.*namespace: "Data"/],
    [() => SandboxNetworkPort.tcp(0), /SandboxNetworkPort\.tcp\(\): invalid arguments:\n {2}- port: 0 is not a port; use an integer from 1 to 65535/],
    [() => SandboxNetworkPort.udp(65536), /SandboxNetworkPort\.udp\(\): .*\n.*port: 65536 is not a port/],
    [() => SandboxNetworkPort.tcp(80.5), /port: 80\.5 is not a port/],
    [() => SandboxNetworkPort.tcpRange(443, 80), /SandboxNetworkPort\.tcpRange\(\): .*\n.*endPort: 80 is below startPort 443; give the lower port first, e\.g\. 8000 then 8080/],
    [() => SandboxNetworkPort.tcpRange(0, 80), /startPort: 0 is not a port/],
    [() => DnsAccess.clusterDns({ namespace: 'Kube_System' }), /DnsAccess\.clusterDns\(\): .*\n.*namespace: "Kube_System"/],
    [() => DnsAccess.clusterDns({ podLabels: { 'k8s-app': '-' } }), /podLabels\["k8s-app"\]: value "-"/],
  ])('rejects bad arguments eagerly (%#)', (make, message) => {
    expect(make).toThrow(message);
  });
});

describe('_renderTemplateNetwork', () => {
  const customIngress = [{ peers: [SandboxPeer.namespace('ci')], ports: [SandboxNetworkPort.tcp(8888)] }];

  test.each([
    ['no options', undefined],
    ['empty options', {}],
    ['explicit defaults', { management: NetworkPolicyManagement.MANAGED, dns: DnsAccess.publicResolvers() }],
  ])('%s leave spec.networkPolicy unset for the operator\'s default', (_, options) => {
    expect(_renderTemplateNetwork(options, 'python')).toEqual({ management: NetworkPolicyManagement.MANAGED });
  });

  test.each([
    ['MANAGED with cluster DNS', { dns: DnsAccess.clusterDns() }],
    ['MANAGED without DNS', { dns: DnsAccess.none() }],
    ['MANAGED with custom ingress', { ingress: customIngress, dns: DnsAccess.none() }],
    ['MANAGED with custom egress and cluster DNS', {
      egress: [{ peers: [SandboxPeer.ipBlock('203.0.113.10/32')], ports: [SandboxNetworkPort.tcp(443)] }],
      dns: DnsAccess.clusterDns(),
      routerNamespace: 'edge',
    }],
    ['MANAGED denying all ingress', { ingress: [], dns: DnsAccess.clusterDns() }],
    ['UNMANAGED with cluster DNS', { management: NetworkPolicyManagement.UNMANAGED, dns: DnsAccess.clusterDns() }],
    ['UNMANAGED with custom rules', {
      management: NetworkPolicyManagement.UNMANAGED, ingress: customIngress, egress: [{ peers: [SandboxPeer.anywhere()] }], dns: DnsAccess.none(),
    }],
  ] as Array<[string, SandboxNetworkPolicyOptions]>)('%s', (_, options) => {
    const rendered = _renderTemplateNetwork(options, 'python');
    expect(rendered).toMatchSnapshot();
    // Never both: the operator's spec field or a Git-owned policy.
    expect(rendered.specField === undefined).toBe(rendered.gitOwnedPolicySpec !== undefined);
    expect(rendered.management).toBe(options.management ?? NetworkPolicyManagement.MANAGED);
  });

  test('fills in the side not given and appends the DNS rule', () => {
    const { specField } = _renderTemplateNetwork({ ingress: customIngress, dns: DnsAccess.clusterDns() }, 'python');
    const defaults = defaultSandboxNetworkPolicySpec('python');
    expect(specField!.egress).toEqual([...defaults.egress!, {
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
    }]);
    expect(_renderTemplateNetwork({ egress: [], dns: DnsAccess.none() }, 'python').specField!.ingress).toEqual(defaults.ingress);
  });

  test('the default router ingress follows routerNamespace and routerPodLabels', () => {
    const { specField } = _renderTemplateNetwork({ routerNamespace: 'edge', routerPodLabels: { tier: 'edge' }, dns: DnsAccess.none() }, 'python');
    expect(specField!.ingress).toEqual(defaultSandboxNetworkPolicySpec('python', 'edge', { tier: 'edge' }).ingress);
    expect(specField!.ingress).toEqual([{
      from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'edge' } }, podSelector: { matchLabels: { tier: 'edge' } } }],
    }]);
  });

  test('the Git-owned spec selects the template by its name hash', () => {
    const { gitOwnedPolicySpec } = _renderTemplateNetwork({ management: NetworkPolicyManagement.UNMANAGED, dns: DnsAccess.none() }, 'python');
    expect(gitOwnedPolicySpec!.podSelector).toEqual(sandboxTemplateSelector('python'));
    expect(gitOwnedPolicySpec!.policyTypes).toEqual(['Ingress', 'Egress']);
  });

  test.each([
    [{ management: NetworkPolicyManagement.UNMANAGED },
      /SandboxTemplate "python": invalid props:\n {2}- network\.dns: public resolvers \(the default DnsAccess\) rely on the operator rewriting Pod DNS, which it does only when spec\.networkPolicyManagement is Managed; choose cluster DNS or no DNS access, or set the management to Managed/],
    [{ ingress: customIngress }, /network\.dns: .*only when spec\.networkPolicy is absent \(no custom ingress or egress\); choose cluster DNS or no DNS access, or remove the network's ingress/],
    [{ egress: [], dns: DnsAccess.publicResolvers() }, /network\.dns: .*remove the network's ingress and egress rules/],
    [{ routerNamespace: 'Edge', dns: DnsAccess.clusterDns() }, /network\.routerNamespace: "Edge" must consist of lowercase/],
    [{ routerPodLabels: { app: 'a b' }, dns: DnsAccess.clusterDns() }, /network\.routerPodLabels\["app"\]: value "a b" must be/],
    [{ ingress: [{ peers: [] }], dns: DnsAccess.none() }, /network\.ingress\[0\]\.peers: an empty list allows every peer in Kubernetes; omit peers/],
    [{ egress: [{ ports: [] }], dns: DnsAccess.none() }, /network\.egress\[0\]\.ports: an empty list allows every port in Kubernetes/],
  ])('rejects combinations the operator cannot honour (%#)', (options, message) => {
    expect(() => _renderTemplateNetwork(options, 'python')).toThrow(message);
  });
});

describe('SandboxNetworkPolicy', () => {
  test('a Git-owned policy for one template', () => {
    const c = chart();
    const policy = new SandboxNetworkPolicy(c, 'python-policy', {
      templateName: 'python',
      ingress: [{ peers: [SandboxPeer.router()] }],
      egress: [{ peers: [SandboxPeer.publicInternet()], ports: [SandboxNetworkPort.tcp(443)] }],
      dns: DnsAccess.clusterDns(),
    });
    const [obj] = Testing.synth(c);
    expect(obj).toMatchSnapshot();
    expect(obj.metadata).toEqual({ name: 'python-network-policy', namespace: 'sandboxes', labels: PART_OF });
    expect(obj.spec.podSelector).toEqual(sandboxTemplateSelector('python'));
    expect(policy.apiObject.kind).toBe('NetworkPolicy');
    expect(policy.apiObject.node.id).toBe('Resource');
  });

  test('without rules it isolates every sandbox Pod both ways, under a generated name', () => {
    const c = chart();
    new SandboxNetworkPolicy(c, 'lockdown', { metadata: { labels: { tier: 'sandbox' } } });
    const [obj] = Testing.synth(c);
    expect(obj).toMatchSnapshot();
    expect(obj.metadata.name).toMatch(/^test-lockdown-/);
    expect(obj.metadata.labels).toEqual({ ...PART_OF, tier: 'sandbox' });
    expect(obj.spec).toEqual({
      podSelector: { matchExpressions: [{ key: 'agents.x-k8s.io/sandbox-name-hash', operator: 'Exists' }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [],
    });
  });

  test('emits a rendered template spec verbatim', () => {
    const c = chart();
    const { gitOwnedPolicySpec } = _renderTemplateNetwork({ management: NetworkPolicyManagement.UNMANAGED, dns: DnsAccess.clusterDns() }, 'python');
    new SandboxNetworkPolicy(c, 'NetworkPolicy', { templateName: 'python', spec: gitOwnedPolicySpec });
    const [obj] = Testing.synth(c);
    expect(obj.metadata.name).toBe('python-network-policy');
    expect(obj.spec).toEqual(gitOwnedPolicySpec);
  });

  test('escape-hatch JSON patches reach the spec', () => {
    const c = chart();
    const policy = new SandboxNetworkPolicy(c, 'p', { metadata: { name: 'p' } });
    policy.apiObject.addJsonPatch(JsonPatch.add('/spec/egress/-', { to: [{ ipBlock: { cidr: '203.0.113.0/24' } }] }));
    expect(Testing.synth(c)[0].spec.egress).toEqual([{ to: [{ ipBlock: { cidr: '203.0.113.0/24' } }] }]);
  });

  test.each([
    [{ dns: DnsAccess.publicResolvers() }, /SandboxNetworkPolicy test\/p: invalid props:\n {2}- dns: public resolvers are a Pod DNS rewrite the operator does for Managed templates, not a NetworkPolicy rule; choose cluster DNS or no DNS access/],
    [{ templateName: 'Python' }, /templateName: "Python" must consist of lowercase/],
    [{ egress: [{ peers: [] }] }, /egress\[0\]\.peers: an empty list allows every peer/],
    [{ ingress: [], spec: defaultSandboxNetworkPolicySpec('python') }, /spec: give either a complete spec or ingress\/egress\/dns, not both/],
  ])('rejects bad props (%#)', (props, message) => {
    expect(() => new SandboxNetworkPolicy(chart(), 'p', props)).toThrow(message);
  });
});

describe('SandboxDefaultDenyPolicy', () => {
  test('denies everything for every sandbox Pod, with no rules', () => {
    const c = chart();
    new SandboxDefaultDenyPolicy(c, 'deny', { metadata: { name: 'sandbox-default-deny' } });
    const [obj] = Testing.synth(c);
    expect(obj).toMatchSnapshot();
    expect(obj.spec).toEqual({
      podSelector: { matchExpressions: [{ key: 'agents.x-k8s.io/sandbox-name-hash', operator: 'Exists' }] },
      policyTypes: ['Ingress', 'Egress'],
    });
  });
});

describe('AllowRouterIngress', () => {
  test('admits the router to all sandbox Pods, ingress only', () => {
    const c = chart();
    new AllowRouterIngress(c, 'router', { routerNamespace: 'agent-sandbox-system' });
    const [obj] = Testing.synth(c);
    expect(obj).toMatchSnapshot();
    expect(obj.spec.policyTypes).toEqual(['Ingress']);
    expect(obj.spec.ingress).toEqual(defaultSandboxNetworkPolicySpec('x').ingress);
  });

  test('limited to one template, custom router labels and ports', () => {
    const c = chart();
    new AllowRouterIngress(c, 'router', {
      routerNamespace: 'edge',
      routerPodLabels: { 'app.kubernetes.io/name': 'router' },
      templateName: 'python',
      ports: [SandboxNetworkPort.tcp(8888), SandboxNetworkPort.tcpRange(9000, 9100)],
      metadata: { name: 'allow-router' },
    });
    const [obj] = Testing.synth(c);
    expect(obj).toMatchSnapshot();
    expect(obj.spec.podSelector).toEqual(sandboxTemplateSelector('python'));
    expect(obj.spec.ingress[0].ports).toEqual([{ protocol: 'TCP', port: 8888 }, { protocol: 'TCP', port: 9000, endPort: 9100 }]);
  });

  test.each([
    [{ routerNamespace: 'Edge' }, /AllowRouterIngress test\/r: invalid props:\n {2}- routerNamespace: "Edge"/],
    [{ routerNamespace: 'edge', routerPodLabels: { app: '-x' } }, /routerPodLabels\["app"\]: value "-x"/],
    [{ routerNamespace: 'edge', templateName: 'bad_name' }, /templateName: "bad_name"/],
    [{ routerNamespace: 'edge', ports: [] }, /invalid props:\n {2}- ports: an empty list allows every port/],
  ])('rejects bad props (%#)', (props, message) => {
    expect(() => new AllowRouterIngress(chart(), 'r', props)).toThrow(message);
  });
});

test('a chart without a namespace leaves it to kubectl', () => {
  const c = new Chart(new App(), 'bare');
  new SandboxDefaultDenyPolicy(c, 'deny');
  expect(Testing.synth(c)[0].metadata.namespace).toBeUndefined();
});
