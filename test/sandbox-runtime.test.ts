import { App, Chart, Duration, Testing } from 'cdk8s';
import { AgentSandboxExtensions, AgentSandboxSystem, SandboxVolume } from '../src';
import { ImagePullPolicy, SandboxContainerProps } from '../src/container';
import { SandboxRuntimeOptions } from '../src/sandbox-runtime';
import { SandboxTemplate, SandboxTemplateProps } from '../src/template';

const python: SandboxContainerProps = { image: 'python:3.12-slim', security: { runAsUser: 1000 } };

function podSpec(runtime: SandboxRuntimeOptions, props: Partial<SandboxTemplateProps> = {}): any {
  const chart = Testing.chart();
  new SandboxTemplate(chart, 'tpl', { metadata: { name: 'python' }, containers: [python], ...props, runtime });
  return Testing.synth(chart).find((o) => o.kind === 'SandboxTemplate').spec.podTemplate.spec;
}

function errorsOf(runtime: SandboxRuntimeOptions, props: Partial<SandboxTemplateProps> = {}): string {
  try {
    podSpec(runtime, props);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('SandboxTemplate runtime', () => {
  test('defaults: init container from the operator image, the fixed command layout, port 8888, probe, workspace emptyDir', () => {
    const spec = podSpec({});
    expect(spec).toMatchSnapshot();
    const [sandbox] = spec.containers;
    expect(sandbox.command).toEqual([
      '/opt/agent-sandbox/bin/node', '/opt/agent-sandbox/bin/agent-sandbox-operator.mjs', 'runtime', '--port=8888', '--workspace=/workspace',
    ]);
    expect(sandbox.ports).toEqual([{ name: 'runtime', containerPort: 8888, protocol: 'TCP' }]);
    expect(sandbox.readinessProbe.httpGet).toEqual({ path: '/', port: 8888 });
    expect(sandbox.volumeMounts).toEqual([
      { name: 'workspace', mountPath: '/workspace' },
      { name: 'agent-sandbox-runtime', mountPath: '/opt/agent-sandbox/bin', readOnly: true },
    ]);
    const [init] = spec.initContainers;
    expect(init).toMatchObject({
      name: 'install-agent-sandbox-runtime',
      image: AgentSandboxSystem.DEFAULT_IMAGE,
      args: ['install-runtime', '/opt/agent-sandbox/bin'],
      volumeMounts: [{ name: 'agent-sandbox-runtime', mountPath: '/opt/agent-sandbox/bin' }],
    });
    expect(init.securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] },
    });
    expect(spec.volumes).toEqual([
      { name: 'agent-sandbox-runtime', emptyDir: { sizeLimit: '256Mi' } },
      { name: 'workspace', emptyDir: {} },
    ]);
  });

  test('every option: files and gRPC ports, timeout, token from a Secret key, named container, claim-template workspace, image', () => {
    const spec = podSpec({
      container: 'agent',
      filesPort: 8080,
      grpcPort: 9090,
      port: 7777,
      execTimeout: Duration.minutes(2),
      token: { secretName: 'runtime-token', key: 'token.txt' },
      workspacePath: '/home/agent/work',
      workspaceVolume: 'work',
      image: 'registry.example.com/agent-sandbox-operator:dev',
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      allowRoot: true,
    }, {
      containers: [{ image: 'busybox', name: 'sidecar', command: ['sleep', 'infinity'] }, { ...python, name: 'agent' }],
      volumeClaimTemplates: [{ name: 'work', storage: '1Gi' }],
    });
    const agent = spec.containers[1];
    expect(agent.command.slice(3)).toEqual([
      '--port=7777', '--workspace=/home/agent/work', '--files-port=8080', '--grpc-port=9090', '--exec-timeout=120',
      '--token-file=/var/run/agent-sandbox/runtime-token/token', '--allow-root',
    ]);
    expect(agent.ports.map((p: any) => [p.name, p.containerPort])).toEqual([['runtime', 7777], ['files', 8080], ['grpc', 9090]]);
    expect(agent.readinessProbe.httpGet.port).toBe(7777);
    expect(agent.volumeMounts).toContainEqual({ name: 'work', mountPath: '/home/agent/work' });
    expect(agent.volumeMounts).toContainEqual({ name: 'agent-sandbox-runtime-token', mountPath: '/var/run/agent-sandbox/runtime-token', readOnly: true });
    expect(spec.volumes).toContainEqual({ name: 'agent-sandbox-runtime-token', secret: { secretName: 'runtime-token', items: [{ key: 'token.txt', path: 'token' }] } });
    expect(spec.volumes.map((v: any) => v.name)).not.toContain('workspace');
    expect(spec.initContainers[0]).toMatchObject({ image: 'registry.example.com/agent-sandbox-operator:dev', imagePullPolicy: 'Always' });
    expect(spec.containers[0].command).toEqual(['sleep', 'infinity']);
  });

  test('a volume the container already mounts at the workspace path is the workspace; user init containers run after the install', () => {
    const spec = podSpec({}, {
      containers: [{ ...python, volumeMounts: [{ volume: 'data', path: '/workspace' }] }],
      initContainers: [{ image: 'busybox', name: 'prepare', command: ['true'] }],
      volumes: [SandboxVolume.emptyDir('data')],
    });
    expect(spec.containers[0].volumeMounts.filter((m: any) => m.mountPath === '/workspace')).toEqual([{ name: 'data', mountPath: '/workspace' }]);
    expect(spec.volumes.map((v: any) => v.name)).toEqual(['data', 'agent-sandbox-runtime']);
    expect(spec.initContainers.map((c: any) => c.name)).toEqual(['install-agent-sandbox-runtime', 'prepare']);
  });

  test.each([
    ['runtime.container: "nope" is not a container of this template; use one of "sandbox", or omit it for the first container', { container: 'nope' }, {}],
    ['runtime.container: container "sandbox" sets command, which the runtime replaces; remove command from it', {}, { containers: [{ ...python, command: ['python', '-m', 'http.server'] }] }],
    ['runtime.port: 8888 is already a port of container "sandbox" (containers of a Pod share its ports); remove that port from the container or choose another runtime.port', {}, { containers: [{ ...python, ports: [{ number: 8888, name: 'http' }] }] }],
    ['runtime.filesPort: 8888 is also runtime.port; give each runtime port its own number', { filesPort: 8888 }, {}],
    ['runtime.grpcPort: 70000 is not a port; use an integer from 1 to 65535', { grpcPort: 70000 }, {}],
    ['runtime.port: container "sandbox" already has a port named "runtime"', {}, { containers: [{ ...python, ports: [{ number: 9000, name: 'runtime' }] }] }],
    ['runtime.workspaceVolume: "missing" is not a volume of this template', { workspaceVolume: 'missing' }, {}],
    ['runtime.workspacePath: "relative" must be an absolute directory', { workspacePath: 'relative' }, {}],
    ['runtime.execTimeout: must be longer than zero', { execTimeout: Duration.seconds(0) }, {}],
    ['runtime.token.key: "a/b" is not a Secret key', { token: { secretName: 'Bad_Name', key: 'a/b' } }, {}],
    ['volumes[].name: "workspace" is a volume the runtime adds; rename your volume, or pass it as runtime.workspaceVolume', {}, { volumes: [SandboxVolume.emptyDir('workspace')] }],
  ] as Array<[string, SandboxRuntimeOptions, Partial<SandboxTemplateProps>]>)('%s', (message, runtime, props) => {
    expect(errorsOf(runtime, props)).toContain(message);
  });
});

