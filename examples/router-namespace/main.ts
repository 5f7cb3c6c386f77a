// The router runs in its own namespace ("edge"), deployed outside the install bundle, so the
// operator's default policy does not know about it (it admits the router the bundle deploys, or the
// one --router-namespace names). The sandbox namespace adds one policy allowing the router from
// "edge". NetworkPolicies add up: nothing else opens.
import { App, Chart } from 'cdk8s';
import { AllowRouterIngress, SandboxNetworkPort, SandboxTemplate, SandboxWarmPool } from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'router-namespace', { namespace: 'agents', disableResourceNameHashes: true });

  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'shell' },
    containers: [{ image: 'debian:bookworm-slim', command: ['sleep', 'infinity'], ports: [{ number: 8888, name: 'runtime' }] }],
  });
  new SandboxWarmPool(chart, 'pool', { metadata: { name: 'shell' }, template, replicas: 2 });

  new AllowRouterIngress(chart, 'allow-edge-router', {
    metadata: { name: 'allow-router-from-edge' },
    routerNamespace: 'edge',
    templateName: template.name,
    ports: [SandboxNetworkPort.tcp(8888)],
  });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
