/**
 * The pod runner (tools/control-plane/pod-runner.ts) on the real control plane: opted-in Pods get
 * an address of the runner's half of the pod CIDR and a real operator runtime listening on it;
 * status follows the process (a crash makes the Pod not Ready until the restart); deletion stops
 * the process, removes the workspace and the Pod; a workspace on a PersistentVolumeClaim is the bound
 * volume's directory and outlives the Pod; and neither a SIGKILLed runner nor a runner whose
 * owner went away leaves a process behind.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { DEFAULT_POD_CIDR, podRunnerDir } from '../../tools/control-plane/control-plane';
import { ENV, Kube, waitFor } from '../../tools/control-plane/kube';
import { cidrContains, parseCidr, splitPodCidr } from '../../tools/control-plane/pod-cidr';
import { podRunnerCommand, RUN_LABEL } from '../../tools/control-plane/pod-runner';
import { pidAlive } from '../../tools/control-plane/processes';
import { ensureOperatorBundle } from '../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const [KWOK_CIDR, RUNNER_CIDR] = splitPodCidr(DEFAULT_POD_CIDR);
const RUNTIME = ['agent-sandbox-operator', 'runtime', '--port=8888'];
let ns: string;

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('pod-runner');
});

afterAll(async () => {
  // Pods of a runner a test killed have no one left to finish their deletion.
  if (ns) await kube.kubectl(['delete', 'pods', '--all', '-n', ns, '--grace-period=0', '--force', '--wait=false']).catch(() => undefined);
  if (ns) await kube.deleteNamespace(ns);
  api.close();
});

const isReady = (pod: any) => pod?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

function podObject(name: string, runValue: string | undefined, container: Record<string, unknown>, extra: Record<string, unknown> = {}): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: runValue ? { [RUN_LABEL]: runValue } : {} },
    spec: { terminationGracePeriodSeconds: 5, containers: [{ name: 'main', image: 'example.invalid/sandbox:0', ...container }], ...extra },
  };
}

/** Watches one Pod from before `create` until `match` holds. */
function watchPod(name: string, match: (pod: any) => boolean, create?: () => Promise<unknown>, timeoutMs = 60_000): Promise<any> {
  return api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=${name}`,
    (ev) => (ev.type !== 'DELETED' && match(ev.object) ? ev.object : undefined), { timeoutMs, onReady: create });
}

function createReady(pod: any): Promise<any> {
  return watchPod(pod.metadata.name, isReady, () => api.call('POST', `/api/v1/namespaces/${ns}/pods`, pod));
}

function pidOf(pod: any, container = 'main'): number {
  const id = pod.status.containerStatuses.find((c: any) => c.name === container)?.containerID ?? '';
  const pid = Number(/^local:\/\/(\d+)$/.exec(id)?.[1]);
  if (!pid) throw new Error(`container ${container} of ${pod.metadata.name} has no local pid (containerID "${id}")`);
  return pid;
}

function get(ip: string, port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: ip, port, path: p, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

function execute(ip: string, command: string, shell = false): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: ip, port: 8888, path: '/execute', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ command, shell }));
  });
}

test('an opted-in Pod runs the real runtime at its own address in the runner\'s half of the pod CIDR', async () => {
  const [pod, injected, plain] = await Promise.all([
    createReady(podObject('runtime', 'true', { command: RUNTIME })),
    // The form a SandboxTemplate injects into a user's image (its init container only copies files).
    createReady(podObject('injected', 'true', {
      command: ['/opt/agent-sandbox/bin/node', '/opt/agent-sandbox/bin/agent-sandbox-operator.mjs', 'runtime'],
      args: ['--workspace=/ignored', '--listen-address', '0.0.0.0'],
    }, { initContainers: [{ name: 'copy-runtime', image: 'example.invalid/operator:0', command: ['cp'] }] })),
    createReady(podObject('plain', undefined, {})),
  ]);
  expect(cidrContains(parseCidr(RUNNER_CIDR), pod.status.podIP)).toBe(true);
  expect(cidrContains(parseCidr(RUNNER_CIDR), injected.status.podIP)).toBe(true);
  expect(injected.status.podIP).not.toBe(pod.status.podIP);
  expect(cidrContains(parseCidr(KWOK_CIDR), plain.status.podIP)).toBe(true);
  expect(pod.status.podIPs).toEqual([{ ip: pod.status.podIP }]);
  expect(pod.status.phase).toBe('Running');
  expect(pod.status.containerStatuses[0]).toMatchObject({ name: 'main', ready: true, started: true, restartCount: 0 });
  expect(injected.status.initContainerStatuses[0].state.terminated.reason).toBe('Completed');

  // The runtime is really there, on the Pod's address only, confined to the Pod's workspace.
  expect((await get(pod.status.podIP, 8888, '/healthz')).status).toBe(200);
  await expect(get('127.0.0.1', 8888, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
  const pwd = await execute(injected.status.podIP, 'pwd');
  expect(pwd.exit_code).toBe(0);
  const workspace = pwd.stdout.trim();
  expect(workspace.startsWith(path.join(podRunnerDir(process.env[ENV.workDir]!), 'pods') + path.sep)).toBe(true);
  expect(workspace).toContain(`${ns}_injected_`);
});

test('a crashed runtime makes its Pod not Ready until the restart brings it back', async () => {
  const pod = await createReady(podObject('crashing', 'true', { command: RUNTIME }));
  const pid = pidOf(pod);
  const notReady = watchPod('crashing', (p) => !isReady(p) && p.status.containerStatuses[0].lastState?.terminated);
  process.kill(pid, 'SIGKILL');
  const down = await notReady;
  expect(down.status.containerStatuses[0].lastState.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
  expect(down.status.phase).toBe('Running');
  const back = await watchPod('crashing', (p) => isReady(p) && p.status.containerStatuses[0].restartCount === 1);
  expect(pidOf(back)).not.toBe(pid);
  expect((await get(back.status.podIP, 8888, '/healthz')).status).toBe(200);
});

test('a runtime that stops answering its health check makes its Pod not Ready, and Ready again when it answers', async () => {
  const pod = await createReady(podObject('hung', 'true', { command: RUNTIME }));
  const pid = pidOf(pod);
  try {
    const notReady = watchPod('hung', (p) => !isReady(p));
    process.kill(pid, 'SIGSTOP');
    const down = await notReady;
    expect(down.status.containerStatuses[0]).toMatchObject({ ready: false, restartCount: 0, state: { running: {} } });
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  const back = await watchPod('hung', isReady);
  expect(back.status.containerStatuses[0]).toMatchObject({ ready: true, restartCount: 0 });
  expect(pidOf(back)).toBe(pid);
});

test('deleting a Pod stops its runtime gracefully, removes its workspace, then the Pod', async () => {
  const pod = await createReady(podObject('deleted', 'true', { command: RUNTIME }));
  const pid = pidOf(pod);
  const workspace = (await execute(pod.status.podIP, 'pwd')).stdout.trim();
  expect(fs.existsSync(workspace)).toBe(true);
  await api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=deleted`, (ev) => (ev.type === 'DELETED' ? true : undefined), {
    timeoutMs: 30_000,
    onReady: () => api.call('DELETE', `/api/v1/namespaces/${ns}/pods/deleted`),
  });
  expect(pidAlive(pid)).toBe(false);
  expect(fs.existsSync(workspace)).toBe(false);
  const log = fs.readdirSync(path.join(podRunnerDir(process.env[ENV.workDir]!), 'logs')).find((f) => f.startsWith(`${ns}_deleted_`))!;
  // The runtime's own drain ran: it got SIGTERM, not SIGKILL.
  expect(fs.readFileSync(path.join(podRunnerDir(process.env[ENV.workDir]!), 'logs', log), 'utf8')).toMatch(/"msg":"stopped"/);
});

