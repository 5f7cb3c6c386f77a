/**
 * The E2B-shaped facade (`@cdk8s-agent-sandbox/sdk/e2b`) end to end on the local control plane: a
 * program written for E2B's JS SDK (fixtures/e2b-program.mjs, only its import changed) creates a
 * sandbox from a warm pool (a SandboxClaim with the ttl of its timeoutMs and its metadata as
 * labels), runs commands and moves files through the router, extends the ttl, pauses (suspends)
 * and connects again (which resumes), and kills it (the claim is deleted). Controls: a non-zero
 * exit throws CommandExitError, killing twice says false, connecting to a claim that does not
 * exist is a NotFoundError at once.
 */
import { execFileSync, spawn } from 'child_process';
import * as path from 'path';
import { createInterface } from 'readline';
import { waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess } from '../../../tools/shared/operator-process';
import { DataPlane } from '../data-plane/data-plane';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const PROGRAM = path.join(__dirname, 'fixtures', 'e2b-program.mjs');

let dp: DataPlane;
let router: OperatorProcess;

beforeAll(async () => {
  // The program imports the built package (its ./e2b export), as an application would.
  execFileSync('npx', ['tsc', '-p', 'sdk/tsconfig.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  dp = await DataPlane.start('sdk-e2b', 1, { claims: 0 });
  router = await OperatorProcess.startRouter({ kubeconfig: dp.kube.kubeconfig, args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12'] });
}, 240_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
});

test('an E2B program runs unchanged but for the import: create → commands → files → setTimeout → pause → connect (resumes) → kill', async () => {
  const opts = { kubeconfig: dp.kube.kubeconfig, namespace: dp.ns, connection: { mode: 'direct', url: `http://127.0.0.1:${await router.port('proxy')}` } };
  const child = spawn(process.execPath, [PROGRAM, JSON.stringify(opts)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const lines: any[] = [];
  const seen: Record<string, any> = {};
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const checks: Promise<void>[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text);
    lines.push(line);
    seen[line.step] = line;
    // The claim as the program goes: its ttl from timeoutMs, then from setTimeout.
    if (line.step === 'created') {
      checks.push(dp.ext.get('sandboxclaims', line.sandboxId).then((claim) => {
        expect(claim.metadata.labels).toMatchObject({ team: 'agents' });
        expect(claim.spec.lifecycle.shutdownPolicy).toBe('Delete');
        expect(Date.parse(claim.spec.lifecycle.shutdownTime) - Date.now()).toBeLessThanOrEqual(121_000);
      }));
    }
    if (line.step === 'extended') {
      checks.push(dp.ext.get('sandboxclaims', seen.created.sandboxId).then((claim) => {
        expect(Date.parse(claim.spec.lifecycle.shutdownTime) - Date.now()).toBeGreaterThan(500_000);
      }));
    }
  });
  const code = await exited;
  await Promise.all(checks);
  expect({ code, stderr, errors: lines.filter((l) => l.error) }).toEqual({ code: 0, stderr: '', errors: [] });

  expect(seen.created.sandboxId).toMatch(/^sandbox-claim-[0-9a-f]{8}$/);
  expect(seen.run).toEqual({ step: 'run', result: { exitCode: 0, stdout: 'hello from the sandbox\n', stderr: '' }, streamed: 'hello from the sandbox\n' });
  expect(seen.failed).toEqual({ step: 'failed', thrown: true, exitCode: 3, stderr: 'oops\n' });
  expect(seen.background).toEqual({ step: 'background', listed: true, killed: true, killedAgain: false });
  expect(seen.files.entries).toEqual([['greet.sh', 'file', '/home/user/greet.sh']]);
  // Suspended: the router refuses at once, which isRunning reports as false.
  expect(seen.paused).toEqual({ step: 'paused', running: false });
  expect(seen.connected).toEqual({ step: 'connected', running: true, result: { exitCode: 0, stdout: 'back\n', stderr: '' } });
  expect(seen.killed).toEqual({ step: 'killed', running: false, killedAgain: false });
  expect(seen.missing).toEqual({ step: 'missing', thrown: true, name: 'NotFoundError' });
  await waitFor(async () => (await dp.ext.get('sandboxclaims', seen.created.sandboxId)) === undefined, 60_000, 'the claim to be deleted by kill()');
});
