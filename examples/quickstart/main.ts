// Quickstart: a Python sandbox template, a pool of three warm sandboxes, and one claim.
// Copy this file into a cdk8s app and import from 'cdk8s-agent-sandbox' instead of '../../src'.
import { App, Chart } from 'cdk8s';
import { SandboxClaim, SandboxTemplate, SandboxWarmPool } from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'quickstart', { namespace: 'agents', disableResourceNameHashes: true });

  const template = new SandboxTemplate(chart, 'python', {
    metadata: { name: 'python' },
    containers: [{
      image: 'python:3.12-slim',
      command: ['python', '-m', 'http.server', '8888'],
      ports: [{ number: 8888, name: 'http' }],
      resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
    }],
  });

  const pool = new SandboxWarmPool(chart, 'pool', { metadata: { name: 'python' }, template, replicas: 3 });

  new SandboxClaim(chart, 'claim', { metadata: { name: 'agent-task-1' }, warmPool: pool });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