test('a runtime whose workspace is a PersistentVolumeClaim works in the bound volume\'s directory, which outlives the Pod', async () => {
  await kube.create({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'ws' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } },
  }, ns);
  await kube.wait(['pvc/ws', '--for=jsonpath={.status.phase}=Bound'], ns, 60_000);
  const pv = await kube.getJson(['pv', (await kube.getJson(['pvc', 'ws', '-n', ns])).spec.volumeName]);
  const volumeDir = pv.spec.hostPath.path;
  const onClaim = (name: string) => podObject(name, 'true', {
    command: [...RUNTIME, '--workspace=/workspace'], volumeMounts: [{ name: 'work', mountPath: '/workspace/' }],
  }, { volumes: [{ name: 'work', persistentVolumeClaim: { claimName: 'ws' } }] });

  const first = await createReady(onClaim('on-claim-1'));
  const wrote = await execute(first.status.podIP, 'echo "written by the first Pod" > note.txt && pwd', true);
  expect(wrote).toMatchObject({ exit_code: 0, stdout: `${volumeDir}\n` });
  await api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=on-claim-1`, (ev) => (ev.type === 'DELETED' ? true : undefined), {
    timeoutMs: 30_000,
    onReady: () => api.call('DELETE', `/api/v1/namespaces/${ns}/pods/on-claim-1`),
  });
  // The volume is not the Pod's workspace: deleting the Pod leaves it, as the kubelet leaves a PV.
  expect(fs.readFileSync(path.join(volumeDir, 'note.txt'), 'utf8')).toBe('written by the first Pod\n');

  const second = await createReady(onClaim('on-claim-2'));
  expect(await execute(second.status.podIP, 'cat note.txt')).toMatchObject({ exit_code: 0, stdout: 'written by the first Pod\n' });
  // A claim mounted elsewhere leaves the runtime in the Pod's own workspace.
  const elsewhere = await createReady(podObject('claim-elsewhere', 'true', {
    command: [...RUNTIME, '--workspace=/workspace'], volumeMounts: [{ name: 'work', mountPath: '/data' }],
  }, { volumes: [{ name: 'work', persistentVolumeClaim: { claimName: 'ws' } }] }));
  expect((await execute(elsewhere.status.podIP, 'pwd')).stdout.trim()).toContain(`${ns}_claim-elsewhere_`);
});

test('a workspace claim bound to a volume that is no directory of this machine is reported with the field to fix', async () => {
  const pvName = `${ns}-nfs`;
  await kube.create({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: '', nfs: { server: '127.0.0.1', path: '/exports' } },
  });
  try {
    await kube.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'nfs' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: pvName, resources: { requests: { storage: '1Gi' } } },
    }, ns);
    await kube.wait(['pvc/nfs', '--for=jsonpath={.status.phase}=Bound'], ns, 60_000);
    const pod = await watchPod('on-nfs', (p) => p.status?.containerStatuses?.[0]?.state?.waiting, () => api.call('POST', `/api/v1/namespaces/${ns}/pods`, podObject('on-nfs', 'true', {
      command: RUNTIME, volumeMounts: [{ name: 'work', mountPath: '/app' }],
    }, { volumes: [{ name: 'work', persistentVolumeClaim: { claimName: 'nfs' } }] })));
    expect(pod.status.containerStatuses[0].state.waiting.reason).toBe('RunContainerError');
    expect(pod.status.containerStatuses[0].state.waiting.message).toMatch(/spec\.containers\[0\]\.volumeMounts: the workspace volume "work": PersistentVolume ".*-nfs" of claim "nfs" is neither hostPath nor local/);
  } finally {
    await kube.kubectl(['delete', 'pod', 'on-nfs', '-n', ns, '--wait=false', '--ignore-not-found']);
    await kube.kubectl(['delete', 'pvc', 'nfs', '-n', ns, '--wait=false', '--ignore-not-found']);
    await kube.kubectl(['delete', 'pv', pvName, '--wait=false', '--ignore-not-found']);
  }
});

test('deleting a Pod stops every member of its process group, also one that ignores SIGTERM and outlives the command', async () => {
  const pidFile = path.join(process.env[ENV.workDir]!, `background-${Date.now()}.pid`);
  // `srv & wait`: the shell dies on SIGTERM, its background server ignores it.
  const script = `(trap "" TERM; exec sleep 300) & echo $! > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; wait`;
  await createReady(podObject('background', 'true', { command: ['/bin/sh', '-c', script] }, { terminationGracePeriodSeconds: 1 }));
  // Ready means the command started; the shell writes the file a moment later (later still on a busy machine).
  const srv = await waitFor(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 10_000, `the background pid in ${pidFile}`);
  try {
    expect(pidAlive(srv)).toBe(true);
    await api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=background`, (ev) => (ev.type === 'DELETED' ? true : undefined), {
      timeoutMs: 30_000,
      onReady: () => api.call('DELETE', `/api/v1/namespaces/${ns}/pods/background`),
    });
    expect(pidAlive(srv)).toBe(false);
  } finally {
    if (pidAlive(srv)) process.kill(srv, 'SIGKILL');
    fs.rmSync(pidFile, { force: true });
  }
});

