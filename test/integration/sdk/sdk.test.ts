/**
 * The TypeScript SDK end to end on the local control plane: agent processes (fixtures/agent.mjs,
 * using the built sdk/dist) claim from a warm pool whose Pods the pod runner runs as local
 * runtime processes, and reach them through the router process (--auth=kubernetes, real
 * TokenReview/SubjectAccessReview of ServiceAccount tokens) or straight at the Pod's loopback IP.
 * Covered: claim → run → files → close; stdout/stderr order (legacy and streamed over gRPC through h2c); a command timeout; typed errors for a
 * missing pool, a refused cold start and auth failures; SIGINT cleanup; a SIGKILLed agent's claim
 * expiring by its ttl; concurrent extendTtl calls; suspend and resume (a workspace on a volume claim kept
 * across them); an idle policy's sleep, and a run() the router wakes the sandbox for; two clients
 * never sharing a sandbox.
 * Port-forward mode (the default): client-node's PortForward through kube-apiserver's
 * `pods/portforward` (served by kwok, see tools/control-plane) to a router Pod the pod runner runs,
 * found behind the router Service.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { createInterface } from 'readline';
import { waitFor } from '../../../tools/control-plane/kube';
import { RUN_LABEL } from '../../../tools/control-plane/pod-runner';
import { OPERATOR_BUNDLE, OperatorProcess } from '../../../tools/shared/operator-process';
import { DataPlane, runtimeTemplate } from '../data-plane/data-plane';
import { serviceAccountKubeconfig, serviceAccountToken } from '../operator/bundle-rbac';
import { claimManifest, claimReady, poolManifest } from '../operator/extensions-api';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const AGENT = path.join(__dirname, 'fixtures', 'agent.mjs');

let dp: DataPlane;
let router: OperatorProcess;
let routerUrl: string;
/** The kubeconfig of the agent's ServiceAccount (may use claims), and a token of one with no rights. */
let agentKubeconfig: string;
let strangerToken: string;

