import { Duration, Testing } from 'cdk8s';
import { ClaimShutdownPolicy, EnvVarsInjectionPolicy, VolumeClaimTemplatesPolicy } from '../src/api/enums';
import { SandboxClaim } from '../src/claim';
import { SandboxTemplate } from '../src/template';
import { SandboxWarmPool } from '../src/warm-pool';

function chain(templateProps: any = {}) {
  const chart = Testing.chart();
  const template = new SandboxTemplate(chart, 'tpl', {
    metadata: { name: 'python' },
    containers: [{ image: 'python:3.12-slim', name: 'main' }],
    initContainers: [{ image: 'busybox', name: 'setup' }],
    ...templateProps,
  });
  const warmPool = new SandboxWarmPool(chart, 'pool', { metadata: { name: 'python-pool' }, template, replicas: 2 });
  return { chart, warmPool };
}

describe('SandboxClaim', () => {
  test('a warm claim is just a pool reference', () => {
    const { chart, warmPool } = chain();
    new SandboxClaim(chart, 'claim', { metadata: { name: 'agent-1' }, warmPool });
    const claim = Testing.synth(chart).find((o) => o.kind === 'SandboxClaim');
    expect(claim.spec).toEqual({ warmPoolRef: { name: 'python-pool' } });
  });

  test('lifecycle, env, volumes and pod metadata render as upstream expects', () => {
    const { chart, warmPool } = chain({
      envVarsInjectionPolicy: EnvVarsInjectionPolicy.ALLOWED,
      volumeClaimTemplatesPolicy: VolumeClaimTemplatesPolicy.ALLOWED,
    });
    new SandboxClaim(chart, 'claim', {
      metadata: { name: 'agent-2' },
      warmPool,
      lifecycle: { shutdownTime: '2026-12-01T18:00:00Z', ttlAfterFinished: Duration.minutes(10), shutdownPolicy: ClaimShutdownPolicy.DELETE_FOREGROUND },
      env: [{ name: 'TASK_ID', value: '42' }, { name: 'SETUP', value: '1', containerName: 'setup' }],
      volumeClaimTemplates: [{ name: 'cache', storage: '5Gi' }],
      podLabels: { 'sandbox.users.io/team': 'search' },
      podAnnotations: { 'example.com/owner': 'alice', 'note': 'x' },
    });
    const claim = Testing.synth(chart).find((o) => o.kind === 'SandboxClaim');
    expect(claim).toMatchSnapshot();
    expect(claim.spec.lifecycle).toEqual({ shutdownTime: '2026-12-01T18:00:00Z', ttlSecondsAfterFinished: 600, shutdownPolicy: 'DeleteForeground' });
  });

  test('claims against pools known only by name skip policy checks', () => {
    const chart = Testing.chart();
    new SandboxClaim(chart, 'claim', { warmPool: SandboxWarmPool.fromName('elsewhere'), env: [{ name: 'A', value: 'b' }] });
    expect(Testing.synth(chart)[0].spec.env).toEqual([{ name: 'A', value: 'b' }]);
  });

  describe('validation', () => {
    const claimWith = (props: any, templateProps: any = {}) => () => {
      const { chart, warmPool } = chain(templateProps);
      new SandboxClaim(chart, 'bad', { warmPool, ...props });
      Testing.synth(chart);
    };
    test('env against a template that disallows env injection', () => {
      expect(claimWith({ env: [{ name: 'A', value: 'b' }] }))
        .toThrow(/\[test\/bad\] env: template "python" has spec.envVarsInjectionPolicy Disallowed, which refuses env from claims; set the template's envVarsInjectionPolicy to Allowed \(or Overrides\), or give the claim no env/);
    });
    test('env aimed at a container the template lacks', () => {
      expect(claimWith({ env: [{ name: 'A', value: 'b', containerName: 'ghost' }] }, { envVarsInjectionPolicy: EnvVarsInjectionPolicy.OVERRIDES }))
        .toThrow(/env\[0\]\.containerName: template "python" has no container "ghost"; use one of main, setup/);
    });
    test('bad env name', () => {
      expect(claimWith({ env: [{ name: '1 A', value: 'b' }] }, { envVarsInjectionPolicy: EnvVarsInjectionPolicy.ALLOWED }))
        .toThrow(/env\[0\]\.name: "1 A" is not a valid variable name/);
    });
    test('volume claim templates against a template that disallows them', () => {
      expect(claimWith({ volumeClaimTemplates: [{ name: 'x', storage: '1Gi' }] }))
        .toThrow(/volumeClaimTemplates: template "python" has volumeClaimTemplatesPolicy Disallowed/);
    });
    test('shutdown time and TTL', () => {
      expect(claimWith({ lifecycle: { shutdownTime: '12/01/2026' } })).toThrow(/lifecycle.shutdownTime: "12\/01\/2026" is not an RFC 3339 timestamp/);
      expect(claimWith({ lifecycle: { ttlAfterFinished: Duration.millis(1500) } })).toThrow(/lifecycle.ttlAfterFinished: must be a whole number of seconds/);
    });
    test('pod labels outside the allowed domains, and reserved annotations', () => {
      const run = claimWith({
        podLabels: { 'team': 'a', 'evil.com/x': 'y', 'sandbox.users.io/app': 'ok' },
        podAnnotations: { 'kubernetes.io/psp': 'x', 'agents.x-k8s.io/pod-name': 'other' },
      });
      expect(run).toThrow(/podLabels\["team"\]: label "team" needs a domain prefix from the allow-list \(sandbox.users.io\)/);
      expect(run).toThrow(/podLabels\["evil.com\/x"\]: label domain "evil.com" is not allowed/);
      expect(run).toThrow(/podAnnotations\["kubernetes.io\/psp"\]: annotation domain "kubernetes.io" is reserved/);
      expect(run).toThrow(/podAnnotations\["agents.x-k8s.io\/pod-name"\]: annotation domain "agents.x-k8s.io" is reserved/);
      expect(claimWith({ podLabels: { 'corp.example/team': 'a' }, allowedPodLabelDomains: ['example'] })).not.toThrow();
      expect(claimWith({ podAnnotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' } })).not.toThrow();
    });
  });
});
