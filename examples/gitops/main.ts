// A GitOps layout: one chart (one file) for the platform and one per tenant namespace, each
// ready for an Argo CD Application or a Flux Kustomization. Tenants own their NetworkPolicies
// in Git (Unmanaged), so reviews see every rule; DNS goes to the cluster resolver explicitly.
import { ApiObject, App, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import {
  AgentSandboxSystem, DnsAccess, NetworkPolicyManagement, SandboxNetworkPort, SandboxPeer,
  SandboxRuntimeClass, SandboxTemplate, SandboxWarmPool,
} from '../../src';

class Tenant extends Chart {
  constructor(scope: Construct, id: string, replicas: number) {
    super(scope, id, { namespace: id, disableResourceNameHashes: true });
    // The Chart's namespace lands on this Namespace too (cdk8s gives every object the chart's default);
    // the library drops it from cluster-scoped kinds at synth and writes the Namespace before everything
    // that lives in it, so neither needs doing by hand here.
    new ApiObject(this, 'namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: id } });
    const template = new SandboxTemplate(this, 'template', {
      metadata: { name: 'python' },
      runtimeClass: SandboxRuntimeClass.fromName('gvisor'),
      containers: [{
        image: 'python:3.12-slim',
        command: ['sleep', 'infinity'],
        resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
      }],
      network: {
        management: NetworkPolicyManagement.UNMANAGED,
        dns: DnsAccess.clusterDns(),
        egress: [
          { peers: [SandboxPeer.publicInternet()], ports: [SandboxNetworkPort.tcp(443)] },
        ],
      },
    });
    new SandboxWarmPool(this, 'pool', { metadata: { name: 'python' }, template, replicas });
  }
}

export function build(app: App): void {
  const platform = new Chart(app, 'platform', { disableResourceNameHashes: true });
  new AgentSandboxSystem(platform, 'system', { router: {}, flowControl: {} });
  SandboxRuntimeClass.gvisor(platform, 'gvisor');

  new Tenant(app, 'team-search', 20);
  new Tenant(app, 'team-research', 5);
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
