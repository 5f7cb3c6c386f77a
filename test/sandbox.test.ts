import { ApiObject, JsonPatch, Testing } from 'cdk8s';
import { Sandbox } from '../src/sandbox';
import { SandboxVolume } from '../src/volume';
import { fullSandboxProps } from './fixtures/full-sandbox';

const python = { image: 'python:3.12-slim', ports: [{ number: 8888, name: 'http' }] };

describe('Sandbox', () => {
  test('a minimal sandbox gets the secure defaults', () => {
    const chart = Testing.chart();
    new Sandbox(chart, 'dev', { metadata: { name: 'dev' }, containers: [python] });
    const [sandbox] = Testing.synth(chart);
    expect(sandbox).toMatchSnapshot();
    const pod = sandbox.spec.podTemplate.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0].securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(pod.containers[0].name).toBe('sandbox');
  });

  test('every field renders', () => {
    const chart = Testing.chart();
    const sb = new Sandbox(chart, 'full', fullSandboxProps());
    sb.addContainer({ image: 'busybox', name: 'sidecar', command: ['sleep', 'infinity'] });
    const [obj] = Testing.synth(chart);
    expect(obj).toMatchSnapshot();
    expect(obj.spec.podTemplate.spec.containers.map((c: any) => c.name)).toEqual(['sandbox', 'sidecar']);
    expect(obj.spec.volumeClaimTemplates[0]).toEqual({
      metadata: { name: 'work' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, storageClassName: 'standard' },
    });
  });

  test('hardening can be switched off piece by piece', () => {
    const chart = Testing.chart();
    new Sandbox(chart, 'root', {
      containers: [python],
      security: { runAsNonRoot: false, hardenContainers: false, automountServiceAccountToken: true, seccompRuntimeDefault: false },
    });
    const pod = Testing.synth(chart)[0].spec.podTemplate.spec;
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toBeUndefined();
    expect(pod.containers[0].securityContext).toBeUndefined();
  });

  test('the ApiObject is the default child and JSON patches apply', () => {
    const chart = Testing.chart();
    const sb = new Sandbox(chart, 'patched', { containers: [python] });
    expect(ApiObject.of(sb)).toBe(sb.apiObject);
    sb.apiObject.addJsonPatch(JsonPatch.add('/spec/podTemplate/spec/hostUsers', false));
    expect(Testing.synth(chart)[0].spec.podTemplate.spec.hostUsers).toBe(false);
  });

  describe('validation names the construct, the field and the fix', () => {
    const synthWith = (props: any, name?: string) => {
      const chart = Testing.chart();
      new Sandbox(chart, 'bad', { metadata: name ? { name } : undefined, ...props });
      return () => Testing.synth(chart);
    };
    test('empty container list', () => {
      expect(synthWith({})).toThrow(/\[test\/bad\] containers: at least one container is required; give containers when constructing, or add one with the add-container method before synth/);
    });
    test('shutdown time that is not RFC 3339', () => {
      expect(synthWith({ containers: [python], shutdownTime: 'tomorrow' })).toThrow(/shutdownTime: "tomorrow" is not an RFC 3339 timestamp; use a form like "2026-12-01T18:00:00Z"/);
      expect(synthWith({ containers: [python], shutdownTime: '2026-12-01 18:00' })).toThrow(/shutdownTime/);
    });
    test('name too long for its Service', () => {
      const long = 'a'.repeat(64);
      expect(synthWith({ containers: [python], service: true }, long)).toThrow(/metadata.name: .*at most 63 characters.*the headless Service takes the Sandbox name, so shorten the name or set service to false/);
      expect(synthWith({ containers: [python] }, long)).not.toThrow();
    });
    test('name that starts with a digit cannot be a Service', () => {
      expect(synthWith({ containers: [python], service: true }, '1sandbox')).toThrow(/start with a letter/);
    });
    test('bad image, port, quantity, mount and container name', () => {
      const run = synthWith({
        containers: [{ image: '', name: 'Bad_Name', ports: [{ number: 70000 }], resources: { limits: { cpu: 'lots' } }, volumeMounts: [{ volume: 'nope', path: 'rel' }] }],
      });
      expect(run).toThrow(/containers\[0\]\.image: must be a non-empty image reference/);
      expect(run).toThrow(/containers\[0\]\.name: "Bad_Name"/);
      expect(run).toThrow(/containers\[0\]\.ports\[0\]\.number: 70000 is not a port/);
      expect(run).toThrow(/containers\[0\]\.resources\.limits\["cpu"\]: "lots" is not a Kubernetes quantity/);
      expect(run).toThrow(/containers\[0\]\.volumeMounts\[0\]\.path: "rel" must be an absolute path/);
      expect(run).toThrow(/volumeMounts: volume "nope" is mounted but not defined/);
    });
    test('duplicate names', () => {
      const run = synthWith({
        containers: [{ image: 'a', name: 'x' }, { image: 'b', name: 'x' }],
        volumes: [SandboxVolume.emptyDir('data')],
        volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }],
      });
      expect(run).toThrow(/containers\[\]\.name: "x" is used twice/);
      expect(run).toThrow(/volumes\[\]\.name \(including volume claim templates\): "data" is used twice/);
    });
    test('reserved pod label prefixes', () => {
      expect(synthWith({ containers: [python], podLabels: { 'agents.x-k8s.io/sandbox-name-hash': 'deadbeef' } }))
        .toThrow(/podLabels\["agents.x-k8s.io\/sandbox-name-hash"\]: the agents.x-k8s.io\/ and extensions.agents.x-k8s.io\/ prefixes are reserved/);
    });
    test('the router\'s pod label, which sandbox NetworkPolicies admit as the router', () => {
      expect(synthWith({ containers: [python], podLabels: { app: 'sandbox-router' } }))
        .toThrow(/podLabels\["app"\]: app=sandbox-router is the sandbox router's label.*the operator refuses to build a Pod carrying it; use another value/);
      expect(() => synthWith({ containers: [python], podLabels: { app: 'agent' } })()).not.toThrow();
    });
    test('bad volume claim template', () => {
      expect(synthWith({ containers: [python], volumeClaimTemplates: [{ name: 'Work', storage: 'ten gigs' }] }))
        .toThrow(/volumeClaimTemplates\[0\]\.storage: "ten gigs" is not a Kubernetes quantity/);
    });
  });
});