beforeAll(async () => {
  // The agent imports the built package, as an application would.
  execFileSync('npx', ['tsc', '-p', 'sdk/tsconfig.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  dp = await DataPlane.start('sdk', 3, { claims: 0, runtimeArgs: ['--grpc-port=9090'] });
  await dp.ext.create('sandboxwarmpools', poolManifest('cold-pool', 'runtime', 0));
  await dp.kube.applyServerSide(agentRbac(dp.ns), 'sdk-test', dp.ns);
  agentKubeconfig = await serviceAccountKubeconfig(dp.kube, dp.api, dp.ns, 'agent', `sdk-agent-${dp.ns}`);
  strangerToken = await serviceAccountToken(dp.api, dp.ns, 'stranger');
  router = await OperatorProcess.startRouter({ kubeconfig: dp.kube.kubeconfig, args: ['--auth=kubernetes', '--allowed-pod-cidrs=127.64.0.0/12'] });
  routerUrl = `http://127.0.0.1:${await router.port('proxy')}`;
}, 240_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
});

/** The agent's ServiceAccount may manage claims, use their sandboxes and read/patch Sandboxes; the stranger may do nothing. */
function agentRbac(ns: string): object[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent', namespace: ns } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'stranger', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'agent', namespace: ns },
      rules: [
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'] },
        // What the router checks: using the sandbox of a claim.
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims/connect'], verbs: ['create'] },
        { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch', 'patch'] },
        // Short-lived router tokens for itself (routerToken).
        { apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: ['agent'], verbs: ['create'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'agent', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: ns }],
    },
  ];
}

interface Agent {
  readonly child: ChildProcess;
  readonly lines: any[];
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first line `match` accepts. */
  line(match: (line: any) => boolean): Promise<any>;
}

function startAgent(config: Record<string, unknown>): Agent {
  const full = { kubeconfig: agentKubeconfig, namespace: dp.ns, pool: 'pool', connection: { mode: 'direct', url: routerUrl }, ...config };
  const child = spawn(process.execPath, [AGENT, JSON.stringify(full)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: any[] = [];
  const waiters: Array<{ match: (line: any) => boolean; resolve: (line: any) => void }> = [];
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text);
    lines.push(line);
    for (const w of waiters.filter((x) => x.match(line))) w.resolve(line);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    lines,
    exited,
    line: (match) => new Promise((resolve, reject) => {
      const found = lines.find(match);
      if (found) return resolve(found);
      waiters.push({ match, resolve });
      void exited.then(({ code, signal }) => reject(new Error(`the agent exited (${code ?? signal}) first; lines: ${JSON.stringify(lines)}; stderr: ${stderr}`)));
    }),
  };
}

/** Runs an agent to its end; resolves with its lines. */
async function runAgent(config: Record<string, unknown>): Promise<any[]> {
  const agent = startAgent(config);
  await agent.exited;
  return agent.lines;
}

const step = (lines: any[], name: string) => lines.find((l) => l.step === name);
const claimGone = (name: string, timeoutMs = 60_000) => waitFor(async () => (await dp.ext.get('sandboxclaims', name)) === undefined, timeoutMs, `claim ${name} to be deleted`);

async function readyClaim(name: string): Promise<any> {
  await dp.ext.create('sandboxclaims', claimManifest(name, 'pool'));
  return waitFor(async () => {
    const claim = await dp.ext.get('sandboxclaims', name);
    return claimReady(claim) && claim.status?.sandbox?.name ? claim : undefined;
  }, 120_000, `claim ${name} Ready`);
}

test('claim → run → files → streams → timeout → close, through the router as the agent\'s ServiceAccount', async () => {
  const lines = await runAgent({ scenario: 'lifecycle' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  const claimed = step(lines, 'claimed');
  expect(claimed.claim).toMatch(/^sandbox-claim-[0-9a-f]{8}$/);
  expect(step(lines, 'run').result).toEqual({ stdout: expect.stringMatching(/^HELLO FROM .+\n$/), stderr: '', exitCode: 7, timedOut: false });
  expect(step(lines, 'files')).toEqual({ step: 'files', read: 'print("hi")\n', list: [['main.py', 'file', 12]], exists: true });
  expect(step(lines, 'removed').exists).toBe(false);
  expect(step(lines, 'streams')).toEqual({
    step: 'streams', stdout: 'out1\nout2\nout3\nout4\nout5\n', stderr: 'err1\nerr2\nerr3\nerr4\nerr5\n', exitCode: 0,
  });
  expect(step(lines, 'timeout').result).toEqual({ stdout: 'started\n', stderr: expect.any(String), exitCode: 124, timedOut: true });
  expect(step(lines, 'closed')).toBeDefined();
  await claimGone(claimed.claim);
});

test('with grpcPort, run streams over sandboxd\'s gRPC ProcessService through the router (h2c): output in order, stdin, the time limit', async () => {
  const lines = await runAgent({ scenario: 'grpcStream' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  const { events, result } = step(lines, 'streamed');
  expect(events).toEqual(['out:out1\n', 'err:err1\n', 'out:out2\n', 'err:err2\n', 'out:out3\n', 'err:err3\n', 'out:from stdin\n']);
  expect(result).toEqual({ stdout: 'out1\nout2\nout3\nfrom stdin\n', stderr: 'err1\nerr2\nerr3\n', exitCode: 0, timedOut: false });
  expect(step(lines, 'timeout').result).toEqual({ stdout: 'started\n', stderr: '', exitCode: 124, timedOut: true });
});

test('pod connection: connect() to an existing claim and run straight at its Pod\'s loopback IP, no router', async () => {
  const claim = await readyClaim('pod-mode');
  expect(claim.status.sandbox.podIPs?.[0]).toMatch(/^127\./);
  const lines = await runAgent({ scenario: 'runOnce', claim: 'pod-mode', connection: { mode: 'pod' } });
  expect(lines).toEqual([{ step: 'run', result: { stdout: 'ok\n', stderr: '', exitCode: 0, timedOut: false } }]);
  // connect() never deletes: the claim is still there.
  expect(await dp.ext.get('sandboxclaims', 'pod-mode')).toBeDefined();
});

test('routerToken: the SDK mints a sandbox-router token, which a router that refuses API tokens accepts', async () => {
  await readyClaim('minted');
  const strict = await OperatorProcess.startRouter({ kubeconfig: dp.kube.kubeconfig, args: ['--auth=kubernetes', '--auth-api-tokens=false', '--allowed-pod-cidrs=127.64.0.0/12'] });
  try {
    const connection = { mode: 'direct', url: `http://127.0.0.1:${await strict.port('proxy')}` };
    const minted = await runAgent({ scenario: 'runOnce', claim: 'minted', connection, routerToken: true });
    expect(minted).toEqual([{ step: 'run', result: { stdout: 'ok\n', stderr: '', exitCode: 0, timedOut: false } }]);
    // Negative control: the same agent sending its own ServiceAccount token is refused by that router.
    const own = await runAgent({ scenario: 'runOnce', claim: 'minted', connection });
    expect(own).toEqual([expect.objectContaining({ error: 'SandboxAuthError', status: 401 })]);
  } finally {
    await strict.stop();
  }
});

describe('typed errors', () => {
  test('no token: SandboxAuthError 401; a token without rights on the claim: SandboxAuthError 403', async () => {
    await readyClaim('auth');
    const anonymous = await runAgent({ scenario: 'runOnce', claim: 'auth', token: null });
    expect(anonymous).toEqual([expect.objectContaining({ error: 'SandboxAuthError', status: 401 })]);
    const stranger = await runAgent({ scenario: 'runOnce', claim: 'auth', token: strangerToken });
    expect(stranger).toEqual([expect.objectContaining({ error: 'SandboxAuthError', status: 403 })]);
  });

  test('port-forward with no router Service to forward to: SandboxConnectionError saying what to fix', async () => {
    await readyClaim('no-router');
    const lines = await runAgent({ scenario: 'runOnce', claim: 'no-router', connection: { mode: 'port-forward', namespace: dp.ns } });
    expect(lines).toEqual([expect.objectContaining({
      error: 'SandboxConnectionError',
      message: expect.stringMatching(new RegExp(`cannot read Service ${dp.ns}/sandbox-router-svc .*is the router installed there\\?`)),
    })]);
  });

  test('a missing pool: SandboxPoolNotFoundError with the claim\'s reason, and the claim is deleted', async () => {
    const lines = await runAgent({ scenario: 'claimOnly', pool: 'no-such-pool' });
    expect(lines).toEqual([expect.objectContaining({ error: 'SandboxPoolNotFoundError', reason: 'WarmPoolNotFound' })]);
    expect(await dp.ext.list('sandboxclaims', 'agents.x-k8s.io/created-by=typescript-client')).toEqual([]);
  });

  test('coldStart "fail" on a pool with no warm sandbox: SandboxColdStartError', async () => {
    const lines = await runAgent({ scenario: 'claimOnly', pool: 'cold-pool', coldStart: 'fail' });
    expect(lines).toEqual([expect.objectContaining({ error: 'SandboxColdStartError' })]);
  });
});

test('SIGINT: the agent deletes its claim, then ends by the signal', async () => {
  const agent = startAgent({ scenario: 'hold' });
  const { claim } = await agent.line((l) => l.step === 'claimed');
  expect(await dp.ext.get('sandboxclaims', claim)).toBeDefined();
  agent.child.kill('SIGINT');
  expect(await agent.exited).toEqual({ code: null, signal: 'SIGINT' });
  // Deleted before the process ended: no wait needed.
  expect(await dp.ext.get('sandboxclaims', claim)).toBeUndefined();
});

test('SIGKILL: the claim outlives the agent until its ttl deletes it', async () => {
  const agent = startAgent({ scenario: 'hold', ttl: '8s' });
  const { claim } = await agent.line((l) => l.step === 'claimed');
  agent.child.kill('SIGKILL');
  await agent.exited;
  const left = await dp.ext.get('sandboxclaims', claim);
  expect(left?.spec.lifecycle).toMatchObject({ shutdownPolicy: 'Delete' });
  await claimGone(claim, 90_000);
});

test('suspend() stops the Pod (the router answers 409: SandboxSuspendedError), resume() brings it back Ready', async () => {
  const lines = await runAgent({ scenario: 'suspendResume' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  expect(step(lines, 'suspended').refused).toEqual({ error: 'SandboxSuspendedError', status: 409, detail: expect.stringMatching(/is suspended/) });
  // The runtime's workspace is per Pod: a new Pod starts empty (volumes would keep it).
  expect(step(lines, 'resumed')).toEqual({ step: 'resumed', result: { stdout: 'back\n', stderr: '', exitCode: 0, timedOut: false }, kept: false });
});

test('with the workspace on a volume claim (what runtime.workspaceVolume renders), a file written before suspend() is there after resume()', async () => {
  const tpl = runtimeTemplate('kept', ['--workspace=/workspace']);
  tpl.spec.podTemplate.spec.containers[0].volumeMounts = [{ name: 'workspace', mountPath: '/workspace' }];
  tpl.spec.volumeClaimTemplates = [{ metadata: { name: 'workspace' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } } }];
  await dp.ext.create('sandboxtemplates', tpl);
  await dp.ext.create('sandboxwarmpools', poolManifest('kept-pool', 'kept', 1));
  await dp.ext.waitPoolReady('kept-pool', 1);
  const lines = await runAgent({ scenario: 'suspendResume', pool: 'kept-pool' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  // The pod runner runs the new Pod's runtime in the claim's volume directory, as a kubelet mounts it.
  expect(step(lines, 'resumed')).toMatchObject({ result: { stdout: 'back\n', exitCode: 0 }, kept: true });
});

test('idlePolicy: the operator suspends the unused sandbox, and the next run() goes through, the router waking it', async () => {
  const goFile = path.join(os.tmpdir(), `sdk-idle-go-${dp.ns}`);
  fs.rmSync(goFile, { force: true });
  const agent = startAgent({ scenario: 'idleWake', goFile });
  try {
    const claimed = await agent.line((l) => l.step === 'claimed');
    const claim = await dp.ext.get('sandboxclaims', claimed.claim);
    expect(claim.spec.idlePolicy).toEqual({ suspendAfterSeconds: 2, resumeOnRequest: true });
    // The operator's doing, not the agent's: the agent only waits for the go file meanwhile.
    const suspended = await waitFor(async () => {
      const sb = await dp.api.call('GET', dp.sandboxPath(claimed.sandbox));
      return sb.spec.operatingMode === 'Suspended' ? sb : undefined;
    }, 60_000, `Sandbox ${claimed.sandbox} to be suspended for idleness`);
    expect(suspended.metadata.annotations?.['agents.x-k8s.io/idle-suspended-at']).toBeDefined();
    fs.writeFileSync(goFile, '');
    await agent.exited;
    expect(agent.lines.find((l) => l.error)).toBeUndefined();
    expect(step(agent.lines, 'woken').result).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0, timedOut: false });
    await claimGone(claimed.claim);
  } finally {
    agent.child.kill('SIGKILL');
    fs.rmSync(goFile, { force: true });
  }
});

test('two clients claiming from the same pool at once get different sandboxes', async () => {
  const lines = await runAgent({ scenario: 'twoClients' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  const { claims, sandboxes } = step(lines, 'claimed');
  expect(new Set(claims).size).toBe(2);
  expect(new Set(sandboxes).size).toBe(2);
  expect(step(lines, 'isolated')).toEqual({ step: 'isolated', yHasX: false, xHasX: true });
});

test('concurrent extendTtl calls, racing each other and the controller\'s status writes (suspend/resume), all land; the latest wins, never shortened', async () => {
  const lines = await runAgent({ scenario: 'extendRace' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  const { results, final, shortened, conflicts } = step(lines, 'extended');
  process.stderr.write(`extendTtl race: ${conflicts} update(s) met another writer and were retried\n`);
  const latest = Math.max(...results.map((r: string) => Date.parse(r)));
  expect(Date.parse(final)).toBe(latest);
  expect(shortened).toBe(final);
});

describe('port-forward connection (the default mode)', () => {
  let routerNs: string;

  afterAll(async () => {
    if (routerNs) await dp.kube.deleteNamespace(routerNs);
  });

  test('through the router Service to a router Pod the pod runner runs, as the agent\'s ServiceAccount', async () => {
    await readyClaim('port-forward');
    routerNs = await dp.kube.createNamespace('sdk-router');
    await dp.kube.applyServerSide(routerObjects(routerNs, dp.ns), 'sdk-test', routerNs);
    const pod = await waitFor(async () => {
      const p = await dp.api.call('GET', `/api/v1/namespaces/${routerNs}/pods/sandbox-router`);
      return p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
    }, 60_000, 'the router Pod to be Ready');
    // Ready to route once its caches have synced.
    await waitFor(() => httpStatus(pod.status.podIP, 8081, '/readyz').then((s) => s === 200), 60_000, 'the router Pod\'s /readyz');

    const lines = await runAgent({ scenario: 'runOnce', claim: 'port-forward', connection: { mode: 'port-forward', namespace: routerNs } });
    expect(lines).toEqual([{ step: 'run', result: { stdout: 'ok\n', stderr: '', exitCode: 0, timedOut: false } }]);
  });
});

function httpStatus(host: string, port: number, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host, port, path: p, agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

/**
 * The router as a Pod the pod runner runs (this checkout's bundle on the Pod's own address, which
 * `$(POD_IP)` expands to), the Service the SDK looks up (a named targetPort), and what port-forward
 * mode needs for the agent's ServiceAccount from `agentNs`: get the Service, list its Pods, and get
 * and create on pods/portforward (client-node opens it as a WebSocket GET, which kube-apiserver
 * authorizes as `get` and, since the WebSocket upgrade check, also as `create`).
 */
function routerObjects(ns: string, agentNs: string): object[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sandbox-router', namespace: ns, labels: { [RUN_LABEL]: 'true', app: 'sandbox-router' } },
      spec: {
        terminationGracePeriodSeconds: 5,
        containers: [{
          name: 'router',
          image: 'example.invalid/agent-sandbox-operator:dev',
          command: ['node', OPERATOR_BUNDLE, 'router'],
          args: [
            `--kubeconfig=${dp.kube.kubeconfig}`, '--auth=kubernetes', '--allowed-pod-cidrs=127.64.0.0/12',
            '--bind-address=$(POD_IP):8080', '--health-probe-bind-address=$(POD_IP):8081', '--metrics-bind-address=0',
          ],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          ports: [{ name: 'http', containerPort: 8080 }],
        }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'sandbox-router-svc', namespace: ns },
      spec: { selector: { app: 'sandbox-router' }, ports: [{ name: 'http', port: 8080, targetPort: 'http' }] },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'sdk-port-forward', namespace: ns },
      rules: [
        { apiGroups: [''], resources: ['services'], verbs: ['get'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
        { apiGroups: [''], resources: ['pods/portforward'], verbs: ['get', 'create'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'sdk-port-forward', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sdk-port-forward' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: agentNs }],
    },
  ];
}
