/**
 * Upstream's Python SDK, unchanged (PyPI `k8s-agent-sandbox` 1.0.8, in the venv that
 * hack/python-sdk-venv.sh keeps outside the work tree), against our operator, router and runtime on
 * the local control plane. `python_sdk_compat.py` does what an agent does with it: create_sandbox
 * from a warm pool, commands.run (a result, a non-zero exit, a command timeout), files.write / read /
 * list / exists, and terminate; it prints what each call returned.
 *
 * Two of the SDK's connection modes: through our router (SandboxDirectConnectionConfig with a bearer
 * token in extra_headers, the router in --auth=token mode, the legacy runtime API on 8888 behind it),
 * and sandboxd straight on the Pod's IP (SandboxdInClusterConnectionConfig: gRPC ProcessService on
 * 9090, REST FilesystemService on 8080).
 */
import { execFile, execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DataPlane } from './data-plane';
import { waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess } from '../../../tools/shared/operator-process';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCRIPT = path.join(__dirname, 'python_sdk_compat.py');
const TOKEN = 'python-sdk-test-token';

let python: string;
let dp: DataPlane;
let router: OperatorProcess;
let routerUrl: string;
let tmp: string;

beforeAll(async () => {
  // First run: a minute to create the venv from PyPI; cached after that.
  const out = execFileSync(path.join(ROOT, 'hack', 'python-sdk-venv.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  python = out.trim().split('\n').pop()!;
  dp = await DataPlane.start('py-sdk', 2, { claims: 0, runtimeArgs: ['--files-port=8080', '--grpc-port=9090'] });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'py-sdk-'));
  const tokenFile = path.join(tmp, 'token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  router = await OperatorProcess.startRouter({
    kubeconfig: dp.kube.kubeconfig,
    args: ['--auth=token', `--auth-token-file=${tokenFile}`, '--allowed-pod-cidrs=127.64.0.0/12'],
  });
  routerUrl = `http://127.0.0.1:${await router.port('proxy')}`;
}, 300_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** Runs the compat script in `mode`; resolves with its JSON, or rejects with its stderr. */
function runSdk(mode: 'router' | 'sandboxd'): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(python, [SCRIPT, mode], {
      env: { ...process.env, KUBECONFIG: dp.kube.kubeconfig, SANDBOX_NAMESPACE: dp.ns, SANDBOX_POOL: 'pool', ROUTER_URL: routerUrl, ROUTER_TOKEN: TOKEN },
      timeout: 180_000,
    }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`python_sdk_compat.py ${mode} failed: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

async function claimGone(claim: string): Promise<void> {
  await waitFor(async () => (await dp.api.request('GET', dp.ext.path('sandboxclaims', claim))).status === 404 || undefined,
    60_000, `claim ${claim} to be deleted by terminate()`);
}

test('through our router: create_sandbox from the warm pool, commands.run, files, terminate', async () => {
  const out = await runSdk('router');
  expect(out.claim).toMatch(/^sandbox-claim-[0-9a-f]{8}$/);
  expect(out.sandbox).toMatch(/^pool-/); // a warm member, adopted
  expect(out.run).toEqual({ stdout: 'hello\n', stderr: '', exit_code: 0, timed_out: false });
  expect(out.run_exit).toEqual({ stdout: '', stderr: 'oops\n', exit_code: 3, timed_out: false });
  expect(out.run_timeout).toMatchObject({ exit_code: 124, timed_out: true });
  expect(out.read).toBe('hello from python');
  expect(out.list).toEqual([['hello.txt', 'file']]);
  expect(out).toMatchObject({ exists: true, exists_missing: false, terminated: true });
  await claimGone(out.claim);
}, 240_000);

test('sandboxd on the Pod IP: gRPC Execute and the REST FilesystemService, as the SDK drives them', async () => {
  const out = await runSdk('sandboxd');
  expect(out.sandbox).toMatch(/^pool-/);
  expect(out.run).toEqual({ stdout: 'hello\n', stderr: '', exit_code: 0, timed_out: false });
  expect(out.run_exit).toEqual({ stdout: '', stderr: 'oops\n', exit_code: 3, timed_out: false });
  expect(out.run_timeout).toMatchObject({ exit_code: 124, timed_out: true });
  expect(out.read).toBe('hello from python');
  expect(out.list).toEqual([['hello.txt', 'file']]);
  expect(out).toMatchObject({ exists: true, exists_missing: false, exists_after_delete: false, terminated: true });
  await claimGone(out.claim);
}, 240_000);
