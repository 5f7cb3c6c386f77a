/**
 * What the real-node demo adds to the platform: a gVisor SandboxTemplate of the stock Python image
 * with the runtime injected (`runtime: {}`), a warm pool of it, and the agent's ServiceAccount with
 * the library's `SandboxAccess` grant (claims, and `create` on `sandboxclaims/connect`, which the router checks).
 */
import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import { SandboxAccess } from '../../src/access';
import { ObjectRef } from '../../src/object-ref';
import { SandboxRuntimeClass } from '../../src/runtime-class';
import { SandboxTemplate } from '../../src/template';
import { SandboxWarmPool } from '../../src/warm-pool';

export function pythonPoolObjects(namespace: string, pool: string, image: string): any[] {
  const chart: Chart = Testing.chart();
  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'python', namespace },
    runtimeClass: SandboxRuntimeClass.fromName('gvisor'),
    containers: [{
      image,
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
      // The stock image runs as root; the template's non-root default needs a user.
      security: { runAsUser: 1000, runAsGroup: 1000 },
    }],
    runtime: {},
    terminationGracePeriod: Duration.seconds(2),
  });
  new SandboxWarmPool(chart, 'pool', { metadata: { name: pool, namespace }, template, replicas: 2 });
  return Testing.synth(chart);
}

/** The agent's ServiceAccount and the library's SandboxAccess grant: claims, connect to them, list/watch Sandboxes. */
export function agentServiceAccount(namespace: string): any[] {
  const chart: Chart = Testing.chart();
  const agent = new ApiObject(chart, 'agent', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent', namespace } });
  new SandboxAccess(chart, 'access', { metadata: { name: 'agent', namespace }, serviceAccounts: [ObjectRef.fromConstruct(agent)], lifecycle: true });
  return Testing.synth(chart);
}
