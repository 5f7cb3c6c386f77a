/**
 * The SDK's cost: `npm run bench -- --scenarios agent` (or
 * `npx ts-node --transpile-only bench/data-plane/agent.ts [flags]`).
 *
 * The whole system on a fresh local control plane (tools/shared/local-system.ts: operator, router
 * with --auth=none, the pod runner running each sandbox Pod's runtime as a local process, a warm pool
 * of `--replicas`). An agent's first moments, claim → first `run("echo ok")` result → close, timed
 * from the claim to that result: through the TypeScript SDK, and as the same steps in bare HTTP calls
 * (the floor), sequentially (one agent, `--replicas` claims) and with `--concurrency` agents at once,
 * alternating which way goes first, each batch from a full pool (bench/data-plane/agent-driver/driver.ts).
 * With upstream's Python SDK 1.0.8 as a third way (its venv from hack/python-sdk-venv.sh; `--no-python`
 * leaves it out). Reported: p50/p99 per way, the SDK's overhead over the floor (the goal: ≤ 5 ms at
 * p50) and whether it is ahead of the Python SDK at p50 and p99.
 *
 * Results: bench/results/agent-<id>.json and .md. Flags: --repeats 3  --replicas 10
 * --concurrency 1,10  --no-python  --out bench/results  --smoke (1 repeat, 3 replicas, concurrency 1,3, no python)
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { NAMESPACE, startLocalSystem } from '../../tools/shared/local-system';
import { ROOT } from '../controllers';
import { flagValue } from '../flags';
import { load, Load, loadText, round, stats, Stats } from '../measure';
import { environment } from '../report';

const POOL = 'agent-bench';
const DRIVER = path.join(__dirname, 'agent-driver', 'driver.ts');
const DRIVER_BUNDLE = path.join(ROOT, 'test-results', 'bench', 'agent-driver.mjs');
/** The goal: the SDK adds at most this much at p50 over the bare HTTP calls. */
const GOAL_OVERHEAD_P50_MS = 5;

export interface AgentBenchOptions {
  repeats: number;
  replicas: number;
  concurrency: number[];
  out: string;
  smoke: boolean;
  python: boolean;
}

