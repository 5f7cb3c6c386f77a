/**
 * npm run bench (for now: npx ts-node --transpile-only bench/run.ts [flags])
 *
 * Runs each scenario against our operator and the upstream Go controller, alternating, each run on
 * a fresh local control plane (or, with --kubeconfig, a fresh namespace of a running cluster that is
 * deleted and waited for afterwards), plus the floor for the warm scenarios. Writes
 * bench/results/<id>.json, .md and .png (see report.ts); controller logs and profiles go to
 * test-results/bench/<id>/.
 *
 * Flags: --scenarios burst,cold,refill,sustained,sequential,paced,capacity,soak,router,agent (sequential: --sequential-count 50 claims one
 *        after another; paced: --paced-rate 20 claims/s for --paced-duration 60 s on a pool covering them; capacity:
 *        bench/scenarios/capacity.ts, --capacity-rates 5,10,15,20,25,30,40 --capacity-step 40 (s) --capacity-warmup 10 (s)
 *        --capacity-hold 2 (s) --capacity-pool 20 --capacity-p99-ms 1000, ours and upstream only; scale: bench/scenarios/scale.ts,
 *        --scale-sandboxes 10000 --scale-pools 1000 --scale-rate 10 --scale-duration 60 (give --nodes 100), not in the default set; soak: bench/scenarios/soak.ts, ours only unless --controllers
 *        is given, with --duration 60m (a duration: 3m, 90s, 1h; seconds when bare), --rates 20 (the first rate), --ttl 30 (s),
 *        --window 300 (s), --sample 10 (s), --delete-every 10, --drain 180 (s), --headroom 5;
 *        router: bench/data-plane/router.ts (ours, upstream's Go router and direct to a Go backend), with --duration, --warmup, --concurrency, --sandboxes, --workers;
 *        agent: bench/data-plane/agent.ts, the SDK vs bare HTTP, with --repeats, --replicas, --concurrency (as router's, when both run), --no-python;
 *        mcp: bench/data-plane/mcp.ts, a tool call through the MCP server vs the SDK, with --calls, --warmup-calls, --file-pairs)  --size 300  --cold-size 100  --rates 45,100
 *        --duration 60  --headroom 5  --pod-ready-delay-ms 0,500  --controllers ours,upstream
 *        (add floor, or use only floor, in --controllers)  --no-floor  --floor-refills (the floor creates a replacement Sandbox and Pod per claim)  --repeat 1  --nodes 3  --timeout-s 180  --out bench/results  --kubeconfig KC
 *        --cpu-prof (ours under node --cpu-prof; profiles next to the results)  --node-flags "--flag ..." (more node flags for ours)  --ours-flags "--flag=v ..." (more operator flags for ours)  --flags "--flag=v ..." (more flags for both controllers)  --smoke
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BenchClient } from './client';
import { ControllerName, DEFAULT_SETTINGS, ROOT, RunningController, sharedFlags, startController, upstreamBinary, upstreamOnlyFlags } from './controllers';
import { agentBench } from './data-plane/agent';
import { mcpBench } from './data-plane/mcp';
import { main as routerBench } from './data-plane/router';
import { flagValue } from './flags';
import { FloorAdopter } from './floor';
import { BenchRun, environment, writeReport } from './report';
import { burst } from './scenarios/burst';
import { capacity, CAPACITY_DEFAULTS, CapacityOptions } from './scenarios/capacity';
import { cold } from './scenarios/cold';
import { ScenarioContext, ScenarioResult } from './scenarios/common';
import { paced } from './scenarios/paced';
import { refill } from './scenarios/refill';
import { scale, SCALE_DEFAULTS, ScaleOptions } from './scenarios/scale';
import { sequential } from './scenarios/sequential';
import { parseDurationS, soak, SOAK_DEFAULTS, SoakOptions } from './scenarios/soak';
import { sustained } from './scenarios/sustained';
import { connectionFromKubeconfig } from '../tools/control-plane/api';
import { ControlPlane, startControlPlane } from '../tools/control-plane/control-plane';
import { Kube, waitFor } from '../tools/control-plane/kube';
import { writeCrds } from '../tools/shared/crds';
import { ensureOperatorBundle } from '../tools/shared/operator-process';

export interface Options {
  scenarios: string[];
  size: number;
  coldSize: number;
  rates: number[];
  durationS: number;
  headroomS: number;
  podReadyDelays: number[];
  controllers: Array<'ours' | 'upstream'>;
  floor: boolean;
  /** The floor also refills: a replacement Sandbox and its Pod per claim served (bench/floor.ts). */
  floorRefills: boolean;
  repeat: number;
  nodes: number;
  timeoutMs: number;
  out: string;
  kubeconfig?: string;
  cpuProf: boolean;
  nodeFlags: string[];
  oursFlags: string[];
  bothFlags: string[];
  smoke: boolean;
  plot: boolean;
  soak: SoakOptions;
  sequentialCount: number;
  pacedRate: number;
  pacedDurationS: number;
  capacity: CapacityOptions;
  scale: ScaleOptions;
}

