/**
 * What the real-node demo adds to the platform: a gVisor SandboxTemplate of the stock Python image
 * with the runtime injected (`runtime: {}`), a warm pool of it, and the agent's ServiceAccount with
 * the rights the router checks (claims, and `get` on the Sandbox).
 */
import { Chart, Duration, Testing } from 'cdk8s';
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

export function agentServiceAccount(namespace: string): any[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent', namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'agent', namespace },
      rules: [
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
        { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'agent', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace }],
    },
  ];
}
