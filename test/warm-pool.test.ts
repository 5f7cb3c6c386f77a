import { Chart, Testing } from 'cdk8s';
import { WarmPoolUpdateStrategyType } from '../src/api/enums';
import { SandboxTemplate } from '../src/template';
import { SandboxWarmPool, WarmPoolScalingMetric } from '../src/warm-pool';

const containers = [{ image: 'python:3.12-slim' }];

describe('SandboxWarmPool', () => {
  test('references its template by name and orders after it', () => {
    const chart = Testing.chart();
    const template = new SandboxTemplate(chart, 'tpl', { metadata: { name: 'python' }, containers });
    new SandboxWarmPool(chart, 'pool', { metadata: { name: 'python-pool' }, template, replicas: 5, updateStrategy: WarmPoolUpdateStrategyType.RECREATE });
    const objs = Testing.synth(chart);
    expect(objs.map((o) => o.kind)).toEqual(['SandboxTemplate', 'SandboxWarmPool']);
    expect(objs[1].spec).toEqual({ replicas: 5, sandboxTemplateRef: { name: 'python' }, updateStrategy: { type: 'Recreate' } });
    expect(objs[1]).toMatchSnapshot();
  });

  test('replicas 0 makes a cold-only pool; unset leaves the API default', () => {
    const chart = Testing.chart();
    const template = SandboxTemplate.fromName('python');
    new SandboxWarmPool(chart, 'cold', { template, replicas: 0 });
    new SandboxWarmPool(chart, 'default', { template });
    const [cold, dflt] = Testing.synth(chart);
    expect(cold.spec.replicas).toBe(0);
    expect(dflt.spec).not.toHaveProperty('replicas');
  });

  test('an HPA drives the scale subresource and the pool leaves replicas to it', () => {
    const chart = Testing.chart();
    new SandboxWarmPool(chart, 'pool', {
      metadata: { name: 'agents' },
      template: SandboxTemplate.fromName('python'),
      autoscaling: {
        minReplicas: 5,
        maxReplicas: 200,
        metrics: [
          WarmPoolScalingMetric.external('sandbox_claims_per_second', '500m', { pool: 'agents' }),
          WarmPoolScalingMetric.resourceUtilization('cpu', 60),
          WarmPoolScalingMetric.pods('idle_sessions', '2'),
        ],
      },
    });
    const [pool, hpa] = Testing.synth(chart);
    expect(pool.spec).not.toHaveProperty('replicas');
    expect(hpa.kind).toBe('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', name: 'agents' });
    expect(hpa).toMatchSnapshot();
  });

  describe('validation', () => {
    const build = (props: any) => () => {
      const chart = Testing.chart();
      new SandboxWarmPool(chart, 'bad', { template: SandboxTemplate.fromName('t'), ...props });
      Testing.synth(chart);
    };
    test('negative or fractional replica count', () => {
      expect(build({ replicas: -1 })).toThrow(/\[test\/bad\] replicas: -1 is not a valid count; use a whole number of 0 or more/);
      expect(build({ replicas: 1.5 })).toThrow(/replicas: 1.5 is not a valid count/);
    });
    test('autoscaling bounds and metrics', () => {
      expect(build({ autoscaling: { minReplicas: 0, maxReplicas: 5, metrics: [WarmPoolScalingMetric.resourceUtilization('cpu', 50)] } }))
        .toThrow(/autoscaling.minReplicas: 0 must be a whole number of at least 1/);
      expect(build({ autoscaling: { minReplicas: 5, maxReplicas: 2, metrics: [WarmPoolScalingMetric.resourceUtilization('cpu', 50)] } }))
        .toThrow(/autoscaling.maxReplicas: 2 must be a whole number no smaller than autoscaling\.minReplicas \(5\)/);
      expect(build({ autoscaling: { minReplicas: 1, maxReplicas: 2, metrics: [] } })).toThrow(/autoscaling.metrics: give at least one scaling metric \(a WarmPoolScalingMetric\)/);
      expect(build({ autoscaling: { minReplicas: 1, maxReplicas: 2, metrics: [WarmPoolScalingMetric.resourceUtilization('cpu', 0)] } }))
        .toThrow(/autoscaling.metrics\[0\]: utilization 0 must be a whole percentage/);
      expect(build({ autoscaling: { minReplicas: 1, maxReplicas: 2, metrics: [WarmPoolScalingMetric.external('x', 'many')] } }))
        .toThrow(/autoscaling.metrics\[0\]: target average value "many" is not a Kubernetes quantity/);
    });
    test('a target average value of 0 or less (the HPA refuses it); a positive one passes', () => {
      const pool = (averageValue: string) => build({ autoscaling: { minReplicas: 1, maxReplicas: 2, metrics: [WarmPoolScalingMetric.external('claims', averageValue)] } });
      expect(pool('-500m')).toThrow(/autoscaling.metrics\[0\]: target average value "-500m" must be more than 0/);
      expect(pool('0')).toThrow(/autoscaling.metrics\[0\]: target average value "0" must be more than 0/);
      expect(pool('500m')).not.toThrow();
      expect(build({ autoscaling: { minReplicas: 1, maxReplicas: 2, metrics: [WarmPoolScalingMetric.pods('load', '-1')] } }))
        .toThrow(/target average value "-1" must be more than 0/);
    });
    test('replicas together with autoscaling: the HPA owns the count', () => {
      const autoscaling = { minReplicas: 1, maxReplicas: 4, metrics: [WarmPoolScalingMetric.resourceUtilization('cpu', 50)] };
      expect(build({ replicas: 3, autoscaling }))
        .toThrow(/\[test\/bad\] replicas: 3 is set together with autoscaling: the HorizontalPodAutoscaler owns the replica count; remove replicas and bound the pool with autoscaling.minReplicas and autoscaling.maxReplicas/);
      expect(build({ replicas: 0, autoscaling })).toThrow(/replicas: 0 is set together with autoscaling/);
      // Controls: either one alone is fine.
      expect(build({ autoscaling })).not.toThrow();
      expect(build({ replicas: 3 })).not.toThrow();
    });
    test('a template in another namespace', () => {
      const app = Testing.app();
      const a = new Chart(app, 'a', { namespace: 'team-a' });
      const b = new Chart(app, 'b', { namespace: 'team-b' });
      const template = new SandboxTemplate(a, 'tpl', { metadata: { name: 'python' }, containers });
      new SandboxWarmPool(b, 'pool', { template });
      expect(() => Testing.synth(b)).toThrow(/template: template "python" is in namespace "team-a" but the pool is in "team-b"; a pool can only use a template in its own namespace/);
    });
  });
});
