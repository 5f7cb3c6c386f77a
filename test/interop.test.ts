import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import { Construct } from 'constructs';
import {
  EnvFrom, EnvValue, NodeSelectorOperator, ObjectRef, Probe, Sandbox, SandboxPeer, SandboxRuntimeClass, SandboxTemplate, SandboxVolume,
  WhenUnsatisfiable,
} from '../src';

const image = 'python:3.12-slim';

/** A construct wrapping one ApiObject with id `Resource`, as cdk8s-plus objects do. */
class Wrapper extends Construct {
  public readonly apiObject: ApiObject;
  constructor(scope: Construct, id: string, apiVersion: string, kind: string, name: string, namespace?: string) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', { apiVersion, kind, metadata: { name, namespace } });
  }
}

function podOf(chart: Chart, kind = 'SandboxTemplate') {
  return Testing.synth(chart).find((o) => o.kind === kind).spec.podTemplate.spec;
}

describe('ObjectRef', () => {
  test('a wrapping construct, an L1 and a name resolve to the object name', () => {
    const chart = Testing.chart();
    const sa = new Wrapper(chart, 'sa', 'v1', 'ServiceAccount', 'agent');
    const secret = new ApiObject(chart, 'secret', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pull' } });
    const cm = new Wrapper(chart, 'cm', 'v1', 'ConfigMap', 'settings');
    const pvc = new Wrapper(chart, 'pvc', 'v1', 'PersistentVolumeClaim', 'data');
    const rc = new ApiObject(chart, 'rc', { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'kata' } });
    new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'tpl' },
      serviceAccount: ObjectRef.fromConstruct(sa),
      imagePullSecrets: [ObjectRef.fromConstruct(secret), ObjectRef.fromName('other-pull')],
      runtimeClass: SandboxRuntimeClass.fromConstruct(rc),
      priorityClass: ObjectRef.fromName('low'),
      volumes: [
        SandboxVolume.fromConfigMap('settings', ObjectRef.fromConstruct(cm)),
        SandboxVolume.fromSecret('creds', ObjectRef.fromConstruct(secret)),
        SandboxVolume.fromPersistentVolumeClaim('data', ObjectRef.fromConstruct(pvc), true),
        SandboxVolume.configMap('by-name', 'plain'),
      ],
      containers: [{ image }],
    });
    const pod = podOf(chart);
    expect(pod.serviceAccountName).toBe('agent');
    expect(pod.imagePullSecrets).toEqual([{ name: 'pull' }, { name: 'other-pull' }]);
    expect(pod.runtimeClassName).toBe('kata');
    expect(pod.priorityClassName).toBe('low');
    expect(pod.volumes).toEqual([
      { name: 'settings', configMap: { name: 'settings' } },
      { name: 'creds', secret: { secretName: 'pull' } },
      { name: 'data', persistentVolumeClaim: { claimName: 'data', readOnly: true } },
      { name: 'by-name', configMap: { name: 'plain' } },
    ]);
    expect(ObjectRef.fromConstruct(sa).name).toBe('agent');
  });

  test('a construct of the wrong kind fails at synth naming the prop and the expected kind', () => {
    const chart = Testing.chart();
    const cm = new Wrapper(chart, 'cm', 'v1', 'ConfigMap', 'settings');
    new Sandbox(chart, 'sb', {
      serviceAccount: ObjectRef.fromConstruct(cm),
      imagePullSecrets: [ObjectRef.fromConstruct(cm)],
      volumes: [SandboxVolume.fromSecret('s', ObjectRef.fromConstruct(cm))],
      containers: [{ image }],
    });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/serviceAccount: construct test\/cm\/Resource is a ConfigMap \(v1\) but a ServiceAccount is expected/);
    expect(run).toThrow(/imagePullSecrets\[0\]: .* but a Secret is expected/);
    expect(run).toThrow(/volumes\[0\]: .* but a Secret is expected/);
  });

  test('a group mismatch is caught too (a RuntimeClass that is not node.k8s.io)', () => {
    const chart = Testing.chart();
    const fake = new ApiObject(chart, 'fake', { apiVersion: 'example.com/v1', kind: 'RuntimeClass', metadata: { name: 'x' } });
    new Sandbox(chart, 'sb', { runtimeClass: SandboxRuntimeClass.fromConstruct(fake), containers: [{ image }] });
    expect(() => Testing.synth(chart)).toThrow(/runtimeClass: .* is a RuntimeClass \(example.com\/v1\) but a RuntimeClass \(node.k8s.io\) is expected/);
  });

  test('a construct without an ApiObject, or in another namespace, fails with the fix', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    const empty = new Construct(chart, 'empty');
    const elsewhere = new Wrapper(chart, 'sa', 'v1', 'ServiceAccount', 'agent', 'other');
    new Sandbox(chart, 'a', { serviceAccount: ObjectRef.fromConstruct(empty), containers: [{ image }] });
    new Sandbox(chart, 'b', { serviceAccount: ObjectRef.fromConstruct(elsewhere), containers: [{ image }] });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/serviceAccount: construct c\/empty defines no Kubernetes object; pass a construct that wraps a ServiceAccount/);
    expect(run).toThrow(/serviceAccount: ServiceAccount "agent" is in namespace "other" but it is used from namespace "agents"/);
  });

  test('serviceAccount and serviceAccountName together are refused; a bad name is caught', () => {
    const chart = Testing.chart();
    new Sandbox(chart, 'sb', { serviceAccount: ObjectRef.fromName('Bad_Name'), serviceAccountName: 'x', containers: [{ image }] });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/serviceAccount: and serviceAccountName are both set/);
    expect(run).toThrow(/serviceAccount: "Bad_Name" must consist of lowercase/);
  });
});