export function parseAgentBenchArgs(argv: string[]): AgentBenchOptions {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const smoke = argv.includes('--smoke');
  const o: AgentBenchOptions = {
    repeats: Number(get('repeats') ?? (smoke ? 1 : 3)),
    replicas: Number(get('replicas') ?? (smoke ? 3 : 10)),
    concurrency: (get('concurrency') ?? (smoke ? '1,3' : '1,10')).split(',').map(Number),
    out: path.resolve(get('out') ?? path.join(ROOT, smoke ? 'test-results/bench-smoke' : 'bench/results')),
    smoke,
    python: !smoke && !argv.includes('--no-python'),
  };
  for (const [name, value] of [['repeats', o.repeats], ['replicas', o.replicas], ...o.concurrency.map((c) => ['concurrency', c] as const)] as const) {
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${value}`);
  }
  if (o.concurrency.some((c) => c > o.replicas)) throw new Error(`--concurrency must not exceed --replicas (${o.replicas}): every agent of a batch gets a warm sandbox`);
  return o;
}

export interface AgentBenchReport {
  id: string;
  options: AgentBenchOptions;
  environment: object;
  /** The load average before the local system started and after the measurement. */
  load: { before: Load; after: Load };
  cases: Array<{ way: 'sdk' | 'floor' | 'python'; concurrency: number; latencyMs: Stats }>;
  /** claim → Ready alone (all batches), by way. */
  claimReadyMs: { sdk: Stats; floor: Stats };
  /** Where the time goes, by way (sdk, floor) and agents at once: claim → Ready, then Ready → the first result. */
  phases?: Array<{ way: 'sdk' | 'floor'; concurrency: number; claimToReadyMs: Stats; readyToResultMs: Stats }>;
  /** Claims served by a cold start, by way (should be none: every batch starts from a full pool). */
  coldStarts: { sdk: number; floor: number };
  summary: Array<{ concurrency: number; overheadP50Ms: number; overheadP99Ms: number; goalP50: boolean; aheadOfPython?: { p50: boolean; p99: boolean } }>;
  totalSeconds: number;
}

export async function runAgentBench(o: AgentBenchOptions, log: (m: string) => void): Promise<AgentBenchReport> {
  const started = Date.now();
  const before = load();
  const id = `agent-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  fs.mkdirSync(path.dirname(DRIVER_BUNDLE), { recursive: true });
  execFileSync('npx', ['esbuild', DRIVER, '--bundle', '--platform=node', '--target=node20', '--format=esm', '--packages=external', `--outfile=${DRIVER_BUNDLE}`, '--log-level=warning'], { cwd: ROOT, stdio: 'inherit' });
  // First run: a minute to create the venv from PyPI; cached after that.
  const python = o.python ? execFileSync(path.join(ROOT, 'hack', 'python-sdk-venv.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop() : undefined;
  const system = await startLocalSystem({ pool: POOL, replicas: o.replicas, log });
  try {
    log(`measuring: ${o.repeats} repeat(s), concurrency ${o.concurrency.join(',')}, ${o.replicas} warm sandboxes`);
    const input = { root: ROOT, kubeconfig: system.kubeconfig, routerUrl: system.routerUrl, namespace: NAMESPACE, pool: POOL, replicas: o.replicas, repeats: o.repeats, concurrency: o.concurrency, python };
    const out = execFileSync(process.execPath, [DRIVER_BUNDLE, JSON.stringify(input)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
    const after = load();
    const { samples, readyMs, split, coldStarts } = JSON.parse(out.toString()) as {
      samples: Record<string, number[]>;
      readyMs: Record<'sdk' | 'floor', number[]>;
      coldStarts: { sdk: number; floor: number };
      split: Record<string, { ready: number[]; result: number[] }>;
    };
    const phases = Object.entries(split).map(([key, s]) => {
      const [way, c] = key.split('/c');
      return { way: way as 'sdk' | 'floor', concurrency: Number(c), claimToReadyMs: stats(s.ready), readyToResultMs: stats(s.result) };
    }).sort((a, b) => a.concurrency - b.concurrency || a.way.localeCompare(b.way));
    const cases = Object.entries(samples).map(([key, values]) => {
      const [way, c] = key.split('/c');
      return { way: way as 'sdk' | 'floor' | 'python', concurrency: Number(c), latencyMs: stats(values) };
    });
    const summary = o.concurrency.map((concurrency) => {
      const of = (way: string) => cases.find((x) => x.way === way && x.concurrency === concurrency)?.latencyMs;
      const sdk = of('sdk')!;
      const py = of('python');
      const overheadP50Ms = round(sdk.p50 - of('floor')!.p50, 2);
      return {
        concurrency,
        overheadP50Ms,
        overheadP99Ms: round(sdk.p99 - of('floor')!.p99, 2),
        goalP50: overheadP50Ms <= GOAL_OVERHEAD_P50_MS,
        ...(py ? { aheadOfPython: { p50: sdk.p50 < py.p50, p99: sdk.p99 < py.p99 } } : {}),
      };
    });
    const claimReadyMs = { sdk: stats(readyMs.sdk), floor: stats(readyMs.floor) };
    const totalSeconds = round((Date.now() - started) / 1000);
    return { id, options: o, environment: environment(), load: { before, after }, cases, claimReadyMs, phases, coldStarts, summary, totalSeconds };
  } finally {
    await system.stop();
  }
}

export function agentMarkdown(r: AgentBenchReport): string {
  const lines = [
    `# agent benchmark ${r.id}`,
    '',
    'claim → first `run("echo ok")` result (ms), from a full warm pool: the TypeScript SDK (sdk), the same steps as bare HTTP calls (floor), upstream\'s Python SDK 1.0.8 (python).',
    ...(r.load ? [`Load average (1 / 5 / 15 min) before: ${loadText(r.load.before)}; after the measurement: ${loadText(r.load.after)}.`] : []),
    '',
    '| agents at once | way | n | p50 | p90 | p99 | max |',
    '|---|---|---|---|---|---|---|',
    ...r.cases.map((c) => `| ${c.concurrency} | ${c.way} | ${c.latencyMs.n} | ${c.latencyMs.p50} | ${c.latencyMs.p90} | ${c.latencyMs.p99} | ${c.latencyMs.max} |`),
    '',
    `claim → Ready alone (ms, all batches): SDK p50 ${r.claimReadyMs.sdk.p50}, p99 ${r.claimReadyMs.sdk.p99}; floor p50 ${r.claimReadyMs.floor.p50}, p99 ${r.claimReadyMs.floor.p99}.`
    + (r.coldStarts ? ` Claims served by a cold start: SDK ${r.coldStarts.sdk}, floor ${r.coldStarts.floor}.` : ''),
    ...(r.phases ? [
      '',
      '| agents at once | way | claim → Ready p50 | p99 | Ready → first result p50 | p99 |',
      '|---|---|---|---|---|---|',
      ...r.phases.map((p) => `| ${p.concurrency} | ${p.way} | ${p.claimToReadyMs.p50} | ${p.claimToReadyMs.p99} | ${p.readyToResultMs.p50} | ${p.readyToResultMs.p99} |`),
    ] : []),
    '',
    `| agents at once | SDK overhead p50 (ms) | p99 (ms) | goal ≤ ${GOAL_OVERHEAD_P50_MS} ms at p50 | ahead of the Python SDK at p50 / p99 |`,
    '|---|---|---|---|---|',
    ...r.summary.map((s) => `| ${s.concurrency} | ${s.overheadP50Ms} | ${s.overheadP99Ms} | ${s.goalP50 ? 'met' : 'missed'} | ${s.aheadOfPython ? `${s.aheadOfPython.p50 ? 'yes' : 'no'} / ${s.aheadOfPython.p99 ? 'yes' : 'no'}` : '–'} |`),
    '',
  ];
  return lines.join('\n');
}

/** Runs the benchmark and writes its report; resolves with the exit code. */
export async function agentBench(argv: string[]): Promise<number> {
  const o = parseAgentBenchArgs(argv);
  const log = (m: string) => process.stderr.write(`[bench agent] ${m}\n`);
  const report = await runAgentBench(o, log);
  fs.mkdirSync(o.out, { recursive: true });
  fs.writeFileSync(path.join(o.out, `${report.id}.json`), `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(path.join(o.out, `${report.id}.md`), agentMarkdown(report));
  process.stdout.write(agentMarkdown(report));
  return 0;
}

if (require.main === module) {
  agentBench(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