export function parseArgs(argv: string[]): Options {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const has = (name: string) => argv.includes(`--${name}`);
  const list = (name: string, dflt: string) => (get(name) ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
  const smoke = has('smoke');
  const soakOnly = (get('scenarios') ?? '').split(',').every((s) => s.trim() === 'soak');
  const o: Options = {
    scenarios: list('scenarios', smoke ? 'burst,cold,sequential,paced,capacity,scale' : 'burst,cold,refill,sustained,sequential,paced,capacity'),
    size: Number(get('size') ?? (smoke ? 5 : 300)),
    coldSize: Number(get('cold-size') ?? (smoke ? 3 : 100)),
    rates: list('rates', smoke ? '5' : '45,100').map(Number),
    durationS: parseDurationS(get('duration') ?? (smoke ? '2' : '60')),
    headroomS: Number(get('headroom') ?? 5),
    podReadyDelays: list('pod-ready-delay-ms', smoke || soakOnly ? '0' : '0,500').map(Number),
    controllers: list('controllers', soakOnly ? 'ours' : 'ours,upstream') as Array<'ours' | 'upstream'>,
    floor: !has('no-floor'),
    floorRefills: has('floor-refills'),
    repeat: Number(get('repeat') ?? 1),
    nodes: Number(get('nodes') ?? 3),
    timeoutMs: Number(get('timeout-s') ?? (smoke ? 60 : 180)) * 1000,
    out: path.resolve(get('out') ?? path.join(ROOT, smoke ? 'test-results/bench-smoke' : 'bench/results')),
    kubeconfig: get('kubeconfig'),
    cpuProf: has('cpu-prof'),
    nodeFlags: (get('node-flags') ?? '').split(' ').filter(Boolean),
    oursFlags: (get('ours-flags') ?? '').split(' ').filter(Boolean),
    bothFlags: (get('flags') ?? '').split(' ').filter(Boolean),
    smoke,
    plot: !has('no-plot') && !smoke,
    sequentialCount: Number(get('sequential-count') ?? (smoke ? 5 : 50)),
    pacedRate: Number(get('paced-rate') ?? (smoke ? 5 : 20)),
    pacedDurationS: parseDurationS(get('paced-duration') ?? (smoke ? '2' : '60')),
    capacity: {
      rates: list('capacity-rates', smoke ? '2,4' : CAPACITY_DEFAULTS.rates.join(',')).map(Number),
      stepS: parseDurationS(get('capacity-step') ?? (smoke ? '8' : String(CAPACITY_DEFAULTS.stepS))),
      warmupS: parseDurationS(get('capacity-warmup') ?? (smoke ? '3' : String(CAPACITY_DEFAULTS.warmupS))),
      holdS: Number(get('capacity-hold') ?? CAPACITY_DEFAULTS.holdS),
      pool: Number(get('capacity-pool') ?? (smoke ? 4 : CAPACITY_DEFAULTS.pool)),
      p99LimitMs: Number(get('capacity-p99-ms') ?? CAPACITY_DEFAULTS.p99LimitMs),
    },
    scale: {
      sandboxes: Number(get('scale-sandboxes') ?? (smoke ? 40 : SCALE_DEFAULTS.sandboxes)),
      pools: Number(get('scale-pools') ?? (smoke ? 10 : SCALE_DEFAULTS.pools)),
      rate: Number(get('scale-rate') ?? (smoke ? 2 : SCALE_DEFAULTS.rate)),
      durationS: parseDurationS(get('scale-duration') ?? (smoke ? '5' : String(SCALE_DEFAULTS.durationS))),
      holdS: SCALE_DEFAULTS.holdS,
    },
    soak: {
      rate: Number(get('rates')?.split(',')[0] ?? SOAK_DEFAULTS.rate),
      durationS: get('duration') ? parseDurationS(get('duration')!) : SOAK_DEFAULTS.durationS,
      ttlS: Number(get('ttl') ?? SOAK_DEFAULTS.ttlS),
      windowS: Number(get('window') ?? SOAK_DEFAULTS.windowS),
      sampleS: Number(get('sample') ?? SOAK_DEFAULTS.sampleS),
      deleteEvery: Number(get('delete-every') ?? SOAK_DEFAULTS.deleteEvery),
      drainS: Number(get('drain') ?? SOAK_DEFAULTS.drainS),
    },
  };
  for (const s of o.scenarios) if (!['burst', 'cold', 'refill', 'sustained', 'sequential', 'paced', 'capacity', 'scale', 'soak', 'router', 'agent', 'mcp'].includes(s)) throw new Error(`unknown scenario ${s}`);
  const steps = o.capacity.rates;
  if (steps.some((r) => !(r > 0)) || steps.some((r, i) => i > 0 && r <= steps[i - 1])) throw new Error(`--capacity-rates: give ascending rates above 0, e.g. 5,10,20 (got ${steps.join(',')})`);
  if (!(o.capacity.warmupS < o.capacity.stepS)) throw new Error(`--capacity-warmup (${o.capacity.warmupS} s) must be shorter than --capacity-step (${o.capacity.stepS} s)`);
  // `--controllers floor` (or `ours,floor`): the floor is listed like a controller.
  if ((o.controllers as string[]).includes('floor')) {
    o.controllers = o.controllers.filter((c) => (c as string) !== 'floor');
    o.floor = true;
  }
  for (const c of o.controllers) if (c !== 'ours' && c !== 'upstream') throw new Error(`unknown controller ${c}`);
  return o;
}

const has = (argv: string[], name: string): boolean => argv.includes(`--${name}`);

/** `--name value` / `--name=value` pairs of `names` from argv, as they were given. */
function passThrough(argv: string[], names: string[]): string[] {
  const out: string[] = [];
  argv.forEach((a, i) => {
    const name = names.find((n) => a === `--${n}` || a.startsWith(`--${n}=`));
    if (name) out.push(...(a.includes('=') ? [a] : [a, argv[i + 1]]));
  });
  return out;
}

const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Job { scenario: string; rate?: number; controller: ControllerName; delay: number; repeat: number }

export function plan(o: Options): Job[] {
  const jobs: Job[] = [];
  let flip = false;
  for (let r = 0; r < o.repeat; r++) {
    for (const delay of o.podReadyDelays) {
      for (const s of o.scenarios) {
        for (const rate of s === 'sustained' ? o.rates : [undefined]) {
          // Alternate which controller goes first, so neither always runs on a cooler machine.
          const order = flip ? [...o.controllers].reverse() : [...o.controllers];
          flip = !flip;
          const warm = s === 'burst' || s === 'sustained' || s === 'sequential' || s === 'paced';
          for (const controller of [...order, ...(warm && o.floor ? ['floor' as const] : [])]) jobs.push({ scenario: s, rate, controller, delay, repeat: r });
        }
      }
    }
  }
  return jobs;
}

async function runJob(o: Options, job: Job, crds: string, upstreamBin: string | undefined, runDir: string): Promise<BenchRun> {
  let cp: ControlPlane | undefined;
  let kubeconfig = o.kubeconfig;
  const t0 = Date.now();
  if (!kubeconfig) {
    cp = await startControlPlane({ nodes: o.nodes, podReadyDelayMs: job.delay, benchmarkMode: true, manifests: [crds], log: () => undefined });
    kubeconfig = cp.kubeconfig;
  }
  const controlPlaneStartSeconds = (Date.now() - t0) / 1000;
  // Other work on the machine shows up here (2 cores are shared with everything else running).
  const load0 = Math.round(os.loadavg()[0] * 100) / 100;
  const client = new BenchClient(connectionFromKubeconfig(kubeconfig), 128);
  const kube = new Kube({ kubeconfig, binDir: cp?.binDir ?? path.dirname(upstreamBin ?? '') });
  let ctrl: RunningController | undefined;
  let ctrlStartOptions: Parameters<typeof startController>[1] | undefined;
  let floor: FloorAdopter | undefined;
  // Ctrl-C / SIGTERM: stop what this run started (by pid), then exit.
  const onSignal = () => {
    log('interrupted: stopping the controller and the control plane');
    void Promise.resolve(ctrl?.stop()).then(() => cp?.stop()).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const ns = await kube.createNamespace(`bench-${job.scenario}-${job.controller}`);
  try {
    if (job.controller === 'floor') {
      floor = new FloorAdopter(new BenchClient(connectionFromKubeconfig(kubeconfig), 128), ns, o.floorRefills);
    } else {
      ctrlStartOptions = {
        kubeconfig,
        settings: DEFAULT_SETTINGS,
        logDir: path.join(runDir, 'logs'),
        upstreamBin,
        nodeFlags: job.controller === 'ours'
          ? [...o.nodeFlags, ...(o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles')}`] : [])]
          : undefined,
        oursFlags: o.oursFlags,
        bothFlags: o.bothFlags,
      };
      ctrl = await startController(job.controller, ctrlStartOptions);
    }
    const pids: Record<string, number> = {};
    for (const p of cp?.processes ?? []) pids[p.name] = p.pid;
    const restart = ctrl && ctrlStartOptions ? async () => {
      await ctrl!.stop();
      const t = Date.now();
      ctrl = await startController(job.controller as 'ours' | 'upstream', ctrlStartOptions!);
      return { pid: ctrl.pid, startSeconds: (Date.now() - t) / 1000 };
    } : undefined;
    const ctx: ScenarioContext = { client, ns, pid: ctrl?.pid, controlPlanePids: pids, log, timeoutMs: o.timeoutMs, ...(restart ? { restart } : {}) };
    const setup = floor?.setup;
    let result: ScenarioResult;
    switch (job.scenario) {
      case 'burst': result = await burst(ctx, o.size, setup); break;
      case 'cold': result = await cold(ctx, o.coldSize); break;
      case 'refill': result = await refill(ctx, o.size); break;
      case 'soak': result = await soak(ctx, o.soak, Math.ceil(o.soak.rate * o.headroomS)); break;
      case 'sequential': result = await sequential(ctx, o.sequentialCount, setup); break;
      case 'paced': result = await paced(ctx, o.pacedRate, o.pacedDurationS, setup); break;
      case 'capacity': result = await capacity(ctx, o.capacity); break;
      case 'scale': result = await scale(ctx, o.scale); break;
      default: result = await sustained(ctx, job.rate!, o.durationS, Math.ceil(job.rate! * o.headroomS), setup);
    }
    if (floor?.conflicts) result.notes.push(`floor: ${floor.conflicts} adoption conflicts retried`);
    if (floor && o.floorRefills) result.notes.push(`floor: refilling, ${floor.refilled} replacement Sandboxes and Pods created`);
    if (client.watchRestarts) result.notes.push(`the harness's watches were resumed ${client.watchRestarts} time(s) (ended by the apiserver)`);
    return {
      ...result,
      controller: job.controller,
      loadAverage1m: { atStart: load0, atEnd: Math.round(os.loadavg()[0] * 100) / 100 },
      podReadyDelayMs: job.delay,
      repeat: job.repeat,
      command: ctrl?.command.map((a) => a.replace(kubeconfig!, '<kubeconfig>')),
      version: ctrl?.version,
      controlPlaneStartSeconds: Math.round(controlPlaneStartSeconds * 10) / 10,
    };
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    floor?.stop();
    await ctrl?.stop();
    if (cp) {
      await cp.stop();
    } else {
      // A shared cluster: delete the namespace and wait until it is gone, so nothing of this run
      // is left for the next controller to see (both watch all namespaces).
      await kube.deleteNamespace(ns);
      await waitFor(async () => !(await kube.tryGetJson(['namespace', ns])), 300_000, `namespace ${ns} to be deleted`);
    }
    client.close();
  }
}

export async function main(argv: string[]): Promise<number> {
  const o = parseArgs(argv);
  // `router` measures the data plane (router vs direct to the runtime), not the controllers: its
  // own harness and report (bench/data-plane/router.ts), run before the controller scenarios.
  let routerFailed = false;
  if (o.scenarios.includes('router')) {
    const flags = [...(o.smoke ? ['--smoke'] : []), ...(o.cpuProf ? ['--cpu-prof'] : []), '--out', o.out, ...passThrough(argv, ['duration', 'warmup', 'concurrency', 'sandboxes', 'workers', 'cases', 'router-flags']),
      ...(has(argv, 'hold') ? ['--hold'] : [])];
    routerFailed = (await routerBench(flags)) !== 0;
    o.scenarios = o.scenarios.filter((s) => s !== 'router');
    if (!o.scenarios.length) return routerFailed ? 1 : 0;
  }
  // `agent` measures the SDK (claim → first result, SDK vs bare HTTP): bench/data-plane/agent.ts.
  if (o.scenarios.includes('agent')) {
    const agentFlags = [...(o.smoke ? ['--smoke'] : []), ...(has(argv, 'no-python') ? ['--no-python'] : []), '--out', o.out, ...passThrough(argv, ['repeats', 'replicas', 'concurrency'])];
    routerFailed = (await agentBench(agentFlags)) !== 0 || routerFailed;
    o.scenarios = o.scenarios.filter((s) => s !== 'agent');
    if (!o.scenarios.length) return routerFailed ? 1 : 0;
  }
  // `mcp` measures the MCP server (a tool call through it vs the SDK's own): bench/data-plane/mcp.ts.
  if (o.scenarios.includes('mcp')) {
    routerFailed = (await mcpBench([...(o.smoke ? ['--smoke'] : []), '--out', o.out, ...passThrough(argv, ['calls', 'warmup-calls', 'file-pairs'])])) !== 0 || routerFailed;
    o.scenarios = o.scenarios.filter((s) => s !== 'mcp');
    if (!o.scenarios.length) return routerFailed ? 1 : 0;
  }
  const id = `${o.scenarios.every((s) => s === 'soak') ? 'soak-' : ''}${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  // Controller logs and CPU profiles: kept for inspection, never committed.
  const runDir = path.join(ROOT, 'test-results', 'bench', id);
  fs.mkdirSync(runDir, { recursive: true });
  await ensureOperatorBundle(log);
  const upstreamBin = o.controllers.includes('upstream') ? upstreamBinary() : undefined;
  const crds = writeCrds();
  const jobs = plan(o);
  log(`${jobs.length} runs: ${jobs.map((j) => `${j.scenario}${j.rate ? `@${j.rate}/s` : ''}/${j.controller}/delay=${j.delay}`).join(', ')}`);
  const runs: BenchRun[] = [];
  const started = Date.now();
  for (const job of jobs) {
    const label = `${job.scenario}${job.rate ? `@${job.rate}/s` : ''} ${job.controller} delay=${job.delay}ms`;
    log(`${label}: start`);
    try {
      const run = await runJob(o, job, crds, upstreamBin, runDir);
      runs.push(run);
      const c = run.claims;
      const s = run.soak;
      if (s) log(`${label}: ${s.passed ? 'passed' : 'FAILED'}: leaks ${s.leaks.total}, RSS ${s.rss.startMiB} → ${s.rss.endMiB} MiB (peak ${s.rss.peakMiB})`);
      const summary = c ? `${c.ready}/${c.created} Ready, p50 ${c.latencyMs.p50} p99 ${c.latencyMs.p99} max ${c.latencyMs.max} ms, ${c.claimsPerSecond} claims/s`
        : run.refill ? `${run.refill.sandboxes} Ready in ${run.refill.seconds} s = ${run.refill.sandboxesPerSecond}/s`
          : run.capacity ? `capacity ${run.capacity.capacity} claims/s over ${run.capacity.steps.length} step(s)` : 'done';
      log(`${label}: ${summary}${run.notes.length ? ` (${run.notes.join('; ')})` : ''}`);
    } catch (e) {
      log(`${label}: FAILED: ${(e as Error).message}`);
      runs.push({ scenario: job.scenario + (job.rate ? `-${job.rate}` : ''), controller: job.controller, podReadyDelayMs: job.delay, repeat: job.repeat, params: {}, notes: [], error: (e as Error).message } as any);
    }
  }
  const settings = {
    ...DEFAULT_SETTINGS,
    sharedFlags: sharedFlags(DEFAULT_SETTINGS, '<kubeconfig>', 0, 0).filter((f) => !/bind-address/.test(f)),
    upstreamOnly: upstreamBin ? upstreamOnlyFlags(upstreamBin) : [],
    controlPlane: o.kubeconfig ? 'a running cluster, a fresh namespace per run' : `a fresh control plane per run: startControlPlane({ nodes: ${o.nodes}, podReadyDelayMs, benchmarkMode: true, CRDs applied before kube-controller-manager }); API Priority and Fairness on (the harness and both controllers use the admin client certificate, so their requests are exempt)`,
  };
  const files = writeReport({ id, options: o, settings, environment: environment(upstreamBin), runs, totalSeconds: Math.round((Date.now() - started) / 1000) }, o.out, o.plot);
  log(`wrote ${files.join(', ')}`);
  // A soak passes on leaks and RSS alone: its claims may expire before they are Ready.
  const failed = (r: any) => r.error || (r.soak ? !r.soak.passed : (r.claims && r.claims.ready < r.claims.created) || (r.refill && !r.refill.completed));
  return routerFailed || runs.some(failed) ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    log(`fatal: ${(e as Error).stack}`);
    process.exit(2);
  });
}