describe('container env, envFrom and probes', () => {
  test('render as core/v1', () => {
    const chart = Testing.chart();
    const secret = new Wrapper(chart, 's', 'v1', 'Secret', 'token');
    const cm = new Wrapper(chart, 'cm', 'v1', 'ConfigMap', 'settings');
    new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'tpl' },
      containers: [{
        image,
        ports: [{ number: 8888, name: 'api' }],
        env: { PLAIN: '1' },
        envValues: {
          TOKEN: EnvValue.fromSecretKey(ObjectRef.fromConstruct(secret), 'token', { optional: true }),
          MODE: EnvValue.fromConfigMapKey(ObjectRef.fromName('modes'), 'mode'),
          NODE: EnvValue.fromField('spec.nodeName'),
        },
        envFrom: [EnvFrom.configMap(ObjectRef.fromConstruct(cm), { prefix: 'CFG_' }), EnvFrom.secret(ObjectRef.fromConstruct(secret))],
        livenessProbe: Probe.httpGet('/healthz', { portName: 'api', scheme: 'HTTP', headers: { 'X-Probe': '1' }, failureThreshold: 5 }),
        readinessProbe: Probe.tcpSocket({ port: 8888, period: Duration.seconds(5), successThreshold: 2 }),
        startupProbe: Probe.exec(['cat', '/tmp/ready'], { initialDelay: Duration.seconds(2), timeout: Duration.seconds(3) }),
      }, {
        image, name: 'grpc', livenessProbe: Probe.grpc(9090, { service: 'sandbox' }),
      }],
    });
    const pod = podOf(chart);
    expect(pod).toMatchSnapshot();
    const [main, grpc] = pod.containers;
    expect(main.env).toEqual([
      { name: 'PLAIN', value: '1' },
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'token', key: 'token', optional: true } } },
      { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'modes', key: 'mode' } } },
      { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ]);
    expect(main.envFrom).toEqual([{ prefix: 'CFG_', configMapRef: { name: 'settings' } }, { secretRef: { name: 'token' } }]);
    expect(main.livenessProbe).toEqual({ httpGet: { path: '/healthz', port: 'api', scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: '1' }] }, failureThreshold: 5 });
    expect(main.readinessProbe).toEqual({ tcpSocket: { port: 8888 }, periodSeconds: 5, successThreshold: 2 });
    expect(main.startupProbe).toEqual({ exec: { command: ['cat', '/tmp/ready'] }, initialDelaySeconds: 2, timeoutSeconds: 3 });
    expect(grpc.livenessProbe).toEqual({ grpc: { port: 9090, service: 'sandbox' } });
  });

  test('bad env and probes fail at synth naming the field and the fix', () => {
    const chart = Testing.chart();
    const pvc = new Wrapper(chart, 'pvc', 'v1', 'PersistentVolumeClaim', 'data');
    new Sandbox(chart, 'sb', {
      containers: [{
        image,
        ports: [{ number: 8080, name: 'http' }],
        env: { A: '1' },
        envValues: {
          A: EnvValue.fromField('metadata.name'),
          B: EnvValue.fromField('spec.containers'),
          C: EnvValue.fromSecretKey(ObjectRef.fromConstruct(pvc), 'k'),
          D: EnvValue.fromConfigMapKey(ObjectRef.fromName('cm'), 'bad key'),
        },
        envFrom: [EnvFrom.secret(ObjectRef.fromName('s'), { prefix: '1X' })],
        livenessProbe: Probe.httpGet('healthz', { portName: 'api', successThreshold: 2 }),
        readinessProbe: Probe.tcpSocket({ port: 70000, portName: 'http' }),
        startupProbe: Probe.exec([], { period: Duration.millis(500) }),
      }],
    });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/containers\[0\]\.envValues\["A"\]: is also set in env/);
    expect(run).toThrow(/containers\[0\]\.envValues\["B"\]: "spec.containers" is not a Pod field/);
    expect(run).toThrow(/containers\[0\]\.envValues\["C"\]: .* is a PersistentVolumeClaim \(v1\) but a Secret is expected/);
    expect(run).toThrow(/containers\[0\]\.envValues\["D"\]\.key: "bad key"/);
    expect(run).toThrow(/containers\[0\]\.envFrom\[0\]\.prefix: "1X"/);
    expect(run).toThrow(/containers\[0\]\.livenessProbe\.path: "healthz" must start with "\/"/);
    expect(run).toThrow(/containers\[0\]\.livenessProbe\.portName: "api" is not the name of one of the container's ports \("http"\)/);
    expect(run).toThrow(/containers\[0\]\.livenessProbe\.successThreshold: must be 1 for liveness and startup probes/);
    expect(run).toThrow(/containers\[0\]\.readinessProbe\.port: give exactly one of port/);
    expect(run).toThrow(/containers\[0\]\.readinessProbe\.port: 70000 is not a port/);
    expect(run).toThrow(/containers\[0\]\.startupProbe\.command: must not be empty/);
    expect(run).toThrow(/containers\[0\]\.startupProbe\.period: 0.5s must be a whole number of seconds/);
  });
});

