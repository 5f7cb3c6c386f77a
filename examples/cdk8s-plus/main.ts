// cdk8s-plus beside agent sandboxes: an agent Deployment written with cdk8s-plus-30, and the warm
// pool its agents claim sandboxes from. The constructs share objects by reference instead of by
// name: the sandboxes run as the Deployment's ServiceAccount, read the model token from the same
// Secret, and pull from the same registry. A reference to the wrong kind of object, or to one in
// another namespace, fails at synth naming the prop.
// Copy this file into a cdk8s app and import from 'cdk8s-agent-sandbox' instead of '../../src'.
import { App, Chart, Duration, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-30';
import {
  EnvFrom, EnvValue, ObjectRef, Probe, SandboxTemplate, SandboxWarmPool, WhenUnsatisfiable,
} from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'cdk8s-plus', { namespace: 'agents', disableResourceNameHashes: true });

  const serviceAccount = new kplus.ServiceAccount(chart, 'agent-sa', { metadata: { name: 'agent' } });
  const modelToken = new kplus.Secret(chart, 'model-token', {
    metadata: { name: 'model-token' },
    stringData: { token: 'replace-me-with-a-sealed-or-external-secret' },
  });
  const registry = new kplus.DockerConfigSecret(chart, 'registry', {
    metadata: { name: 'registry' },
    data: { auths: {} },
  });
  const settings = new kplus.ConfigMap(chart, 'agent-settings', {
    metadata: { name: 'agent-settings' },
    data: { LOG_LEVEL: 'info', MAX_STEPS: '50' },
  });

  // The agent: it claims sandboxes from the pool below and runs code in them.
  const agent = new kplus.Deployment(chart, 'agent', {
    metadata: { name: 'agent' },
    replicas: 2,
    serviceAccount,
    dockerRegistryAuth: registry,
    containers: [{
      image: 'registry.example.com/agent:1.4.2',
      portNumber: 8080,
      envVariables: { MODEL_TOKEN: kplus.EnvValue.fromSecretValue({ secret: modelToken, key: 'token' }) },
      resources: {
        cpu: { request: kplus.Cpu.millis(250), limit: kplus.Cpu.millis(1000) },
        memory: { request: Size.mebibytes(256), limit: Size.mebibytes(512) },
      },
    }],
  });
  agent.exposeViaService({ name: 'agent' });

  // The sandboxes its agents claim: the same ServiceAccount, Secret, ConfigMap and pull secret,
  // passed as constructs (ObjectRef.fromConstruct(c) is the same; ObjectRef.fromName for an object
  // made elsewhere).
  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'agent-tools' },
    serviceAccount,
    imagePullSecrets: [registry],
    podLabels: { app: 'agent-tools' },
    containers: [{
      image: 'registry.example.com/agent-tools:1.4.2',
      ports: [{ number: 8888, name: 'api' }],
      envValues: {
        MODEL_TOKEN: EnvValue.fromSecretKey(modelToken, 'token'),
        POD_NAME: EnvValue.fromField('metadata.name'),
      },
      envFrom: [EnvFrom.configMap(settings)],
      readinessProbe: Probe.httpGet('/healthz', { portName: 'api', period: Duration.seconds(5) }),
      livenessProbe: Probe.tcpSocket({ portName: 'api', initialDelay: Duration.seconds(10) }),
      resources: { requests: { cpu: '500m', memory: '512Mi' }, limits: { memory: '1Gi' } },
    }],
    // Spread warm sandboxes over zones; keep them off the agent's nodes.
    topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: WhenUnsatisfiable.SCHEDULE_ANYWAY }],
    affinity: { podAntiAffinity: [{ matchLabels: agent.matchLabels, topologyKey: 'kubernetes.io/hostname', weight: 50 }] },
    priorityClass: ObjectRef.fromName('agent-sandbox-warm'),
  });

  new SandboxWarmPool(chart, 'pool', { metadata: { name: 'agent-tools' }, template, replicas: 5 });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
