import { App, Chart } from 'cdk8s';
import { AgentSandboxSystem, ObjectRef, SandboxAccess, SandboxTemplate, SandboxWarmPool } from '../../src';

const app = new App();

// The install: the Namespace agent-sandbox-system, the four CRDs, least-privilege RBAC, the operator,
// the admission policies, and the router, the one way agents reach their sandboxes.
new AgentSandboxSystem(new Chart(app, 'system', { disableResourceNameHashes: true }), 'system', {
  router: {},
  // Until a release publishes the operator image, name your own build (see docs/install.md):
  // image: 'registry.example/agent-sandbox-operator:dev',
});

// A pool of three warm Python sandboxes in the namespace `agents`.
const agents = new Chart(app, 'agents', { namespace: 'agents', disableResourceNameHashes: true });
const template = new SandboxTemplate(agents, 'python', {
  metadata: { name: 'python' },
  containers: [{
    image: 'python:3.12-slim',
    // The image runs as root; sandboxes refuse root, so pick a user.
    security: { runAsUser: 1000, runAsGroup: 1000 },
  }],
  // The agent-sandbox runtime (commands and files on port 8888), injected into the stock image.
  runtime: {},
});
new SandboxWarmPool(agents, 'pool', { metadata: { name: 'python' }, template, replicas: 3 });

// The agent's ServiceAccount may claim sandboxes and use the ones it claimed.
new SandboxAccess(agents, 'agent', { serviceAccounts: [ObjectRef.fromName('agent')] });

app.synth();
