import { Testing } from 'cdk8s';
import { EnvVarsInjectionPolicy, NetworkPolicyManagement, VolumeClaimTemplatesPolicy } from '../src/api/enums';
import { NameHash } from '../src/api/name-hash';
import { DnsAccess, SandboxNetworkPort, SandboxPeer } from '../src/network-policy';
import { SandboxRuntimeClass } from '../src/runtime-class';
import { SandboxTemplate } from '../src/template';

const containers = [{ image: 'python:3.12-slim', ports: [{ number: 8888 }] }];

describe('SandboxTemplate', () => {
  test('a hardening default switched off is also opted out of by annotation, or the operator would put it back', () => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'relaxed', {
      metadata: { name: 'relaxed', annotations: { 'agents.x-k8s.io/secure-defaults-opt-out': 'runAsNonRoot' } },
      containers: [{ image: 'x', security: { runAsUser: 1000 } }],
      security: { seccompRuntimeDefault: false, hardenContainers: false },
    });
    new SandboxTemplate(chart, 'hardened', { metadata: { name: 'hardened' }, containers: [{ image: 'x' }] });
    const [relaxed, hardened] = Testing.synth(chart);
    expect(relaxed.metadata.annotations).toEqual({
      'agents.x-k8s.io/secure-defaults-opt-out': 'runAsNonRoot,seccompProfile,allowPrivilegeEscalation,dropCapabilities',
    });
    expect(relaxed.spec.podTemplate.spec.securityContext).toEqual({ runAsNonRoot: true });
    expect(hardened.metadata.annotations).toBeUndefined();
  });

  test('defaults: secure pod, operator-managed default policy, injection disallowed', () => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'tpl', { metadata: { name: 'python' }, containers });
    const objs = Testing.synth(chart);
    expect(objs).toHaveLength(1);
    const [tpl] = objs;
    expect(tpl).toMatchSnapshot();
    expect(tpl.spec.networkPolicy).toBeUndefined();
    expect(tpl.spec.networkPolicyManagement).toBe('Managed');
    expect(tpl.spec.envVarsInjectionPolicy).toBe('Disallowed');
    expect(tpl.spec.volumeClaimTemplatesPolicy).toBe('Disallowed');
    expect(tpl.spec.podTemplate.spec.automountServiceAccountToken).toBe(false);
  });

  test('a runtime class and injection policies', () => {
    const chart = Testing.chart();
    const gvisor = SandboxRuntimeClass.gvisor(chart, 'gvisor');
    const tpl = new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'python' },
      containers,
      runtimeClass: gvisor,
      envVarsInjectionPolicy: EnvVarsInjectionPolicy.OVERRIDES,
      volumeClaimTemplatesPolicy: VolumeClaimTemplatesPolicy.ALLOWED,
      volumeClaimTemplates: [{ name: 'workspace', storage: '5Gi' }],
      service: true,
    });
    const spec = Testing.synth(chart).find((o) => o.kind === 'SandboxTemplate').spec;
    expect(spec.podTemplate.spec.runtimeClassName).toBe('gvisor');
    expect(spec.envVarsInjectionPolicy).toBe('Overrides');
    expect(spec.volumeClaimTemplatesPolicy).toBe('Allowed');
    expect(spec.service).toBe(true);
    expect(tpl.knownContainerNames).toEqual(['sandbox']);
  });

  test('Managed with custom rules: the operator applies the template\'s rules', () => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'python' },
      containers,
      network: {
        dns: DnsAccess.clusterDns(),
        egress: [{ peers: [SandboxPeer.publicInternet()], ports: [SandboxNetworkPort.tcp(443)] }],
      },
    });
    const objs = Testing.synth(chart);
    expect(objs.map((o) => o.kind)).toEqual(['SandboxTemplate']);
    const { networkPolicy, networkPolicyManagement } = objs[0].spec;
    expect(networkPolicyManagement).toBe('Managed');
    expect(networkPolicy).toMatchSnapshot();
    expect(networkPolicy.egress).toHaveLength(2); // the HTTPS rule and the DNS rule
  });

  test('Unmanaged: Git owns the policy, emitted next to the template, never both', () => {
    const chart = Testing.chart();
    const tpl = new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'python', namespace: 'team-a' },
      containers,
      network: { management: NetworkPolicyManagement.UNMANAGED, dns: DnsAccess.clusterDns() },
    });
    const objs = Testing.synth(chart);
    expect(objs.map((o) => o.kind)).toEqual(['SandboxTemplate', 'NetworkPolicy']);
    const [template, policy] = objs;
    expect(template.spec.networkPolicyManagement).toBe('Unmanaged');
    expect(template.spec.networkPolicy).toBeUndefined();
    expect(policy.metadata).toMatchObject({ name: 'python-network-policy', namespace: 'team-a' });
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': NameHash.of('python') } });
    expect(tpl.networkPolicy).toBeDefined();
    expect(policy).toMatchSnapshot();
  });

  test('fromName carries no policies, so claims against it are not checked', () => {
    const ref = SandboxTemplate.fromName('shared');
    expect(ref).toEqual({ name: 'shared' });
  });

  describe('validation', () => {
    test('no containers', () => {
      const chart = Testing.chart();
      new SandboxTemplate(chart, 'tpl', {});
      expect(() => Testing.synth(chart)).toThrow(/\[test\/tpl\] containers: at least one container is required/);
    });
    test('an invalid name', () => {
      const chart = Testing.chart();
      new SandboxTemplate(chart, 'tpl', { metadata: { name: 'Python_3' }, containers });
      expect(() => Testing.synth(chart)).toThrow(/metadata.name: "Python_3" must consist of lowercase letters/);
    });
    test('Unmanaged with public resolvers (an operator-only DNS rewrite)', () => {
      const chart = Testing.chart();
      expect(() => new SandboxTemplate(chart, 'tpl', { containers, network: { management: NetworkPolicyManagement.UNMANAGED } }))
        .toThrow(/network.dns/);
    });
  });
});
