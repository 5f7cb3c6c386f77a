// The walk-through on the local control plane in docs/router-and-runtime.md: the
// quickstart's Python template (the runtime injected into python:3.12-slim) with a label that asks
// the local control plane's pod runner to run its Pods (there is no kubelet there; drop the label in
// a real cluster), a warm pool of two, and the RBAC an agent's ServiceAccount needs (SandboxAccess):
// create, watch and delete its claims, and `create` on `sandboxclaims/connect`, which the router
// checks (SubjectAccessReview) before it forwards a request. The workspace is a 1Gi claim of the
// default StorageClass per sandbox, as in the quickstart: the local control plane's provisioner
// binds it to a directory, and its pod runner runs the runtime in that directory, so files there
// survive suspend and resume.
import { ApiObject, App, Chart } from 'cdk8s';
import { ObjectRef, SandboxAccess, SandboxTemplate, SandboxWarmPool } from '../../src';

/** Opts a Pod in to the local control plane's pod runner (tools/control-plane/pod-runner.ts). */
const LOCAL_POD_RUNNER = { 'control-plane.local/run': 'true' };

export function build(app: App): void {
  const chart = new Chart(app, 'local-agent', { namespace: 'default', disableResourceNameHashes: true });

  const template = new SandboxTemplate(chart, 'python', {
    metadata: { name: 'python' },
    podLabels: LOCAL_POD_RUNNER,
    containers: [{
      image: 'python:3.12-slim',
      security: { runAsUser: 1000, runAsGroup: 1000 },
      resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
    }],
    volumeClaimTemplates: [{ name: 'workspace', storage: '1Gi' }],
    runtime: { filesPort: 8080, grpcPort: 9090, workspaceVolume: 'workspace' },
    // The volume's files belong to group 1000, so the non-root user can write them (most provisioners
    // make root-owned volumes).
    security: { fsGroup: 1000 },
  });
  new SandboxWarmPool(chart, 'pool', { metadata: { name: 'python' }, template, replicas: 2 });

  const agent = new ApiObject(chart, 'agent', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent' } });
  // What the agent's ServiceAccount may do: claim sandboxes in this namespace and use the ones it
  // claims through the router (`create` on sandboxclaims/connect).
  new SandboxAccess(chart, 'agent-access', { metadata: { name: 'sandbox-agent' }, serviceAccounts: [ObjectRef.fromConstruct(agent)] });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
