import { Testing } from 'cdk8s';
import {
  checkContainerResourceName, checkNonNegativeQuantity, checkPositiveQuantity, checkQuantity, compareQuantities, parseQuantity,
} from '../src/api/validation';
import { ContainerResources } from '../src/container';
import { AgentSandboxSystem } from '../src/install';
import { SandboxRuntimeClass } from '../src/runtime-class';
import { Sandbox } from '../src/sandbox';
import { SandboxTemplate } from '../src/template';
import { SandboxVolume } from '../src/volume';

const NANO = BigInt(1);
const UNIT = BigInt(10) ** BigInt(9);
const CAP = (BigInt(2) ** BigInt(63) - BigInt(1)) * UNIT;

describe('parseQuantity: the value the API server holds, in nano-units', () => {
  test.each([
    ['1', UNIT],
    ['0', BigInt(0)],
    ['-0', BigInt(0)],
    ['+2', BigInt(2) * UNIT],
    ['500m', UNIT / BigInt(2)],
    ['0.5', UNIT / BigInt(2)],
    ['.5', UNIT / BigInt(2)],
    ['1.', UNIT],
    ['250u', BigInt(250000)],
    ['7n', BigInt(7)],
    ['1k', BigInt(1000) * UNIT],
    ['1Ki', BigInt(1024) * UNIT],
    ['1.5Mi', BigInt(1572864) * UNIT],
    ['2Gi', BigInt(2) * BigInt(1024) ** BigInt(3) * UNIT],
    ['1Ti', BigInt(1024) ** BigInt(4) * UNIT],
    ['1Pi', BigInt(1024) ** BigInt(5) * UNIT],
    ['1Ei', BigInt(1024) ** BigInt(6) * UNIT],
    ['1M', BigInt(10) ** BigInt(6) * UNIT],
    ['1G', BigInt(10) ** BigInt(9) * UNIT],
    ['1T', BigInt(10) ** BigInt(12) * UNIT],
    ['1P', BigInt(10) ** BigInt(15) * UNIT],
    ['1E', BigInt(10) ** BigInt(18) * UNIT],
    ['1e3', BigInt(1000) * UNIT],
    ['1E3', BigInt(1000) * UNIT],
    ['1.5e+2', BigInt(150) * UNIT],
    ['25e-3', BigInt(25) * BigInt(10) ** BigInt(6)],
    ['-1Gi', -(BigInt(1024) ** BigInt(3)) * UNIT],
    // Rounded up to a whole nano-unit, as resource.ParseQuantity does ...
    ['1e-10', NANO],
    ['1.5n', BigInt(2)],
    ['0.0000000001', NANO],
    ['-1e-12', -NANO],
    // ... and capped at 2^63-1 units.
    ['1e40', CAP],
    ['10E', CAP],
    ['9E', BigInt(9) * BigInt(10) ** BigInt(18) * UNIT], // just under the cap
    ['1e2147483647', CAP],
  ])('%s', (text, nanos) => {
    expect(parseQuantity(text)).toBe(nanos);
    expect(checkQuantity(text)).toBeUndefined();
  });

  test.each(['', 'abc', '1Gb', '1 Gi', '1ki', '1e', '1e1.5', '--1', '1.2.3', '.', 'Gi', '1Mi5', '0x10', ' 1'])('%j is not a quantity', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
    expect(checkQuantity(text)).toMatch(/is not a Kubernetes quantity; use a form like "500m", "2" or "1Gi"/);
  });

  test('compareQuantities compares values, not spellings', () => {
    expect(compareQuantities('1', '1000m')).toBe(0);
    expect(compareQuantities('1Gi', '1073741824')).toBe(0);
    expect(compareQuantities('1G', '1Gi')).toBe(-1);
    expect(compareQuantities('1.1', '1100m')).toBe(0); // exact: 1.1 is not a float here
    expect(compareQuantities('1100m', '1.0999')).toBe(1);
    expect(compareQuantities('2', '1e0')).toBe(1);
    expect(compareQuantities('-1', '0')).toBe(-1);
    expect(() => compareQuantities('1', 'x')).toThrow(/"x" is not a quantity/);
  });

  test('a sign is part of the form; amounts of a resource must not be negative', () => {
    expect(checkQuantity('-1Gi')).toBeUndefined();
    expect(checkNonNegativeQuantity('-1Gi')).toBe('"-1Gi" is negative; a resource amount must be 0 or more, such as "1Gi"');
    expect(checkNonNegativeQuantity('0')).toBeUndefined();
    expect(checkNonNegativeQuantity('-0')).toBeUndefined();
    expect(checkNonNegativeQuantity('+1Gi')).toBeUndefined();
    expect(checkPositiveQuantity('0')).toMatch(/"0" must be more than 0/);
    expect(checkPositiveQuantity('1n')).toBeUndefined();
    expect(checkNonNegativeQuantity('x')).toMatch(/is not a Kubernetes quantity/);
  });
});

