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

  test.each([
    [{ 'example.com/fpga': '500m' }, /overhead\["example.com\/fpga"\]: "500m" must be a whole number/],
    [{ 'hugepages-2Mi': '3Mi', 'memory': '1Gi' }, /overhead\["hugepages-2Mi"\]: "3Mi" is not a whole number of 2Mi pages/],
    [{ 'hugepages-2Mi': '4Mi' }, /overhead: huge pages need a cpu or memory request or limit as well/],
    [{ memory: '-1Gi' }, /overhead\["memory"\]: .*negative|overhead\["memory"\]: .*0 or more/],
  ])('overhead is checked as the API server checks a container\'s limits: %j', (overhead, error) => {
    expect(() => new SandboxRuntimeClass(Testing.chart(), 'bad', { handler: 'kata', overhead })).toThrow(error);
  });

  test('valid neighbours: whole units, whole pages next to memory', () => {
    const chart = Testing.chart();
    new SandboxRuntimeClass(chart, 'ok', { handler: 'kata', overhead: { 'cpu': '250m', 'memory': '160Mi', 'hugepages-2Mi': '4Mi', 'example.com/fpga': '1' } });
    expect(Testing.synth(chart)[0].overhead.podFixed).toEqual({ 'cpu': '250m', 'memory': '160Mi', 'hugepages-2Mi': '4Mi', 'example.com/fpga': '1' });
  });
});
