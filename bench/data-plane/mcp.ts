/**
 * The MCP server's cost: `npm run bench -- --scenarios mcp` (or
 * `npx ts-node --transpile-only bench/data-plane/mcp.ts [flags]`).
 *
 * On a fresh local system (tools/shared/local-system.ts: operator, router with --auth=none, the pod
 * runner running each sandbox Pod's runtime as a local process, a warm pool of 4), a tool call →
 * its result, sequentially, four ways, each on a sandbox of its own claimed first, all direct to the
 * router (bench/data-plane/agent-driver/mcp-driver.ts): `sandbox.run("echo ok")` on the SDK (sdk); the
 * SDK's execute_command tool called in-process (tool); the official MCP client's callTool of
 * execute_command to the MCP server over streamable HTTP (mcp-http) and over stdio (mcp-stdio). Then
 * write_file + read_file pairs (1 KiB) the same four ways. Reported: p50/p99 per way and the
 * overhead over the SDK's own call at p50 and p99; the load average before and after.
 *
 * The MCP server under test is mcp/src bundled with the SDK's source (esbuild, like the driver), so
 * both sides run the working tree's SDK and nothing needs building first.
 *
 * Results: bench/results/mcp-<id>.json and .md. Flags: --calls 200  --warmup-calls 20  --file-pairs 50
 * --out bench/results  --smoke (20 calls, 3 warm-up rounds, 5 file pairs). Not in bench/smoke.sh: its
 * own local system makes even the smoke size about 30 s (34 s on 2 loaded cores), most of it start-up.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { NAMESPACE, startLocalSystem } from '../../tools/shared/local-system';
import { ROOT } from '../controllers';
import { flagValue } from '../flags';
import { load, Load, loadText, round, stats, Stats } from '../measure';
import { environment } from '../report';

const POOL = 'mcp-bench';
/** One warm sandbox per way. */
const REPLICAS = 4;
const DRIVER = path.join(__dirname, 'agent-driver', 'mcp-driver.ts');
const BUNDLES = path.join(ROOT, 'test-results', 'bench');
const DRIVER_BUNDLE = path.join(BUNDLES, 'mcp-driver.mjs');
const SERVER_BUNDLE = path.join(BUNDLES, 'mcp-server.mjs');

type Way = 'sdk' | 'tool' | 'mcp-http' | 'mcp-stdio';
const WAYS: Way[] = ['sdk', 'tool', 'mcp-http', 'mcp-stdio'];
type Op = 'exec' | 'file';
const OPS: Record<Op, string> = { exec: '`echo ok` (execute_command / run)', file: 'write_file + read_file of 1 KiB' };

export interface McpBenchOptions {
  calls: number;
  warmup: number;
  filePairs: number;
  out: string;
  smoke: boolean;
}

