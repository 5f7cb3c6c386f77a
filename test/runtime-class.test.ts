import { Testing } from 'cdk8s';
import { KataHypervisor, SandboxRuntimeClass } from '../src/runtime-class';

describe('SandboxRuntimeClass', () => {
  test('gVisor preset', () => {
    const chart = Testing.chart();
    const rc = SandboxRuntimeClass.gvisor(chart, 'gvisor', {
      nodeSelector: { 'sandbox.gke.io/runtime': 'gvisor' },
      tolerations: [{ key: 'sandbox.gke.io/runtime', value: 'gvisor', effect: 'NoSchedule' }],
    });
    expect(rc.runtimeClassName).toBe('gvisor');
    const [obj] = Testing.synth(chart);
    expect(obj).toMatchSnapshot();
    expect(obj.handler).toBe('runsc');
    expect(obj.scheduling.tolerations[0].operator).toBe('Equal');
  });

  test.each([
    [KataHypervisor.QEMU, '160Mi'],
    [KataHypervisor.FIRECRACKER, '130Mi'],
    [KataHypervisor.CLOUD_HYPERVISOR, '130Mi'],
  ])('Kata %s preset with pod overhead', (hypervisor, memory) => {
    const chart = Testing.chart();
    SandboxRuntimeClass.kata(chart, 'kata', hypervisor);
    const [obj] = Testing.synth(chart);
    expect(obj.metadata.name).toBe(hypervisor);
    expect(obj.handler).toBe(hypervisor);
    expect(obj.overhead.podFixed).toEqual({ cpu: '250m', memory });
    expect(obj).toMatchSnapshot();
  });

  test('fromName refers to a class the cluster has', () => {
    expect(SandboxRuntimeClass.fromName('runsc-gke').runtimeClassName).toBe('runsc-gke');
  });

  test('bad handler and overhead are rejected with the field', () => {
    const chart = Testing.chart();
    expect(() => new SandboxRuntimeClass(chart, 'bad', { handler: 'Run SC', overhead: { memory: 'much' } }))
      .toThrow(/SandboxRuntimeClass test\/bad: invalid props:[^]*- handler: "Run SC" must be a DNS-1123 label[^]*overhead\["memory"\]: "much" is not a Kubernetes quantity/);
  });
});
