// A hardened pool: gVisor isolation, pinned image, resource limits, a namespace-wide
// default-deny floor, and stale sandboxes recreated as soon as the template changes.
import { App, Chart, Duration } from 'cdk8s';
import {
  SandboxDefaultDenyPolicy, SandboxRuntimeClass, SandboxTemplate, SandboxVolume, SandboxWarmPool,
  WarmPoolUpdateStrategyType,
} from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'hardened-gvisor', { namespace: 'untrusted', disableResourceNameHashes: true });

  const gvisor = SandboxRuntimeClass.gvisor(chart, 'gvisor', {
    nodeSelector: { 'sandbox.gke.io/runtime': 'gvisor' },
    tolerations: [{ key: 'sandbox.gke.io/runtime', value: 'gvisor', effect: 'NoSchedule' }],
  });

  // NetworkPolicies add up: this denies everything the template's managed policy does not allow.
  new SandboxDefaultDenyPolicy(chart, 'deny-all', { metadata: { name: 'sandboxes-default-deny' } });

  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'code-runner' },
    runtimeClass: gvisor,
    containers: [{
      // Pin by digest in production (image@sha256:...) so every sandbox runs the bytes you reviewed.
      image: 'python:3.12-slim',
      command: ['sleep', 'infinity'],
      resources: {
        requests: { 'cpu': '500m', 'memory': '512Mi', 'ephemeral-storage': '1Gi' },
        limits: { 'cpu': '1', 'memory': '1Gi', 'ephemeral-storage': '2Gi' },
      },
      security: { readOnlyRootFilesystem: true, runAsUser: 65532, runAsGroup: 65532 },
      volumeMounts: [{ volume: 'tmp', path: '/tmp' }],
    }],
    volumes: [SandboxVolume.emptyDir('tmp', { sizeLimit: '512Mi' })],
    terminationGracePeriod: Duration.seconds(5),
  });

  new SandboxWarmPool(chart, 'pool', {
    metadata: { name: 'code-runner' },
    template,
    replicas: 10,
    updateStrategy: WarmPoolUpdateStrategyType.RECREATE,
  });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
