// A warm pool sized by a HorizontalPodAutoscaler through the pool's scale subresource:
// one warm sandbox per 0.5 claims/s of demand (an external metric from your adapter),
// between 5 and 200 sandboxes.
//
// Adding `scaleToZeroAfter` (spec.scaleToZeroAfterSeconds) works alongside the HPA: the HPA
// keeps owning spec.replicas, which the operator never writes. After that long without a claim
// the operator deletes the unclaimed sandboxes and reports status.replicas 0 and ScaledToZero=True
// while spec.replicas stays where the HPA put it (at least minReplicas: the claim rate is 0, so
// it asks for the minimum). The next claim starts cold, and the pool refills to the HPA's count.
import { App, Chart } from 'cdk8s';
import { SandboxTemplate, SandboxWarmPool, WarmPoolScalingMetric } from '../../src';

export function build(app: App): void {
  const chart = new Chart(app, 'hpa-pool', { namespace: 'agents', disableResourceNameHashes: true });

  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'browser' },
    containers: [{
      image: 'mcr.microsoft.com/playwright:v1.49.0-noble',
      command: ['sleep', 'infinity'],
      resources: { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } },
    }],
  });

  new SandboxWarmPool(chart, 'pool', {
    metadata: { name: 'browser' },
    template,
    autoscaling: {
      minReplicas: 5,
      maxReplicas: 200,
      metrics: [WarmPoolScalingMetric.external('agent_sandbox_claims_per_second', '500m', { warmpool: 'browser' })],
    },
  });
}

if (require.main === module) {
  const app = new App();
  build(app);
  app.synth();
}
