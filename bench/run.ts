/**
 * npm run bench (for now: npx ts-node --transpile-only bench/run.ts [flags])
 *
 * Runs each scenario against our operator and the upstream Go controller, alternating, each run on
 * a fresh local control plane (or, with --kubeconfig, a fresh namespace of a running cluster that is
 * deleted and waited for afterwards), plus the floor for the warm scenarios. Writes
 * bench/results/<id>.json, .md and .png (see report.ts); controller logs and profiles go to
 * test-results/bench/<id>/.
 *
 * Flags: --scenarios burst,cold,refill,sustained,soak,router,agent (soak: bench/scenarios/soak.ts, ours only unless --controllers
 *        is given, with --duration 60m (a duration: 3m, 90s, 1h; seconds when bare), --rates 20 (the first rate), --ttl 30 (s),
 *        --window 300 (s), --sample 10 (s), --delete-every 10, --drain 180 (s), --headroom 5;
 *        router: bench/data-plane/router.ts, with --duration, --warmup, --concurrency;
 *        agent: bench/data-plane/agent.ts, the SDK vs bare HTTP, with --repeats, --replicas)  --size 300  --cold-size 100  --rates 45,100
 *        --duration 60  --headroom 5  --pod-ready-delay-ms 0,500  --controllers ours,upstream
 *        (add floor, or use only floor, in --controllers)  --no-floor  --repeat 1  --nodes 3  --timeout-s 180  --out bench/results  --kubeconfig KC
 *        --cpu-prof (ours under node --cpu-prof; profiles next to the results)  --node-flags "--flag ..." (more node flags for ours)  --ours-flags "--flag=v ..." (more operator flags for ours)  --flags "--flag=v ..." (more flags for both controllers)  --smoke
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { connectionFromKubeconfig } from '../tools/control-plane/api';
import { ControlPlane, startControlPlane } from '../tools/control-plane/control-plane';
import { Kube, waitFor } from '../tools/control-plane/kube';
import { BenchClient } from './client';
import { writeCrds } from './crds';
import { ControllerName, DEFAULT_SETTINGS, ensureOperatorBundle, ROOT, RunningController, sharedFlags, startController, upstreamBinary } from './controllers';
import { agentBench } from './data-plane/agent';
import { flagValue } from './flags';
import { main as routerBench } from './data-plane/router';
import { FloorAdopter } from './floor';
import { BenchRun, environment, writeReport } from './report';
import { burst } from './scenarios/burst';
import { cold } from './scenarios/cold';
import { ScenarioContext, ScenarioResult } from './scenarios/common';
import { refill } from './scenarios/refill';
import { parseDurationS, soak, SOAK_DEFAULTS, SoakOptions } from './scenarios/soak';
import { sustained } from './scenarios/sustained';

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
}

export function parseArgs(argv: string[]): Options {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const has = (name: string) => argv.includes(`--${name}`);
  const list = (name: string, dflt: string) => (get(name) ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
  const smoke = has('smoke');
  const soakOnly = (get('scenarios') ?? '').split(',').every((s) => s.trim() === 'soak');
  const o: Options = {
    scenarios: list('scenarios', smoke ? 'burst,cold' : 'burst,cold,refill,sustained'),
    size: Number(get('size') ?? (smoke ? 5 : 300)),
    coldSize: Number(get('cold-size') ?? (smoke ? 3 : 100)),
    rates: list('rates', smoke ? '5' : '45,100').map(Number),
    durationS: parseDurationS(get('duration') ?? (smoke ? '2' : '60')),
    headroomS: Number(get('headroom') ?? 5),
    podReadyDelays: list('pod-ready-delay-ms', smoke || soakOnly ? '0' : '0,500').map(Number),
    controllers: list('controllers', soakOnly ? 'ours' : 'ours,upstream') as Array<'ours' | 'upstream'>,
    floor: !has('no-floor'),
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
  for (const s of o.scenarios) if (!['burst', 'cold', 'refill', 'sustained', 'soak', 'router', 'agent'].includes(s)) throw new Error(`unknown scenario ${s}`);
  // `--controllers floor` (or `ours,floor`): the floor is listed like a controller.
  if ((o.controllers as string[]).includes('floor')) {
    o.controllers = o.controllers.filter((c) => (c as string) !== 'floor');
    o.floor = true;
  }
  for (const c of o.controllers) if (c !== 'ours' && c !== 'upstream') throw new Error(`unknown controller ${c}`);
  return o;
}

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
          const warm = s === 'burst' || s === 'sustained';
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
      floor = new FloorAdopter(new BenchClient(connectionFromKubeconfig(kubeconfig), 128), ns);
    } else {
      ctrl = await startController(job.controller, {
        kubeconfig, settings: DEFAULT_SETTINGS, logDir: path.join(runDir, 'logs'), upstreamBin,
        nodeFlags: job.controller === 'ours'
          ? [...o.nodeFlags, ...(o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles')}`] : [])]
          : undefined,
        oursFlags: o.oursFlags,
        bothFlags: o.bothFlags,
      });
    }
    const pids: Record<string, number> = {};
    for (const p of cp?.processes ?? []) pids[p.name] = p.pid;
    const ctx: ScenarioContext = { client, ns, pid: ctrl?.pid, controlPlanePids: pids, log, timeoutMs: o.timeoutMs };
    const setup = floor?.setup;
    let result: ScenarioResult;
    switch (job.scenario) {
      case 'burst': result = await burst(ctx, o.size, setup); break;
      case 'cold': result = await cold(ctx, o.coldSize); break;
      case 'refill': result = await refill(ctx, o.size); break;
      case 'soak': result = await soak(ctx, o.soak, Math.ceil(o.soak.rate * o.headroomS)); break;
      default: result = await sustained(ctx, job.rate!, o.durationS, Math.ceil(job.rate! * o.headroomS), setup);
    }
    if (floor?.conflicts) result.notes.push(`floor: ${floor.conflicts} adoption conflicts retried`);
    if (client.watchRestarts) result.notes.push(`the harness's watches were resumed ${client.watchRestarts} time(s) (ended by the apiserver)`);
    return {
      ...result, controller: job.controller, loadAverage1m: { atStart: load0, atEnd: Math.round(os.loadavg()[0] * 100) / 100 }, podReadyDelayMs: job.delay, repeat: job.repeat,
      command: ctrl?.command.map((a) => a.replace(kubeconfig!, '<kubeconfig>')), version: ctrl?.version,
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
    const flags = [...(o.smoke ? ['--smoke'] : []), ...(o.cpuProf ? ['--cpu-prof'] : []), '--out', o.out, ...passThrough(argv, ['duration', 'warmup', 'concurrency'])];
    routerFailed = (await routerBench(flags)) !== 0;
    o.scenarios = o.scenarios.filter((s) => s !== 'router');
    if (!o.scenarios.length) return routerFailed ? 1 : 0;
  }
  // `agent` measures the SDK (claim → first result, SDK vs bare HTTP): bench/data-plane/agent.ts.
  if (o.scenarios.includes('agent')) {
    routerFailed = (await agentBench([...(o.smoke ? ['--smoke'] : []), '--out', o.out, ...passThrough(argv, ['repeats', 'replicas'])])) !== 0 || routerFailed;
    o.scenarios = o.scenarios.filter((s) => s !== 'agent');
    if (!o.scenarios.length) return routerFailed ? 1 : 0;
  }
  const id = `${o.scenarios.every((s) => s === 'soak') ? 'soak-' : ''}${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  // Controller logs and CPU profiles: kept for inspection, never committed.
  const runDir = path.join(ROOT, 'test-results', 'bench', id);
  fs.mkdirSync(runDir, { recursive: true });
  ensureOperatorBundle();
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
      log(`${label}: ${c ? `${c.ready}/${c.created} Ready, p50 ${c.latencyMs.p50} p99 ${c.latencyMs.p99} max ${c.latencyMs.max} ms, ${c.claimsPerSecond} claims/s` : `${run.refill!.sandboxes} Ready in ${run.refill!.seconds} s = ${run.refill!.sandboxesPerSecond}/s`}${run.notes.length ? ` (${run.notes.join('; ')})` : ''}`);
    } catch (e) {
      log(`${label}: FAILED: ${(e as Error).message}`);
      runs.push({ scenario: job.scenario + (job.rate ? `-${job.rate}` : ''), controller: job.controller, podReadyDelayMs: job.delay, repeat: job.repeat, params: {}, notes: [], error: (e as Error).message } as any);
    }
  }
  const settings = {
    ...DEFAULT_SETTINGS,
    sharedFlags: sharedFlags(DEFAULT_SETTINGS, '<kubeconfig>', 0, 0).filter((f) => !/bind-address/.test(f)),
    upstreamOnly: ['--enable-webhook=false', '--manage-webhook-certs=false'],
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