test('a container the runner cannot run is reported with the field to fix', async () => {
  const pod = await watchPod('no-command', (p) => p.status?.containerStatuses?.[0]?.state?.waiting,
    () => api.call('POST', `/api/v1/namespaces/${ns}/pods`, podObject('no-command', 'true', { image: 'busybox' })));
  expect(pod.status.containerStatuses[0].state.waiting.reason).toBe('RunContainerError');
  expect(pod.status.containerStatuses[0].state.waiting.message).toMatch(/spec\.containers\[0\]\.command is empty.*explicit command/);
  expect(isReady(pod)).toBe(false);
});

interface OwnRunner {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

/**
 * Starts a second runner that owns Pods labelled with its own value (addressed from a range the
 * cluster's runner does not reach in a test run), waits for one runtime Pod of it to be Ready, and
 * hands the runner and the runtime's pid to `body`. The runner is SIGKILLed afterwards in any case.
 */
async function withOwnRunner(name: string, body: (runner: OwnRunner, runtimePid: number) => Promise<void>): Promise<void> {
  const value = `${name}-${Date.now()}`;
  const dir = fs.mkdtempSync(path.join(process.env[ENV.workDir]!, `runner-${value}-`));
  const cidr = splitPodCidr(RUNNER_CIDR)[1];
  const cmd = podRunnerCommand({ kubeconfig: kube.kubeconfig, workDir: dir, cidr, labelValue: value, exitWithStdin: true });
  const log = fs.openSync(path.join(dir, 'runner.log'), 'a');
  const child = spawn(cmd.bin, cmd.args, { stdio: ['pipe', log, log] });
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const pod = await createReady(podObject(name, value, { command: RUNTIME }));
    expect(cidrContains(parseCidr(cidr), pod.status.podIP)).toBe(true);
    const pid = pidOf(pod);
    expect(pidAlive(pid)).toBe(true);
    await body({ child, exited }, pid);
  } finally {
    child.kill('SIGKILL');
  }
}

test('a SIGKILLed runner leaves no runtime behind', () => withOwnRunner('killed', async (runner, pid) => {
  runner.child.kill('SIGKILL');
  await runner.exited;
  // The runtime sees its stdin close and drains itself.
  await waitFor(() => !pidAlive(pid), 30_000, `runtime pid ${pid} to exit after its runner was SIGKILLed`);
}));

test('a runner whose owner is gone (stdin closed) stops its Pods\' processes and exits', () => withOwnRunner('owned', async (runner, pid) => {
  runner.child.stdin!.end();
  await runner.exited;
  expect(runner.child.exitCode).toBe(0);
  expect(pidAlive(pid)).toBe(false);
}));