export function parseMcpBenchArgs(argv: string[]): McpBenchOptions {
  const get = (name: string): string | undefined => flagValue(argv, name);
  const smoke = argv.includes('--smoke');
  const o: McpBenchOptions = {
    calls: Number(get('calls') ?? (smoke ? 20 : 200)),
    warmup: Number(get('warmup-calls') ?? (smoke ? 3 : 20)),
    filePairs: Number(get('file-pairs') ?? (smoke ? 5 : 50)),
    out: path.resolve(get('out') ?? path.join(ROOT, smoke ? 'test-results/bench-smoke' : 'bench/results')),
    smoke,
  };
  for (const [name, value, min] of [['calls', o.calls, 1], ['warmup-calls', o.warmup, 0], ['file-pairs', o.filePairs, 1]] as const) {
    if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${value}`);
  }
  return o;
}

export interface McpBenchReport {
  id: string;
  options: McpBenchOptions;
  environment: object;
  load: { before: Load; after: Load };
  cases: Array<{ op: Op; way: Way; latencyMs: Stats }>;
  /** Each way's overhead over the SDK's own call (ms). */
  overhead: Array<{ op: Op; way: Way; p50Ms: number; p99Ms: number }>;
  /** Claim → ready to call, once per way (the MCP ways: server start, session, create_sandbox). */
  setupMs: Record<Way, number>;
  totalSeconds: number;
}

/** The driver and the MCP server (mcp/src with the SDK's source), bundled. */
function bundle(): void {
  fs.mkdirSync(BUNDLES, { recursive: true });
  const esbuild = (entry: string, out: string, extra: string[] = []) => execFileSync('npx', [
    'esbuild', entry, '--bundle', '--platform=node', '--target=node20', '--format=esm', '--packages=external', `--outfile=${out}`, '--log-level=warning', ...extra,
  ], { cwd: ROOT, stdio: 'inherit' });
  esbuild(DRIVER, DRIVER_BUNDLE);
  esbuild(path.join('mcp', 'src', 'cli.ts'), SERVER_BUNDLE, ['--alias:@cdk8s-agent-sandbox/sdk=./sdk/src']);
}

export async function runMcpBench(o: McpBenchOptions, log: (m: string) => void): Promise<McpBenchReport> {
  const started = Date.now();
  const id = `mcp-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}${o.smoke ? '-smoke' : ''}`;
  const before = load();
  bundle();
  const system = await startLocalSystem({ pool: POOL, replicas: REPLICAS, log });
  try {
    log(`measuring: ${o.calls} calls each way after ${o.warmup} warm-up rounds, ${o.filePairs} write+read pairs; load ${loadText(load())}`);
    const input = {
      kubeconfig: system.kubeconfig,
      routerUrl: system.routerUrl,
      namespace: NAMESPACE,
      pool: POOL,
      server: SERVER_BUNDLE,
      calls: o.calls,
      warmup: o.warmup,
      filePairs: o.filePairs,
    };
    const out = execFileSync(process.execPath, [DRIVER_BUNDLE, JSON.stringify(input)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
    const after = load();
    const result = JSON.parse(out.toString()) as Record<Op, Record<Way, number[]>> & { claimMs: Record<Way, number> };
    const cases = (Object.keys(OPS) as Op[]).flatMap((op) => WAYS.map((way) => ({ op, way, latencyMs: stats(result[op][way]) })));
    const of = (op: Op, way: Way) => cases.find((c) => c.op === op && c.way === way)!.latencyMs;
    const overhead = cases.filter((c) => c.way !== 'sdk').map(({ op, way, latencyMs }) => ({
      op, way, p50Ms: round(latencyMs.p50 - of(op, 'sdk').p50, 2), p99Ms: round(latencyMs.p99 - of(op, 'sdk').p99, 2),
    }));
    const setupMs = Object.fromEntries(WAYS.map((w) => [w, round(result.claimMs[w])])) as Record<Way, number>;
    const totalSeconds = round((Date.now() - started) / 1000);
    return { id, options: o, environment: environment(), load: { before, after }, cases, overhead, setupMs, totalSeconds };
  } finally {
    await system.stop();
  }
}

export function mcpMarkdown(r: McpBenchReport): string {
  const lines = [
    `# mcp benchmark ${r.id}`,
    '',
    'A tool call → its result (ms), sequential, one sandbox per way, all direct to the router: the SDK\'s `sandbox.run` / `files` (sdk), the SDK\'s tools in-process (tool), '
    + 'the official MCP client to the MCP server over streamable HTTP (mcp-http) and stdio (mcp-stdio).',
    `Load average (1 / 5 / 15 min) before: ${loadText(r.load.before)}; after the calls: ${loadText(r.load.after)}.`,
    '',
    '| call | way | n | p50 | p90 | p99 | max | over sdk p50 | over sdk p99 |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.cases.map((c) => {
      const o = r.overhead.find((x) => x.op === c.op && x.way === c.way);
      return `| ${OPS[c.op]} | ${c.way} | ${c.latencyMs.n} | ${c.latencyMs.p50} | ${c.latencyMs.p90} | ${c.latencyMs.p99} | ${c.latencyMs.max} | ${o ? o.p50Ms : '–'} | ${o ? o.p99Ms : '–'} |`;
    }),
    '',
    `Claim → ready to call, once per way (ms): ${WAYS.map((w) => `${w} ${r.setupMs[w]}`).join(', ')} (the MCP ways: the server's start, the session and create_sandbox).`,
    '',
  ];
  return lines.join('\n');
}

/** Runs the benchmark and writes its report; resolves with the exit code. */
export async function mcpBench(argv: string[]): Promise<number> {
  const o = parseMcpBenchArgs(argv);
  const log = (m: string) => process.stderr.write(`[bench mcp] ${m}\n`);
  const report = await runMcpBench(o, log);
  fs.mkdirSync(o.out, { recursive: true });
  fs.writeFileSync(path.join(o.out, `${report.id}.json`), `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(path.join(o.out, `${report.id}.md`), mcpMarkdown(report));
  process.stdout.write(mcpMarkdown(report));
  return 0;
}

if (require.main === module) {
  mcpBench(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
