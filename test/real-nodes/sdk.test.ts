/**
 * Agents on a real node, from outside the cluster: the TypeScript SDK (sdk/dist, the agent fixture
 * of the SDK's own suite) claims from a gVisor warm pool through a port-forward it opens to the
 * router Service (client-node → kube-apiserver → the real kubelet → containerd → the router Pod),
 * runs Python, writes and reads files, and streams over sandboxd's gRPC ProcessService through the
 * router; upstream's Python SDK 1.0.8, unchanged, does the same through a kubectl port-forward.
 */
import { execFile, execFileSync } from 'child_process';
import * as path from 'path';
import { RouterForward, agentToken, eventually, kube, pods, pythonPool } from './e2e';
import { Kube } from '../../tools/control-plane/kube';

const ROOT = path.resolve(__dirname, '..', '..');
const AGENT = path.join(ROOT, 'test', 'integration', 'sdk', 'fixtures', 'agent.mjs');
const PY_COMPAT = path.join(ROOT, 'test', 'integration', 'data-plane', 'python_sdk_compat.py');

let k: Kube;
let ns: string;
let token: string;

beforeAll(async () => {
  k = kube();
  ns = await k.createNamespace('sdk');
  await k.applyServerSide(pythonPool(ns, 'pool', {
    runtimeClass: 'gvisor',
    runAsUser: 1000,
    replicas: 2,
    extra: { runtime: { filesPort: 8080, grpcPort: 9090 } },
  }), 'real-nodes-test');
  token = await agentToken(k, ns);
  execFileSync('npx', ['projen', 'sdk:build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  await eventually('2 Ready pool members', async () => {
    const ready = (await pods(k, ns)).filter((p) => p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    return ready.length >= 2 ? true : undefined;
  }, 180_000);
}, 300_000);

afterAll(async () => {
  await k?.deleteNamespace(ns);
});

function runAgent(config: Record<string, unknown>): Promise<any[]> {
  const full = { kubeconfig: k.kubeconfig, namespace: ns, pool: 'pool', token, connection: { mode: 'port-forward' }, ...config };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [AGENT, JSON.stringify(full)], { timeout: 180_000 }, (err, stdout, stderr) => {
      const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      if (err) reject(new Error(`agent failed: ${err.message}\n${stderr}\n${stdout}`));
      else resolve(lines);
    });
  });
}
const step = (lines: any[], name: string) => lines.find((l) => l.step === name);

test('TypeScript SDK: claim → run → files → close, through a port-forward to the router Service', async () => {
  const lines = await runAgent({ scenario: 'lifecycle' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  expect(step(lines, 'run').result).toEqual({ stdout: expect.stringMatching(/^HELLO FROM .+\n$/), stderr: '', exitCode: 7, timedOut: false });
  expect(step(lines, 'files')).toEqual({ step: 'files', read: 'print("hi")\n', list: [['main.py', 'file', 12]], exists: true });
  expect(step(lines, 'closed')).toBeDefined();
  const claim = step(lines, 'claimed').claim;
  await eventually(`claim ${claim} gone`, async () => ((await k.tryGetJson(['sandboxclaim', claim, '-n', ns])) ? undefined : true), 60_000);
});

test('TypeScript SDK: run streams over gRPC through the router (h2c), in a gVisor sandbox', async () => {
  const lines = await runAgent({ scenario: 'grpcStream' });
  expect(lines.find((l) => l.error)).toBeUndefined();
  const { events, result } = step(lines, 'streamed');
  // Every sandbox here, the one this agent claimed among them, is a Pod of the gVisor pool.
  const all = await pods(k, ns);
  expect(all.length).toBeGreaterThan(0);
  expect(all.map((p) => p.spec.runtimeClassName)).toEqual(all.map(() => 'gvisor'));
  expect(events).toEqual(['out:out1\n', 'err:err1\n', 'out:out2\n', 'err:err2\n', 'out:out3\n', 'err:err3\n', 'out:from stdin\n']);
  expect(result).toEqual({ stdout: 'out1\nout2\nout3\nfrom stdin\n', stderr: 'err1\nerr2\nerr3\n', exitCode: 0, timedOut: false });
});

test('upstream\'s Python SDK 1.0.8, unchanged: create_sandbox from the pool, commands, files, terminate', async () => {
  const python = execFileSync(path.join(ROOT, 'hack', 'python-sdk-venv.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
  const forward = await RouterForward.open(k);
  try {
    const out = await new Promise<any>((resolve, reject) => {
      execFile(python, [PY_COMPAT, 'router'], {
        env: { ...process.env, KUBECONFIG: k.kubeconfig, SANDBOX_NAMESPACE: ns, SANDBOX_POOL: 'pool', ROUTER_URL: forward.url, ROUTER_TOKEN: token },
        timeout: 180_000,
      }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim().split('\n').pop()!))));
    });
    expect(out.run).toEqual({ stdout: 'hello\n', stderr: '', exit_code: 0, timed_out: false });
    expect(out.run_exit.exit_code).toBe(3);
    expect(out.read).toBe('hello from python');
    expect(out.exists).toBe(true);
    expect(out.exists_missing).toBe(false);
    expect(out.terminated).toBe(true);
  } finally {
    forward.close();
  }
});
