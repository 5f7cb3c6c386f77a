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
  FaultRecord, OPERATOR_ARGS, ROOT, Violations, Workload, envNumber, holds, kubeconfigFor, quietWindow, retry,
  seededRandom, startFaultCluster, StepLog, writeSummary,
} from './harness';
import { FreezableProxy } from './tcp-proxy';
import { ControlPlane } from '../../tools/control-plane/control-plane';
import { sleep } from '../../tools/control-plane/processes';
import { OperatorProcess, ensureOperatorBundle } from '../../tools/shared/operator-process';

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
async function checkAndRecord(fault: string, injections: number, recoveryMs: number[], claims: string[], notes?: string,
  claimsServed = claims.length): Promise<void> {
  const v: Violations = await w.settle(claims, 120_000);
  const quiet = op?.alive ? await quietWindow(op, QUIET_MS) : { cpuPercent: 0, reconcilesPerSecond: 0, byController: {} };
  const record: FaultRecord = {
    fault,
    injections,
    recoveryMs,
    claims: claimsServed,
    lostClaims: v.notServed.length,
    doubleBound: v.doubleBound.length,
    orphans: v.orphans.length,
    quietCpuPercent: quiet.cpuPercent,
    quietReconcilesPerSecond: quiet.reconcilesPerSecond,
    notes,
  };
  records.push(record);
  // eslint-disable-next-line no-console
  console.log(`${fault}: ${JSON.stringify(record)}; quiet-window reconciles/s by controller: ${JSON.stringify(quiet.byController)}`
    + (v.garbage.length ? `; the garbage collector was not done when it opened: ${v.garbage.length} left (${v.garbage.slice(0, 5).join(', ')})` : ''));
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
  // Each round's claims were all served before they were deleted; what must hold now is the rest.
  await checkAndRecord('operator SIGKILL (seeded)', kills, recoveries, [], `${created} claims in ${rounds} rounds, seed ${SEED}`, created);
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

/** etcd's current revision, through its v3 JSON gateway. */
async function etcdRevision(): Promise<number> {
  const res = await fetch(`${cp.etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/registry').toString('base64'), count_only: true }) });
  return Number(((await res.json()) as any).header.revision);
}

/** Compacts etcd's history up to `revision` (physically: the old revisions are gone for every reader). */
async function compactEtcd(revision: number): Promise<void> {
  const res = await fetch(`${cp.etcdUrl}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: String(revision), physical: true }) });
  if (!res.ok) throw new Error(`etcd compaction at ${revision}: HTTP ${res.status} ${await res.text()}`);
}

test('c) etcd compaction while the operator\'s watches are behind forces 410 Gone relists', async () => {
  // Served from the watch cache, a resumed watch never reaches etcd (the cache keeps its own
  // history), so for this fault kube-apiserver runs without it: watches resume against etcd itself.
  await cp.kill('kube-apiserver');
  await cp.restart('kube-apiserver', { args: ['--watch-cache=false'] });
  try {
    await compactionFault();
  } finally {
    if (op?.alive) await op.stop();
    await cp.kill('kube-apiserver');
    await cp.restart('kube-apiserver');
  }
}, 300_000);

