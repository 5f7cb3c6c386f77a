import { Duration, Testing } from 'cdk8s';
import { SandboxClaim } from '../src/claim';
import { IdlePolicy } from '../src/idle-policy';
import { Sandbox } from '../src/sandbox';
import { SandboxTemplate } from '../src/template';
import { SandboxWarmPool, WarmPoolScalingMetric } from '../src/warm-pool';

const containers = [{ image: 'python:3.12-slim' }];

/** Durations the int32 `...Seconds` fields (minimum 1) cannot hold, and what each field then says. */
const OUT_OF_RANGE: Array<[string, Duration, string]> = [
  ['under a second', Duration.millis(500), 'must be whole seconds of at least 1s (it is 500ms); use Duration.seconds(1) or more'],
  ['zero', Duration.seconds(0), 'must be whole seconds of at least 1s (it is 0ms); use Duration.seconds(1) or more'],
  ['not whole seconds (rounded in the fix)', Duration.millis(90_500), 'must be whole seconds of at least 1s (it is 90500ms); use Duration.seconds(91) or more'],
  ['past int32', Duration.seconds(2147483648), 'must be whole seconds of at most 2147483647s, the largest the field holds (it is 2147483648s); use a shorter Duration'],
];

/** Each construct that takes an idlePolicy, built with `idlePolicy` and synthesized; returns the object of its kind. */
const HOLDERS: Array<[string, (idlePolicy: IdlePolicy | undefined) => any]> = [
  ['Sandbox', (idlePolicy) => {
    const chart = Testing.chart();
    new Sandbox(chart, 'bad', { containers, idlePolicy });
    return Testing.synth(chart).find((o) => o.kind === 'Sandbox');
  }],
  ['SandboxTemplate', (idlePolicy) => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'bad', { containers, idlePolicy });
    return Testing.synth(chart).find((o) => o.kind === 'SandboxTemplate');
  }],
  ['SandboxClaim', (idlePolicy) => {
    const chart = Testing.chart();
    new SandboxClaim(chart, 'bad', { warmPool: SandboxWarmPool.fromName('pool'), idlePolicy });
    return Testing.synth(chart).find((o) => o.kind === 'SandboxClaim');
  }],
];

describe.each(HOLDERS)('%s idlePolicy', (_kind, synth) => {
  test('renders suspendAfter in seconds, and resumeOnRequest when given', () => {
    expect(synth({ suspendAfter: Duration.minutes(10), resumeOnRequest: false }).spec.idlePolicy)
      .toEqual({ suspendAfterSeconds: 600, resumeOnRequest: false });
  });

  test('leaves resumeOnRequest to the CRD default (true), and the field out when unset', () => {
    expect(synth({ suspendAfter: Duration.seconds(1) }).spec.idlePolicy).toEqual({ suspendAfterSeconds: 1 });
    expect(synth(undefined).spec).not.toHaveProperty('idlePolicy');
  });

  test('the largest whole-second period the int32 field holds passes the schema check', () => {
    expect(synth({ suspendAfter: Duration.seconds(2147483647) }).spec.idlePolicy).toEqual({ suspendAfterSeconds: 2147483647 });
  });

  test.each(OUT_OF_RANGE)('%s: the field and the fix', (_what, suspendAfter, message) => {
    expect(() => synth({ suspendAfter })).toThrow(`[test/bad] idlePolicy.suspendAfter: ${message}`);
  });

  test('values of the wrong type, as jsii callers can pass', () => {
    expect(() => synth({} as any)).toThrow('idlePolicy.suspendAfter: is required; give how long the Sandbox may sit unused, such as Duration.minutes(10)');
    expect(() => synth({ suspendAfter: 600 } as any)).toThrow('idlePolicy.suspendAfter: must be a Duration, got number 600; use a Duration such as Duration.seconds(30)');
    expect(() => synth({ suspendAfter: Duration.minutes(1), resumeOnRequest: 'yes' } as any))
      .toThrow('idlePolicy.resumeOnRequest: must be true or false, got "yes"');
    expect(() => synth('10m' as any)).toThrow('idlePolicy: must be an IdlePolicy, got "10m"; give an IdlePolicy with suspendAfter set, such as Duration.minutes(10), or leave it out');
  });
});

describe('SandboxWarmPool scaleToZeroAfter', () => {
  const synth = (props: any) => {
    const chart = Testing.chart();
    new SandboxWarmPool(chart, 'bad', { template: SandboxTemplate.fromName('python'), replicas: 3, ...props });
    return Testing.synth(chart)[0];
  };

  test('renders in seconds beside replicas, which stays as set', () => {
    expect(synth({ scaleToZeroAfter: Duration.hours(1) }).spec)
      .toEqual({ replicas: 3, sandboxTemplateRef: { name: 'python' }, scaleToZeroAfterSeconds: 3600 });
    expect(synth({}).spec).not.toHaveProperty('scaleToZeroAfterSeconds');
  });

  test('with an HPA, the pool still leaves replicas to it', () => {
    const chart = Testing.chart();
    new SandboxWarmPool(chart, 'pool', {
      template: SandboxTemplate.fromName('python'),
      scaleToZeroAfter: Duration.minutes(15),
      autoscaling: { minReplicas: 1, maxReplicas: 10, metrics: [WarmPoolScalingMetric.resourceUtilization('cpu', 60)] },
    });
    const [pool, hpa] = Testing.synth(chart);
    expect(pool.spec).toEqual({ sandboxTemplateRef: { name: 'python' }, scaleToZeroAfterSeconds: 900 });
    expect(hpa.spec).toMatchObject({ minReplicas: 1, maxReplicas: 10 });
  });

  test.each(OUT_OF_RANGE)('%s: the field and the fix', (_what, scaleToZeroAfter, message) => {
    expect(() => synth({ scaleToZeroAfter })).toThrow(`[test/bad] scaleToZeroAfter: ${message}`);
  });

  test('not a Duration, as jsii callers can pass', () => {
    expect(() => synth({ scaleToZeroAfter: '1h' })).toThrow('scaleToZeroAfter: must be a Duration, got "1h"; use a Duration such as Duration.seconds(30)');
  });
});