describe('scheduling', () => {
  test('nodeSelector, tolerations, affinity and topology spread render', () => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'tpl' },
      podLabels: { app: 'tools' },
      nodeSelector: { pool: 'sandboxes' },
      tolerations: [{ key: 'sandbox', value: 'true', effect: 'NoSchedule' }, { key: 'spot', effect: 'NoExecute', tolerationSeconds: 60 }],
      affinity: {
        requiredNodeTerms: [{ matchExpressions: [{ key: 'kubernetes.io/arch', operator: NodeSelectorOperator.IN, values: ['amd64'] }] }],
        preferredNodeTerms: [{ weight: 10, matchExpressions: [{ key: 'gpu', operator: NodeSelectorOperator.DOES_NOT_EXIST }] }],
        podAntiAffinity: [{ matchLabels: { app: 'tools' }, topologyKey: 'kubernetes.io/hostname' }],
        podAffinity: [{ matchLabels: { app: 'agent' }, topologyKey: 'topology.kubernetes.io/zone', weight: 20, namespaces: ['agents'] }],
      },
      topologySpreadConstraints: [
        { topologyKey: 'topology.kubernetes.io/zone' },
        { topologyKey: 'kubernetes.io/hostname', maxSkew: 2, whenUnsatisfiable: WhenUnsatisfiable.SCHEDULE_ANYWAY, matchLabels: { tier: 'x' } },
      ],
      containers: [{ image }],
    });
    const pod = podOf(chart);
    expect(pod).toMatchSnapshot();
    expect(pod.tolerations).toEqual([
      { key: 'sandbox', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
      { key: 'spot', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
    ]);
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0])
      .toEqual({ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] });
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0])
      .toEqual({ labelSelector: { matchLabels: { app: 'tools' } }, topologyKey: 'kubernetes.io/hostname' });
    expect(pod.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight).toBe(20);
    expect(pod.topologySpreadConstraints[0]).toEqual({
      maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'tools' } },
    });
  });

  test('bad scheduling input fails naming the field and the fix', () => {
    const chart = Testing.chart();
    new Sandbox(chart, 'sb', {
      nodeSelector: { 'bad key!': 'x' },
      tolerations: [{ key: 'a', effect: 'NoRun' }, { key: 'b', effect: 'NoSchedule', tolerationSeconds: 5 }],
      affinity: {
        requiredNodeTerms: [{ matchExpressions: [{ key: 'a', operator: NodeSelectorOperator.IN }, { key: 'b', operator: NodeSelectorOperator.GT, values: ['x'] }] }],
        preferredNodeTerms: [{ weight: 0, matchExpressions: [{ key: 'c', operator: NodeSelectorOperator.EXISTS, values: ['y'] }] }],
        podAntiAffinity: [{ matchLabels: {}, topologyKey: 'kubernetes.io/hostname' }],
      },
      topologySpreadConstraints: [{ topologyKey: 'zone', maxSkew: 0, minDomains: 2, whenUnsatisfiable: WhenUnsatisfiable.SCHEDULE_ANYWAY }],
      containers: [{ image }],
    });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/nodeSelector\["bad key!"\]/);
    expect(run).toThrow(/tolerations\[0\]\.effect: "NoRun" must be one of NoSchedule, PreferNoSchedule, NoExecute/);
    expect(run).toThrow(/tolerations\[1\]\.tolerationSeconds: only applies to the NoExecute effect/);
    expect(run).toThrow(/affinity\.requiredNodeTerms\[0\]\.matchExpressions\[0\]\.values: In needs at least one value/);
    expect(run).toThrow(/affinity\.requiredNodeTerms\[0\]\.matchExpressions\[1\]\.values: Gt needs exactly one integer value/);
    expect(run).toThrow(/affinity\.preferredNodeTerms\[0\]\.weight: 0 must be a whole number from 1 to 100/);
    expect(run).toThrow(/affinity\.preferredNodeTerms\[0\]\.matchExpressions\[0\]\.values: Exists takes no values/);
    expect(run).toThrow(/affinity\.podAntiAffinity\[0\]\.matchLabels: must not be empty/);
    expect(run).toThrow(/topologySpreadConstraints\[0\]\.maxSkew: 0 must be a whole number of at least 1/);
    expect(run).toThrow(/topologySpreadConstraints\[0\]\.minDomains: only applies with DoNotSchedule/);
    expect(run).toThrow(/topologySpreadConstraints\[0\]\.matchLabels: is required when the Pod has no podLabels/);
  });
});

describe('SandboxPeer.namespaceOf', () => {
  test('takes a Namespace construct; other kinds fail naming the argument', () => {
    const chart = Testing.chart();
    const ns = new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'agents' } });
    expect(SandboxPeer.namespaceOf(ns)._toKube()).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agents' } } }]);
    const sa = new ApiObject(chart, 'sa', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'x' } });
    expect(() => SandboxPeer.namespaceOf(sa)).toThrow(/SandboxPeer.namespaceOf\(\): invalid arguments:\n {2}- namespace: construct test\/sa is a ServiceAccount \(v1\) but a Namespace is expected/);
  });
});