async function compactionFault(): Promise<void> {
  op = await startOperator();
  const before = await op.metrics();
  const gone0 = before.sum('agent_sandbox_informer_watch_restarts_total', { reason: 'gone' });
  const relists0 = before.sum('agent_sandbox_informer_relists_total');
  // The operator's connections stop carrying bytes: its watches fall behind while claims arrive.
  proxy.freeze();
  const claims = names('compact', Math.round(30 * SCALE));
  await w.createClaims(claims, 10);
  const revision = await etcdRevision();
  await compactEtcd(revision);
  // The dead connections are reset: every watch resumes from a revision etcd no longer has.
  const injectedAt = Date.now();
  proxy.reset();
  await w.waitServed(claims, 180_000);
  const recoveryMs = Date.now() - injectedAt;
  const after = await op.metrics();
  const gone = after.sum('agent_sandbox_informer_watch_restarts_total', { reason: 'gone' }) - gone0;
  const relists = after.sum('agent_sandbox_informer_relists_total') - relists0;
  // eslint-disable-next-line no-console
  console.log(`compacted etcd at revision ${revision}: ${gone} watches answered 410 Gone, ${relists} relists; claims served ${recoveryMs} ms after the reset`);
  expect(gone).toBeGreaterThan(0);
  expect(relists).toBeGreaterThan(0);
  await checkAndRecord('etcd compaction (410 Gone relists)', 1, [recoveryMs], claims, `${gone} watches got 410 Gone, ${relists} relists`);
  await cleanUp();
}

test('d) watches that stall without closing (a frozen TCP path) are detected and reopened', async () => {
  op = await startOperator();
  await w.settle([], 60_000);
  const stalled0 = (await op.metrics()).sum('agent_sandbox_informer_watch_restarts_total', { reason: 'stalled' });
  const frozenAt = Date.now();
  const frozen = proxy.freeze();
  // Claims created after the freeze reach the operator only through watches it reopens.
  const claims = names('stall', Math.round(20 * SCALE));
  await w.createClaims(claims, 10);
  await w.waitServed(claims, 240_000);
  const recoveryMs = Date.now() - frozenAt;
  const stalled = (await op.metrics()).sum('agent_sandbox_informer_watch_restarts_total', { reason: 'stalled' }) - stalled0;
  // eslint-disable-next-line no-console
  console.log(`froze ${frozen} connections; ${stalled} stalled watches restarted; claims served ${recoveryMs} ms after the freeze`);
  expect(stalled).toBeGreaterThan(0);
  await checkAndRecord('watch stalled without closing (frozen TCP)', 1, [recoveryMs], claims, `${frozen} connections frozen, ${stalled} watches restarted as stalled`);
  proxy.reset();
  await cleanUp();
}, 300_000);

test('e) leader failover under load: the leader of two replicas is killed mid-burst', async () => {
  const args = ['--leader-elect=true', `--leader-election-namespace=${w.ns}`];
  const a = OperatorProcess.launch({ kubeconfig: proxiedKubeconfig, args: [...OPERATOR_ARGS, ...args] });
  await a.waitForLog((l) => l.msg === 'acquired the leader lease', 60_000, 'replica a to lead');
  const b = OperatorProcess.launch({ kubeconfig: proxiedKubeconfig, args: [...OPERATOR_ARGS, ...args] });
  await b.waitForLog((l) => l.msg === 'waiting to acquire the leader lease', 60_000, 'replica b to stand by');
  op = b;
  try {
    await w.settle([], 60_000);
    const claims = names('failover', Math.round(40 * SCALE));
    const creating = w.createClaims(claims, 10);
    await sleep(1_000);
    await a.kill();
    const killedAt = Date.now();
    const acquired = await b.waitForLog((l) => l.msg === 'acquired the leader lease', 60_000, 'replica b to take over');
    await creating;
    await w.waitServed(claims, 180_000);
    const recoveryMs = Date.now() - killedAt;
    // eslint-disable-next-line no-console
    console.log(`leader killed: the standby led after ${acquired.receivedAt - killedAt} ms; every claim served ${recoveryMs} ms after the kill`);
    await checkAndRecord('leader killed mid-burst (2 replicas)', 1, [recoveryMs], claims, `standby took over after ${((acquired.receivedAt - killedAt) / 1000).toFixed(1)} s`);
    await cleanUp();
  } finally {
    await a.kill();
  }
}, 300_000);