describe('checkContainerResourceName: what the API server takes in a container\'s resources', () => {
  test.each([
    'cpu', 'memory', 'ephemeral-storage', 'hugepages-2Mi', 'hugepages-1Gi', 'nvidia.com/gpu', 'example.com/foo',
    'amd.com/gpu', 'kubernetes.io/foo', 'squat.ai/fuse',
  ])('%s is accepted', (name) => expect(checkContainerResourceName(name)).toBeUndefined());

  test.each([
    ['gpu', /"gpu" is not a container resource: an extended resource must be fully qualified with a domain, such as "example.com\/gpu"/],
    ['storage', /"storage" is not a container resource/],
    ['pods', /"pods" is not a container resource/],
    ['requests.cpu', /"requests.cpu" is not a container resource/],
    ['limits.memory', /"limits.memory" is not a container resource/],
    ['requests.nvidia.com/gpu', /does not follow the extended resource name standard; use a domain and a name such as "nvidia.com\/gpu" \(no "requests." prefix\)/],
    ['hugepages-', /is not a resource name/],
    ['hugepages-1x', /needs a page size after "hugepages-", such as hugepages-2Mi/],
    ['hugepages-big', /needs a page size/],
    ['hugepages-0', /needs a page size/],
    ['nvidia.com/', /is not a resource name/],
    ['Bad Name', /is not a resource name/],
  ])('%s is refused', (name, message) => expect(checkContainerResourceName(name)).toMatch(message));
});

describe('container resources at synth', () => {
  const synth = (resources: ContainerResources) => () => {
    const chart = Testing.chart();
    new SandboxTemplate(chart, 'tpl', { metadata: { name: 'python' }, containers: [{ image: 'python:3.12-slim', resources }] });
    return Testing.synth(chart);
  };
  const field = (kind: string, name: string) => `containers\\[0\\]\\.resources\\.${kind}\\["${name.replace('.', '\\.').replace('/', '\\/')}"\\]`;

  test('valid neighbours synthesize as given', () => {
    const resources = {
      requests: { 'cpu': '500m', 'memory': '1Gi', 'ephemeral-storage': '2Gi', 'nvidia.com/gpu': '1', 'hugepages-2Mi': '64Mi' },
      limits: { 'cpu': '1', 'memory': '1Gi', 'nvidia.com/gpu': '1', 'hugepages-2Mi': '64Mi' },
    };
    expect(synth(resources)()[0].spec.podTemplate.spec.containers[0].resources).toEqual(resources);
    expect(synth({ requests: { cpu: '1' }, limits: { cpu: '1000m' } })).not.toThrow(); // equal, spelled differently
    expect(synth({ requests: { memory: '0' } })).not.toThrow();
  });

  test('resources of the wrong shape (jsii callers can pass anything)', () => {
    expect(synth('big' as any)).toThrow(/containers\[0\]\.resources: must be an object with requests and\/or limits, each a map from resource name to quantity/);
    expect(synth({ limits: ['1'] as any })).toThrow(/containers\[0\]\.resources\.limits: must be a map of strings/);
    expect(synth({ limits: { cpu: 1 as any } })).toThrow(/the value of "cpu" must be a string, got 1; quote numbers and booleans/);
  });

  test('a negative limit', () => {
    expect(synth({ limits: { memory: '-1Gi' } })).toThrow(new RegExp(`${field('limits', 'memory')}: "-1Gi" is negative; a resource amount must be 0 or more, such as "1Gi"`));
    expect(synth({ requests: { cpu: '-100m' } })).toThrow(new RegExp(`${field('requests', 'cpu')}: "-100m" is negative`));
  });

  test('a request above its limit, compared as quantities', () => {
    expect(synth({ requests: { cpu: '2' }, limits: { cpu: '1' } }))
      .toThrow(new RegExp(`${field('requests', 'cpu')}: "2" is more than the cpu limit \\("1"\\); lower the request or raise the limit`));
    expect(synth({ requests: { memory: '1.5Gi' }, limits: { memory: '1536M' } })).toThrow(/"1.5Gi" is more than the memory limit \("1536M"\)/);
    expect(synth({ requests: { memory: '1536Mi' }, limits: { memory: '1.5Gi' } })).not.toThrow();
    expect(synth({ requests: { cpu: '1001m' }, limits: { cpu: '1' } })).toThrow(/"1001m" is more than the cpu limit/);
    expect(synth({ requests: { cpu: '1e3m' }, limits: { cpu: '1' } })).toThrow(/"1e3m" is not a Kubernetes quantity/);
  });

  test('an extended resource that is not fully qualified', () => {
    expect(synth({ limits: { gpu: '1' } }))
      .toThrow(new RegExp(`${field('limits', 'gpu')}: "gpu" is not a container resource: an extended resource must be fully qualified with a domain, such as "example.com/gpu"`));
    expect(synth({ requests: { 'requests.cpu': '1' } })).toThrow(/"requests.cpu" is not a container resource/);
    expect(synth({ limits: { 'nvidia.com/gpu': '1' } })).not.toThrow();
  });

  test('extended resources and huge pages: whole units, requests equal to limits, a limit given', () => {
    expect(synth({ limits: { 'nvidia.com/gpu': '0.5' } })).toThrow(/"0.5" must be a whole number: an extended resource is counted in whole units/);
    expect(synth({ requests: { 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '2' } }))
      .toThrow(new RegExp(`${field('requests', 'nvidia.com/gpu')}: "1" must equal the nvidia.com/gpu limit \\("2"\\)`));
    expect(synth({ requests: { 'nvidia.com/gpu': '1' } }))
      .toThrow(new RegExp(`${field('limits', 'nvidia.com/gpu')}: is required when nvidia.com/gpu is requested: give a limit equal to the request \\("1"\\)`));
    expect(synth({ limits: { 'hugepages-2Mi': '3Mi', 'memory': '1Gi' } })).toThrow(/"3Mi" is not a whole number of 2Mi pages/);
    expect(synth({ limits: { 'hugepages-2Mi': '4Mi' } })).toThrow(/containers\[0\]\.resources: huge pages need a cpu or memory request or limit as well/);
    expect(synth({ limits: { 'hugepages-2Mi': '4Mi', 'memory': '1Gi' } })).not.toThrow();
  });
});