describe('the runtime image follows the install in the same App', () => {
  const DIGEST = `sha256:${'cd'.repeat(32)}`;
  const template = (scope: Chart, runtime: SandboxRuntimeOptions = {}) =>
    new SandboxTemplate(scope, 'tpl', { metadata: { name: 'python' }, containers: [python], runtime });
  const initOf = (chart: Chart) => Testing.synth(chart).find((o) => o.kind === 'SandboxTemplate').spec.podTemplate.spec.initContainers[0];

  test('the system\'s image, for a template in another chart made before the system', () => {
    const app = Testing.app();
    const sandboxes = new Chart(app, 'sandboxes');
    template(sandboxes);
    const system = new AgentSandboxSystem(new Chart(app, 'system'), 'system', { image: 'registry.example/op:1.2' });
    expect(system.image).toBe('registry.example/op:1.2');
    expect(initOf(sandboxes).image).toBe('registry.example/op:1.2');
    expect(initOf(sandboxes).imagePullPolicy).toBeUndefined();
  });

  test('with the install\'s digest and pull policy; AgentSandboxExtensions counts as an install too', () => {
    const app = Testing.app();
    const chart = new Chart(app, 'all');
    template(chart);
    new AgentSandboxSystem(chart, 'system', { image: 'registry.example/op:1.2', imageDigest: DIGEST, imagePullPolicy: ImagePullPolicy.ALWAYS });
    expect(initOf(chart)).toMatchObject({ image: `registry.example/op:1.2@${DIGEST}`, imagePullPolicy: 'Always' });
    const layered = new Chart(Testing.app(), 'layered');
    template(layered);
    new AgentSandboxExtensions(layered, 'ext', { image: 'registry.example/op:1.3' });
    expect(initOf(layered).image).toBe('registry.example/op:1.3');
  });

  test('an explicit runtime image (and pull policy) wins over the install\'s', () => {
    const chart = new Chart(Testing.app(), 'all');
    template(chart, { image: 'registry.example/runtime:dev' });
    new AgentSandboxSystem(chart, 'system', { image: 'registry.example/op:1.2', imagePullPolicy: ImagePullPolicy.ALWAYS });
    expect(initOf(chart).image).toBe('registry.example/runtime:dev');
    expect(initOf(chart).imagePullPolicy).toBeUndefined();
    const own = new Chart(Testing.app(), 'own');
    template(own, { imagePullPolicy: ImagePullPolicy.IF_NOT_PRESENT });
    new AgentSandboxSystem(own, 'system', { image: 'registry.example/op:1.2', imagePullPolicy: ImagePullPolicy.ALWAYS });
    expect(initOf(own)).toMatchObject({ image: 'registry.example/op:1.2', imagePullPolicy: 'IfNotPresent' });
  });

  test('control: no install in the App (or only in another App) gives the default image', () => {
    const alone = new Chart(Testing.app(), 'alone');
    template(alone);
    expect(initOf(alone).image).toBe(AgentSandboxSystem.DEFAULT_IMAGE);
    const elsewhere = new Chart(Testing.app(), 'elsewhere');
    template(elsewhere);
    new AgentSandboxSystem(new Chart(new App(), 'other'), 'system', { image: 'registry.example/op:1.2' });
    expect(initOf(elsewhere).image).toBe(AgentSandboxSystem.DEFAULT_IMAGE);
  });

  test('installs that agree are one image; installs that disagree fail naming runtime.image', () => {
    const agree = new Chart(Testing.app(), 'agree');
    template(agree);
    new AgentSandboxSystem(agree, 'core', { image: 'registry.example/op:1.2', extensions: false });
    new AgentSandboxExtensions(agree, 'ext', { image: 'registry.example/op:1.2' });
    expect(initOf(agree).image).toBe('registry.example/op:1.2');
    const disagree = new Chart(Testing.app(), 'disagree');
    template(disagree);
    new AgentSandboxSystem(disagree, 'core', { image: 'registry.example/op:1.2', extensions: false });
    new AgentSandboxExtensions(disagree, 'ext', { image: 'registry.example/op:1.3' });
    expect(() => initOf(disagree)).toThrow(/SandboxTemplate disagree\/tpl: invalid props:\n {2}- runtime\.image: the App holds installs with different operator images \(disagree\/core runs "registry.example\/op:1.2", disagree\/ext runs "registry.example\/op:1.3"\); set runtime.image/);
    const pinned = new Chart(Testing.app(), 'pinned');
    template(pinned, { image: 'registry.example/op:1.3' });
    new AgentSandboxSystem(pinned, 'core', { image: 'registry.example/op:1.2', extensions: false });
    new AgentSandboxExtensions(pinned, 'ext', { image: 'registry.example/op:1.3' });
    expect(initOf(pinned).image).toBe('registry.example/op:1.3');
  });
});