test('f) the operator\'s wall clock steps an hour forward and back while claims expire and arrive', async () => {
  const offsetFile = path.join(workDir, 'clock-offset-ms');
  fs.writeFileSync(offsetFile, '0');
  op = await startOperator(['--leader-elect=true', `--leader-election-namespace=${w.ns}`], { [TEST_CLOCK_ENV]: offsetFile });
  const running = op;
  // Printed whatever happens: a step that ran into its limit shows which one, and how long the others took.
  const steps = new StepLog('clock steps');
  try {
    const expiring = names('expire', Math.round(10 * SCALE));
    const kept = names('keep', Math.round(20 * SCALE));
    const shutdownTime = new Date(Date.now() + 40_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await steps.run('first claims served', async () => {
      await w.createClaims(expiring, 10, { lifecycle: { shutdownTime, shutdownPolicy: 'Delete' } });
      await w.createClaims(kept, 10);
      await w.waitServed([...expiring, ...kept], 120_000);
    });

    // An hour forward, with claims arriving: the expiring claims are past shutdownTime for the
    // operator now, and a leader must not mistake the step for a missed renew deadline.
    fs.writeFileSync(offsetFile, String(3_600_000));
    const steppedAt = Date.now();
    const duringForward = names('keep', Math.round(20 * SCALE));
    const expired = async () => {
      const claims = (await w.snapshot()).claims.map((c) => c.metadata.name);
      return expiring.every((n) => !claims.includes(n));
    };
    const CREATED = 'agent_sandbox_warmpool_sandboxes_created_total';
    const created = async () => {
      const metrics = await running.metrics();
      // A renamed metric would read 0 and pass the bound below without testing anything.
      if (!metrics.has(CREATED)) throw new Error(`the operator exports no ${CREATED}`);
      return metrics.sum(CREATED);
    };
    const createdBefore = await created();
    await steps.run('+1 h: expiring claims deleted', async () => {
      await w.createClaims(duringForward, 10);
      await retry(async () => {
        if (!(await expired())) throw new Error('expiring claims still there');
      }, 120_000, 'the expiring claims to be deleted');
    });
    const expiredAfterMs = Date.now() - steppedAt;
    await steps.run('+1 h: claims served', () => w.waitServed([...kept, ...duringForward], 120_000));
    // At least 15 s an hour ahead: long enough that members judged by their timestamps alone (every
    // new one an hour old, stuck at birth) would be replaced over and over, well past this bound.
    await sleep(Math.max(0, steppedAt + 15_000 - Date.now()));
    const createdForward = (await created()) - createdBefore;
    expect(createdForward).toBeLessThanOrEqual(duringForward.length + POOL);
    // And the pool did refill what the claims took meanwhile: it was not just held.
    expect(createdForward).toBeGreaterThan(0);

    // And back (an hour's step backwards): claims keep being served, nothing waits out the hour.
    fs.writeFileSync(offsetFile, '0');
    const steppedBackAt = Date.now();
    const duringBack = names('keep', Math.round(20 * SCALE));
    await steps.run('back: claims served', async () => {
      await w.createClaims(duringBack, 10);
      await w.waitServed([...kept, ...duringForward, ...duringBack], 120_000);
    });
    const servedAfterBackMs = Date.now() - steppedBackAt;
    // eslint-disable-next-line no-console
    console.log(`clock +1 h: expiring claims gone after ${expiredAfterMs} ms, ${createdForward} pool members made meanwhile; `
      + `clock -1 h: new claims served after ${servedAfterBackMs} ms`);
    expect(running.alive).toBe(true);
    expect(running.lines.some((l) => l.msg === 'lost the leader lease')).toBe(false);
    await steps.run('settled and recorded', () => checkAndRecord('wall clock stepped +1 h and back', 2, [expiredAfterMs, servedAfterBackMs],
      [...kept, ...duringForward, ...duringBack], `expiring claims (shutdownTime 40 s ahead) deleted ${(expiredAfterMs / 1000).toFixed(1)} s after the +1 h step`));
    await steps.run('cleaned up', cleanUp);
  } finally {
    steps.print();
  }
}, 300_000);
