import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-30';
import { Construct } from 'constructs';
import {
  AgentSandboxSystem, EnvFrom, EnvValue, NodeSelectorOperator, ObjectRef, Probe, Sandbox, SandboxAccess, SandboxPeer, SandboxRuntimeClass,
  SandboxTemplate, SandboxVolume, WhenUnsatisfiable,
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

describe('constructs passed directly where a reference is taken (cdk8s-plus-30)', () => {
  /** cdk8s-plus objects of every kind a reference prop takes, in the namespace `agents`. */
  function objects(chart: Chart) {
    return {
      sa: new kplus.ServiceAccount(chart, 'sa', { metadata: { name: 'agent' } }),
      secret: new kplus.Secret(chart, 'secret', { metadata: { name: 'token' }, stringData: { key: 'x' } }),
      registry: new kplus.DockerConfigSecret(chart, 'registry', { metadata: { name: 'registry' }, data: { auths: {} } }),
      config: new kplus.ConfigMap(chart, 'config', { metadata: { name: 'settings' }, data: { LEVEL: 'info' } }),
      pvc: new kplus.PersistentVolumeClaim(chart, 'pvc', { metadata: { name: 'data' } }),
      priority: new kplus.k8s.KubePriorityClass(chart, 'priority', { metadata: { name: 'low' }, value: 10 }),
    };
  }

  type Refs = { [K in keyof ReturnType<typeof objects>]: ObjectRef | ReturnType<typeof objects>[K] };

  /** Every construct and every reference-taking prop and argument, given `wrap`ped references. */
  function synthAll(wrap: (o: ReturnType<typeof objects>) => Refs): any[] {
    const app = Testing.app();
    const chart = new Chart(app, 'c', { namespace: 'agents', disableResourceNameHashes: true });
    const o = objects(chart);
    const r = wrap(o);
    new SandboxTemplate(chart, 'template', {
      metadata: { name: 'tools' },
      serviceAccount: r.sa,
      imagePullSecrets: [r.registry, ObjectRef.fromName('mirror')],
      priorityClass: r.priority,
      containers: [{
        image: 'python:3.12-slim',
        envValues: { TOKEN: EnvValue.fromSecretKey(r.secret, 'key'), LEVEL: EnvValue.fromConfigMapKey(r.config, 'LEVEL') },
        envFrom: [EnvFrom.secret(r.secret), EnvFrom.configMap(r.config, { prefix: 'CFG_' })],
        volumeMounts: [{ volume: 'settings', path: '/etc/settings' }, { volume: 'creds', path: '/etc/creds' }, { volume: 'data', path: '/data' }],
      }],
      volumes: [SandboxVolume.fromConfigMap('settings', r.config), SandboxVolume.fromSecret('creds', r.secret), SandboxVolume.fromPersistentVolumeClaim('data', r.pvc)],
    });
    new Sandbox(chart, 'sandbox', { metadata: { name: 'bare' }, serviceAccount: r.sa, containers: [{ image: 'python:3.12-slim' }] });
    new SandboxAccess(chart, 'access', { metadata: { name: 'agent-access' }, serviceAccounts: [r.sa, ObjectRef.fromName('other')], routerTokens: true });
    const system = new Chart(app, 'system', { namespace: 'agent-sandbox-system' });
    const pull = new kplus.Secret(system, 'pull', { metadata: { name: 'regcred' } });
    new AgentSandboxSystem(system, 'install', { crds: false, imagePullSecrets: [wrap({ ...o, secret: pull }).secret] });
    return [...Testing.synth(chart), ...Testing.synth(system)];
  }

  const direct = synthAll((o) => o);

  test('the manifests are the same as with ObjectRef.fromConstruct', () => {
    const wrapped = synthAll((o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, ObjectRef.fromConstruct(v)])) as any);
    expect(direct).toEqual(wrapped);
  });

  test('every reference resolves to the name of the object the construct defines', () => {
    const find = (kind: string, name: string) => direct.find((o) => o.kind === kind && o.metadata.name === name);
    const pod = find('SandboxTemplate', 'tools').spec.podTemplate.spec;
    expect(pod.serviceAccountName).toBe('agent');
    expect(pod.imagePullSecrets).toEqual([{ name: 'registry' }, { name: 'mirror' }]);
    expect(pod.priorityClassName).toBe('low');
    expect(pod.containers[0].env).toEqual([
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'token', key: 'key' } } },
      { name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'settings', key: 'LEVEL' } } },
    ]);
    expect(pod.containers[0].envFrom).toEqual([{ secretRef: { name: 'token' } }, { prefix: 'CFG_', configMapRef: { name: 'settings' } }]);
    expect(pod.volumes).toEqual([
      { name: 'settings', configMap: { name: 'settings' } },
      { name: 'creds', secret: { secretName: 'token' } },
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
    ]);
    expect(find('Sandbox', 'bare').spec.podTemplate.spec.serviceAccountName).toBe('agent');
    expect(find('RoleBinding', 'agent-access').subjects.map((s: any) => s.name)).toEqual(['agent', 'other']);
    expect(find('Role', 'agent-access-token-0').rules[0].resourceNames).toEqual(['agent']);
    expect(find('Deployment', 'agent-sandbox-controller').spec.template.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
  });

  test('a construct of the wrong kind fails naming each prop, the expected kind and the fix', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    const { config } = objects(chart);
    new SandboxTemplate(chart, 'template', {
      serviceAccount: config,
      imagePullSecrets: [config],
      priorityClass: config,
      containers: [{ image: 'python:3.12-slim', envValues: { TOKEN: EnvValue.fromSecretKey(config, 'key') } }],
      volumes: [SandboxVolume.fromPersistentVolumeClaim('data', config)],
    });
    new SandboxAccess(chart, 'access', { serviceAccounts: [config] });
    const run = () => Testing.synth(chart);
    const wrong = 'construct c/config/Resource is a ConfigMap \\(v1\\) but a';
    const fix = (kind: string) => `; pass a ${kind}, or refer to one by name with ObjectRef\\.fromName`;
    expect(run).toThrow(new RegExp(`serviceAccount: ${wrong} ServiceAccount is expected${fix('ServiceAccount')}`));
    expect(run).toThrow(new RegExp(`imagePullSecrets\\[0\\]: ${wrong} Secret is expected${fix('Secret')}`));
    expect(run).toThrow(new RegExp(`priorityClass: ${wrong} PriorityClass \\(scheduling.k8s.io\\) is expected${fix('PriorityClass')}`));
    expect(run).toThrow(new RegExp(`containers\\[0\\]\\.envValues\\["TOKEN"\\]: ${wrong} Secret is expected${fix('Secret')}`));
    expect(run).toThrow(new RegExp(`volumes\\[0\\]: ${wrong} PersistentVolumeClaim is expected${fix('PersistentVolumeClaim')}`));
    expect(run).toThrow(new RegExp(`serviceAccounts\\[0\\]: ${wrong} ServiceAccount is expected${fix('ServiceAccount')}`));
    // The install checks its props when it is constructed.
    const system = new Chart(Testing.app(), 'system', { namespace: 'agent-sandbox-system' });
    const notASecret = new kplus.ServiceAccount(system, 'not-a-secret');
    expect(() => new AgentSandboxSystem(system, 'install', { crds: false, imagePullSecrets: [notASecret] }))
      .toThrow(/imagePullSecrets\[0\]: construct system\/not-a-secret\/Resource is a ServiceAccount \(v1\) but a Secret is expected; pass a Secret/);
  });

  test('runtimeClass takes a RuntimeClass construct as SandboxRuntimeClass.fromConstruct does; another kind fails naming the prop', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    const kata = new kplus.k8s.KubeRuntimeClass(chart, 'kata', { metadata: { name: 'kata-qemu' }, handler: 'kata-qemu' });
    new SandboxTemplate(chart, 'direct', { metadata: { name: 'direct' }, runtimeClass: kata, containers: [{ image: 'python:3.12-slim' }] });
    new SandboxTemplate(chart, 'wrapped', { metadata: { name: 'wrapped' }, runtimeClass: SandboxRuntimeClass.fromConstruct(kata), containers: [{ image: 'python:3.12-slim' }] });
    new SandboxTemplate(chart, 'named', { metadata: { name: 'named' }, runtimeClass: SandboxRuntimeClass.fromName('gvisor'), containers: [{ image: 'python:3.12-slim' }] });
    const runtimeOf = (name: string) => Testing.synth(chart).find((o) => o.kind === 'SandboxTemplate' && o.metadata.name === name).spec.podTemplate.spec.runtimeClassName;
    expect([runtimeOf('direct'), runtimeOf('wrapped'), runtimeOf('named')]).toEqual(['kata-qemu', 'kata-qemu', 'gvisor']);

    const bad = new Chart(Testing.app(), 'bad', { namespace: 'agents' });
    const config = new kplus.ConfigMap(bad, 'config', { metadata: { name: 'settings' } });
    new SandboxTemplate(bad, 'template', { runtimeClass: config, containers: [{ image: 'python:3.12-slim' }] });
    expect(() => Testing.synth(bad)).toThrow(/runtimeClass: construct bad\/config\/Resource is a ConfigMap \(v1\) but a RuntimeClass \(node.k8s.io\) is expected/);
  });

  test('a construct that defines no Kubernetes object is refused with the fix', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    new Sandbox(chart, 'sb', { serviceAccount: new Construct(chart, 'empty'), containers: [{ image: 'python:3.12-slim' }] });
    expect(() => Testing.synth(chart)).toThrow(/serviceAccount: construct c\/empty defines no Kubernetes object; pass a construct that wraps a ServiceAccount/);
  });
});
