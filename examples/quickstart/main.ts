// Quickstart: a Python sandbox template, a pool of three warm sandboxes, and one claim. The stock
// python:3.12-slim image gets the agent-sandbox runtime injected (an init container copies it in),
// so agents reach an API on port 8888 (/execute, /upload, /download, ...) through the router. Each
// sandbox's workspace (/workspace, the runtime's working directory) is a 1Gi PersistentVolumeClaim of
// the cluster's default StorageClass, made per Sandbox from the claim template: files there survive
// suspend and resume (the Pod is deleted and made again); files elsewhere in the container do not.
// A claimed sandbox nobody has used for 10 minutes is suspended, and the next request through the
// router resumes it (the request waits until it is Ready); unclaimed warm ones are never suspended.
// Copy this file into a cdk8s app and import from 'cdk8s-agent-sandbox' instead of '../../src'.
import { App, Chart, Duration } from 'cdk8s';
import { SandboxClaim, SandboxTemplate, SandboxWarmPool } from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'quickstart', { namespace: 'agents', disableResourceNameHashes: true });

  const template = new SandboxTemplate(chart, 'python', {
    metadata: { name: 'python' },
    containers: [{
      image: 'python:3.12-slim',
      // The image runs as root; the Pod refuses root, so pick a user (the runtime refuses root too).
      security: { runAsUser: 1000, runAsGroup: 1000 },
      resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
    }],
    volumeClaimTemplates: [{ name: 'workspace', storage: '1Gi' }],
    runtime: { filesPort: 8080, workspaceVolume: 'workspace' },
    // The volume's files belong to group 1000, so the non-root user can write them (most provisioners
    // make root-owned volumes).
    security: { fsGroup: 1000 },
    // An idle agent costs its Pod's requests; suspended, only the workspace volume is kept.
    idlePolicy: { suspendAfter: Duration.minutes(10) },
  });

  const pool = new SandboxWarmPool(chart, 'pool', { metadata: { name: 'python' }, template, replicas: 3 });

  new SandboxClaim(chart, 'claim', { metadata: { name: 'agent-task-1' }, warmPool: pool });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
