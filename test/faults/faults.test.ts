/**
 * The fault suite: the real operator bundle against a real local control plane of its own, with a
 * fault injected while claims are being served. After each fault: no claim lost (every claim Ready
 * and bound) or double-bound, the warm pool back at spec.replicas, no orphan Pods, Services or PVCs,
 * and no hot loop (operator CPU and reconcile rate over a quiet window). Recovery times are
 * recorded, never asserted tightly; the summary goes to test-results/faults.json and faults.md.
 *
 * Sizes are for CI on a small machine; FAULTS_SCALE multiplies them for longer local runs, and
 * FAULTS_SEED replays a run's SIGKILL schedule (the seed is printed).
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  CONTROLLERS, FaultRecord, OPERATOR_ARGS, ROOT, Violations, Workload, envNumber, holds, kubeconfigFor, quietWindow, retry,
  seededRandom, sleep, startFaultCluster, writeSummary,
} from './harness';
import { FreezableProxy } from './tcp-proxy';
import { ControlPlane } from '../../tools/control-plane/control-plane';
import { OperatorProcess, ensureOperatorBundle } from '../integration/operator/operator-process';

const SCALE = envNumber('FAULTS_SCALE', 1);
const SEED = envNumber('FAULTS_SEED', Date.now() % 1_000_000);
const POOL = 4;
/** Quiet window for the hot-loop check. */
const QUIET_MS = 4_000;
/** Generous bounds: an idle operator uses well under 5 % of a core and reconciles next to nothing. */
const MAX_QUIET_CPU_PERCENT = 50;
const MAX_QUIET_RECONCILES_PER_SECOND = 20;
const TEST_CLOCK_ENV = 'AGENT_SANDBOX_TEST_CLOCK_OFFSET_FILE';

let cp: ControlPlane;
let proxy: FreezableProxy;
let proxiedKubeconfig: string;
let w: Workload;
let op: OperatorProcess | undefined;
const records: FaultRecord[] = [];
const workDir = path.join(ROOT, 'test-results', 'faults');
let claimSeq = 0;

function names(prefix: string, n: number): string[] {
  return Array.from({ length: n }, () => `${prefix}-${++claimSeq}`);
}

async function startOperator(extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<OperatorProcess> {
  return OperatorProcess.start({ kubeconfig: proxiedKubeconfig, args: [...OPERATOR_ARGS, ...extra], env });
}

/**
 * The invariants after a fault; records the fault's row. `claims` are every claim that must be
 * served now (those of earlier faults were deleted).
 */
async function checkAndRecord(fault: string, injections: number, recoveryMs: number[], claims: string[], notes?: string): Promise<void> {
  const v: Violations = await w.settle(claims, 120_000);
  const quiet = op?.alive ? await quietWindow(op, QUIET_MS) : { cpuPercent: 0, reconcilesPerSecond: 0 };
  const record: FaultRecord = {
    fault,
    injections,
    recoveryMs,
    claims: claims.length,
    lostClaims: v.notServed.length,
    doubleBound: v.doubleBound.length,
    orphans: v.orphans.length,
    quietCpuPercent: quiet.cpuPercent,
    quietReconcilesPerSecond: quiet.reconcilesPerSecond,
    notes,
  };
  records.push(record);
  // eslint-disable-next-line no-console
  console.log(`${fault}: ${JSON.stringify(record)}`);
  expect(v.notServed).toEqual([]);
  expect(v.doubleBound).toEqual([]);
  expect(v.orphans).toEqual([]);
  expect(v.pool).toBeUndefined();
  expect(holds(v)).toBe(true);
  expect(quiet.cpuPercent).toBeLessThan(MAX_QUIET_CPU_PERCENT);
  expect(quiet.reconcilesPerSecond).toBeLessThan(MAX_QUIET_RECONCILES_PER_SECOND);
}

/** Deletes the claims of the fault just checked and waits until only the pool's members remain. */
async function cleanUp(): Promise<void> {
  await w.deleteAllClaims();
  const v = await w.settle([], 120_000);
  expect(v.orphans).toEqual([]);
  expect(v.pool).toBeUndefined();
}

beforeAll(async () => {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  // eslint-disable-next-line no-console
  console.log(`fault suite: FAULTS_SEED=${SEED} FAULTS_SCALE=${SCALE}`);
  await ensureOperatorBundle();
  cp = await startFaultCluster();
  const target = new URL(cp.server);
  proxy = await FreezableProxy.start(target.hostname, Number(target.port));
  proxiedKubeconfig = kubeconfigFor(cp.kubeconfig, `https://127.0.0.1:${proxy.port}`, path.join(workDir, 'kubeconfig-proxied'));
  w = await Workload.create(cp.kubeconfig, 'faults', POOL);
}, 300_000);

afterEach(async () => {
  if (op?.alive) await op.stop();
  op = undefined;
});

afterAll(async () => {
  writeSummary(records, { seed: SEED, scale: SCALE, pool: POOL });
  await proxy?.close();
  await cp?.stop();
}, 120_000);

test('a) seeded random SIGKILLs of the operator across a claim run', async () => {
  const total = Math.round(500 * SCALE);
  const rounds = Math.max(1, Math.round(10 * SCALE));
  const perRound = Math.ceil(total / rounds);
  const random = seededRandom(SEED);
  op = await startOperator();
  await w.settle([], 60_000);
  const recoveries: number[] = [];
  let kills = 0;
  let created = 0;
  for (let round = 0; round < rounds && created < total; round++) {
    const batch = names('kill', Math.min(perRound, total - created));
    created += batch.length;
    const creating = w.createClaims(batch, 10);
    // One or two kills per round, at seeded moments of the burst; each replacement starts at once.
    const killsThisRound = 1 + Math.floor(random() * 2);
    let lastKill = Date.now();
    for (let k = 0; k < killsThisRound; k++) {
      await sleep(200 + random() * 1_500);
      await op!.kill();
      kills++;
      lastKill = Date.now();
      op = await startOperator();
    }
    await creating;
    await w.waitServed(batch, 120_000);
    recoveries.push(Date.now() - lastKill);
    await w.deleteAllClaims();
  }
  await checkAndRecord('operator SIGKILL (seeded)', kills, recoveries, [], `${created} claims in ${rounds} rounds, seed ${SEED}`);
  expect(created).toBe(total);
}, 300_000);

test('b) kube-apiserver killed and restarted mid-burst', async () => {
  op = await startOperator();
  const burst = names('apiserver', Math.round(40 * SCALE));
  const creating = w.createClaims(burst.slice(0, burst.length / 2), 10);
  await sleep(1_000);
  await cp.kill('kube-apiserver');
  const killedAt = Date.now();
  await sleep(2_000);
  const restartMs = await cp.restart('kube-apiserver');
  const readyAt = Date.now();
  await creating;
  // The second half arrives only once the API server is back: claims served again after the outage.
  await w.createClaims(burst.slice(burst.length / 2), 10);
  await w.waitServed(burst, 180_000);
  const servedMs = Date.now() - readyAt;
  // eslint-disable-next-line no-console
  console.log(`kube-apiserver down ${readyAt - killedAt} ms (restart took ${restartMs} ms); every claim served ${servedMs} ms after it was ready`);
  await checkAndRecord('kube-apiserver killed and restarted', 1, [servedMs], burst, `outage ${((readyAt - killedAt) / 1000).toFixed(1)} s`);
  await cleanUp();
}, 300_000);