describe('the same rules wherever the library takes resource amounts', () => {
  const run = (build: (chart: any) => void) => () => {
    const chart = Testing.chart();
    build(chart);
    return Testing.synth(chart);
  };

  test('the operator\'s and the router\'s resources', () => {
    expect(run((c) => new AgentSandboxSystem(c, 'system', { resources: { limits: { memory: '-1Gi' } } })))
      .toThrow(/resources\.limits\["memory"\]: "-1Gi" is negative/);
    expect(run((c) => new AgentSandboxSystem(c, 'system', { router: { resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } } })))
      .toThrow(/router\.resources\.requests\["cpu"\]: "2" is more than the cpu limit \("1"\)/);
    expect(run((c) => new AgentSandboxSystem(c, 'system', { resources: { limits: { gpu: '1' } } }))).toThrow(/"gpu" is not a container resource/);
    expect(run((c) => new AgentSandboxSystem(c, 'system', { resources: { requests: { cpu: '1' }, limits: { cpu: '1', memory: '1Gi' } } }))).not.toThrow();
  });

  test('a RuntimeClass overhead', () => {
    expect(run((c) => new SandboxRuntimeClass(c, 'rc', { handler: 'kata', overhead: { memory: '-160Mi' } }))).toThrow(/overhead\["memory"\]: "-160Mi" is negative/);
    expect(run((c) => new SandboxRuntimeClass(c, 'rc', { handler: 'kata', overhead: { gpu: '1' } }))).toThrow(/overhead\["gpu"\]: "gpu" is not a container resource/);
    expect(run((c) => new SandboxRuntimeClass(c, 'rc', { handler: 'kata', overhead: { cpu: '250m', memory: '160Mi' } }))).not.toThrow();
  });

  test('volume sizes: an emptyDir limit of 0 or more, a claim of more than 0', () => {
    const sandbox = (props: object) => run((c) => new Sandbox(c, 'sb', { containers: [{ image: 'python:3.12-slim' }], ...props }));
    expect(sandbox({ volumes: [SandboxVolume.emptyDir('scratch', { sizeLimit: '-1Gi' })] })).toThrow(/volumes\[0\]\.sizeLimit: "-1Gi" is negative/);
    expect(sandbox({ volumes: [SandboxVolume.emptyDir('scratch', { sizeLimit: '1Gi' })] })).not.toThrow();
    expect(sandbox({ volumeClaimTemplates: [{ name: 'data', storage: '0' }] })).toThrow(/volumeClaimTemplates\[0\]\.storage: "0" must be more than 0/);
    expect(sandbox({ volumeClaimTemplates: [{ name: 'data', storage: '-5Gi' }] })).toThrow(/volumeClaimTemplates\[0\]\.storage: "-5Gi" must be more than 0/);
    expect(sandbox({ volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }] })).not.toThrow();
  });
});
