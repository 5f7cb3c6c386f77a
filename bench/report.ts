/** Results: one JSON file per run of the harness, a Markdown table, and the plot (plot.py): latency, or the soak's time series. */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ScenarioResult } from './scenarios/common';

export interface BenchRun extends ScenarioResult {
  controller: string;
  podReadyDelayMs: number;
  repeat: number;
  command?: string[];
  version?: string;
  controlPlaneStartSeconds?: number;
  loadAverage1m?: { atStart: number; atEnd: number };
  error?: string;
}

export interface BenchReport {
  id: string;
  options: object;
  settings: object;
  environment: object;
  runs: BenchRun[];
  totalSeconds: number;
}

export function environment(upstreamBin?: string): object {
  const sh = (cmd: string, args: string[]) => { try { return execFileSync(cmd, args).toString().trim().split('\n')[0]; } catch { return 'unknown'; } };
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    go: sh('go', ['version']),
    upstream: upstreamBin ? sh(upstreamBin, ['--version']) : undefined,
    gitCommit: sh('git', ['rev-parse', '--short', 'HEAD']),
    // Tracked files changed since that commit: the run measured a working tree, not the commit.
    gitDirty: sh('git', ['status', '--porcelain', '--untracked-files=no']) !== '',
  };
}

const f = (x: number | undefined, d = 0) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));

/** The Markdown tables (claims, then refill). */
export function markdown(r: BenchReport): string {
  const floors = new Map<string, BenchRun>();
  // Each run against the floor of its own repeat.
  const floorKey = (run: BenchRun) => `${run.podReadyDelayMs}/${run.scenario}/${run.repeat}`;
  for (const run of r.runs) if (run.controller === 'floor' && run.claims) floors.set(floorKey(run), run);
  const lines: string[] = [];
  lines.push(`Run \`${r.id}\` — ${(r.environment as any).cpus} cores, ${(r.environment as any).memoryGiB} GiB, node ${(r.environment as any).node}, ${(r.environment as any).upstream ?? ''}; ${r.totalSeconds} s in all.`, '');
  if ((r.options as { floorRefills?: boolean } | undefined)?.floorRefills) {
    lines.push('The floor refills (`--floor-refills`): after serving each claim it creates a replacement Sandbox and its Pod, the two creates every refill makes (not the member\'s status write); its writes/claim count them.', '');
  }
  lines.push('Claim latency: client create call → claim Ready=True seen on a watch. Writes/claim: API writes by the controller (sandboxes, claims, pools, pods, events, …) from the apiserver\'s `apiserver_request_total`, the harness\'s own claim creates excluded; a warm claim needs at least 2. CPU-s/1k: controller utime+stime per 1,000 claims during the claim phase; RSS: peak VmRSS in that phase.', '');
  lines.push('| pod-ready delay | scenario | controller | Ready | p50 ms | p90 ms | p99 ms | max ms | claims/s | p50 ×floor | p99 ×floor | writes/claim | API server CPU-ms/claim | CPU-s/1k | peak RSS MiB |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const run of r.runs) {
    if (run.error) {
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller} | failed: ${run.error.split('\n')[0].slice(0, 80)} ||||||||||||`);
      continue;
    }
    if (!run.claims) continue;
    const c = run.claims;
    const fl = floors.get(floorKey(run));
    const ratio = (q: 'p50' | 'p99') => (fl && run.controller !== 'floor' && fl.claims!.latencyMs[q] > 0 ? `${(c.latencyMs[q] / fl.claims!.latencyMs[q]).toFixed(1)}×` : '–');
    const ctrl = run.measure.controller;
    lines.push(`| ${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller} | ${c.ready}/${c.created} | ${f(c.latencyMs.p50)} | ${f(c.latencyMs.p90)} | ${f(c.latencyMs.p99)} | ${f(c.latencyMs.max)} | ${f(c.claimsPerSecond, 1)} | ${ratio('p50')} | ${ratio('p99')} | ${f(run.measure.requests.controllerWritesPerClaim, 2)} | ${f(apiserverMsPer(run, c.created), 1)} | ${ctrl ? f(ctrl.cpuSecondsPer1000, 1) : '–'} | ${ctrl ? f(ctrl.peakRssMiB) : '–'} |`);
  }
  if (r.runs.some((x) => x.repeat > 0)) lines.push('', ...repeatSummary(r.runs));
  const split = r.runs.filter((x) => x.claims?.inControllerMs);
  if (split.length) {
    lines.push('', 'Where a claim\'s time goes, from the controller\'s own `controller-first-observed-at` and `claim-first-ready-at` annotations (wall clock, same machine): create call → the controller first sees the claim (API server, watch delivery, the controller\'s event handling), then first sight → Ready inside the controller.', '');
    lines.push('| pod-ready delay | scenario | controller | claims | create→seen p50 ms | p99 ms | seen→Ready p50 ms | p99 ms |');
    lines.push('|---|---|---|---|---|---|---|---|');
    for (const run of split) {
      const c = run.claims!;
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller} | ${c.inControllerMs!.n} | ${f(c.createToControllerMs?.p50)} | ${f(c.createToControllerMs?.p99)} | ${f(c.inControllerMs!.p50)} | ${f(c.inControllerMs!.p99)} |`);
    }
  }
  const refills = r.runs.filter((x) => x.refill);
  if (refills.length) {
    lines.push('', 'Refill: a pool from 0 to N Ready members (pool create → Nth member Ready on a watch).', '');
    lines.push('| pod-ready delay | controller | Ready | seconds | sandboxes/s | writes/sandbox | API server CPU-ms/sandbox | CPU-s/1k sandboxes | peak RSS MiB |');
    lines.push('|---|---|---|---|---|---|---|---|---|');
    for (const run of refills) {
      const ctrl = run.measure.controller;
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.controller} | ${run.refill!.sandboxes}/${run.params.size} | ${f(run.refill!.seconds, 2)} | ${f(run.refill!.sandboxesPerSecond, 1)} | ${f(run.measure.requests.controllerWritesPerClaim, 2)} | ${f(apiserverMsPer(run, run.refill!.sandboxes), 1)} | ${ctrl ? f(ctrl.cpuSecondsPer1000, 1) : '–'} | ${ctrl ? f(ctrl.peakRssMiB) : '–'} |`);
    }
  }
  const scales = r.runs.filter((x) => x.scale);
  if (scales.length) lines.push('', ...scaleMarkdown(scales));
  const capacities = r.runs.filter((x) => x.capacity);
  if (capacities.length) lines.push('', ...capacityMarkdown(capacities));
  for (const run of r.runs.filter((x) => x.soak)) lines.push('', ...soakMarkdown(run));
  const notes = r.runs.filter((x) => x.notes?.length).map((x) => `- ${x.scenario} / ${x.controller} / ${x.podReadyDelayMs} ms: ${x.notes.join('; ')}`);
  if (notes.length) lines.push('', 'Notes:', '', ...notes);
  return lines.join('\n') + '\n';
}

/** kube-apiserver CPU (utime+stime) over the measured phase per claim (or Sandbox), ms. */
function apiserverMsPer(run: BenchRun, n: number): number | undefined {
  const seconds = run.measure.controlPlaneCpuSeconds?.['kube-apiserver'];
  return seconds === undefined || n <= 0 ? undefined : (seconds * 1000) / n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * With --repeat: per scenario and controller, the median over the repeats and the spread (min–max)
 * of each figure; the ratios to the floor are of the medians.
 */
export function repeatSummary(runs: BenchRun[]): string[] {
  const groups = new Map<string, BenchRun[]>();
  for (const run of runs) {
    if (run.error || !run.claims) continue;
    const key = `${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller}`;
    groups.set(key, [...(groups.get(key) ?? []), run]);
  }
  const figures = {
    p50: (x: BenchRun) => x.claims!.latencyMs.p50,
    p99: (x: BenchRun) => x.claims!.latencyMs.p99,
    rate: (x: BenchRun) => x.claims!.claimsPerSecond,
    writes: (x: BenchRun) => x.measure.requests.controllerWritesPerClaim,
    apiserver: (x: BenchRun) => apiserverMsPer(x, x.claims!.created) ?? NaN,
  };
  const med = (rs: BenchRun[], fig: keyof typeof figures) => median(rs.map(figures[fig]));
  const cell = (rs: BenchRun[], fig: keyof typeof figures, d = 0) => {
    const xs = rs.map(figures[fig]);
    return `${f(median(xs), d)} (${f(Math.min(...xs), d)}–${f(Math.max(...xs), d)})`;
  };
  const lines = [
    'Over the repeats: the median and, in brackets, the spread (min–max) of each figure; ×floor compares medians, and throughput ×floor is claims/s over the floor\'s.',
    '',
    '| pod-ready delay | scenario | controller | runs | p50 ms | p99 ms | claims/s | writes/claim | API server CPU-ms/claim | p50 ×floor | p99 ×floor | claims/s ×floor |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [key, rs] of groups) {
    const floor = groups.get(key.replace(/[^|]+$/, ' floor'));
    const ratio = (fig: keyof typeof figures) => (floor && rs[0].controller !== 'floor' && med(floor, fig) > 0 ? `${(med(rs, fig) / med(floor, fig)).toFixed(2)}×` : '–');
    lines.push(`| ${key} | ${rs.length} | ${cell(rs, 'p50')} | ${cell(rs, 'p99')} | ${cell(rs, 'rate', 1)} | ${cell(rs, 'writes', 2)} | ${cell(rs, 'apiserver', 1)} | ${ratio('p50')} | ${ratio('p99')} | ${ratio('rate')} |`);
  }
  return lines;
}

/** The scale scenario: one row per run. */
function scaleMarkdown(runs: BenchRun[]): string[] {
  const lines = [
    'Scale: pools filled (untimed), then claims round-robin over the pools at the given rate, each deleted 2 s after it is Ready. RSS idle: with every member cached and nothing happening; per 1,000: (RSS idle − RSS before the pools) per 1,000 Sandboxes. After a restart: process start → controllers started (caches synced), then → the first claim Ready.',
    '',
    '| pod-ready delay | controller | Sandboxes / pools | set-up s | claims/s | Ready | p50 ms | p99 ms | writes/claim | RSS before MiB | RSS idle MiB | MiB per 1,000 | idle CPU cores | restart → started s | → first claim ms | RSS after restart MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const run of runs) {
    const sc = run.scale!;
    const c = run.claims!;
    lines.push(`| ${run.podReadyDelayMs} ms | ${run.controller} | ${run.params.sandboxes} / ${sc.options.pools} | ${f(sc.setupSeconds, 1)} | ${sc.options.rate} | ${c.ready}/${c.created} | ${f(sc.claims.p50)} | ${f(sc.claims.p99)} | ${f(run.measure.requests.controllerWritesPerClaim, 2)} | ${f(sc.rssBeforeMiB)} | ${f(sc.rssIdleMiB)} | ${f(sc.rssPer1000SandboxesMiB, 1)} | ${f(sc.idleCpuCores, 3)} | ${f(sc.restart?.startSeconds, 2)} | ${f(sc.restart?.firstClaimMs)} | ${f(sc.restart?.rssAfterMiB)} |`);
  }
  return lines;
}

/** The capacity scenario: one row per step, then each controller's capacity. */
function capacityMarkdown(runs: BenchRun[]): string[] {
  const o = runs[0].capacity!.options;
  const lines = [
    `Capacity: claims evenly spaced at each rate for ${o.stepS} s on a pool of ${o.pool} that the controller refills during the step; each claim deleted ${o.holdS} s after it is Ready. Steady p50/p99: create → Ready of the claims arriving after the first ${o.warmupS} s. A step passes when every claim is Ready and p99 < ${o.p99LimitMs} ms; the first failing step ends the run. API server CPU-ms/claim: kube-apiserver's utime+stime over the step per claim.`,
    '',
    '| pod-ready delay | controller | rate /s | Ready | steady p50 ms | steady p99 ms | writes/claim | API server CPU-ms/claim | controller CPU-ms/claim | peak RSS MiB | pool Ready at end | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const run of runs) {
    for (const st of run.capacity!.steps) {
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.controller} | ${st.rate} | ${st.ready}/${st.created} | ${f(st.steady.p50)} | ${f(st.steady.p99)} | ${f(st.writesPerClaim, 2)} | ${f(st.apiserverCpuMsPerClaim, 1)} | ${f(st.controllerCpuMsPerClaim, 1)} | ${f(st.peakRssMiB)} | ${st.poolReadyAtEnd} | ${st.passed ? 'passed' : `failed: ${st.reason}`} |`);
    }
  }
  lines.push('', ...runs.map((run) => `- ${run.controller} (${run.podReadyDelayMs} ms, repeat ${run.repeat}): capacity ${run.capacity!.capacity} claims/s${run.notes.length ? ` (${run.notes.join('; ')})` : ''}`));
  return lines;
}

/** The soak scenario: one row per window, then RSS and leaks. */
function soakMarkdown(run: BenchRun): string[] {
  const s = run.soak!;
  const o = s.options;
  const lines = [
    `Soak (${run.controller}): ${o.rate} claims/s for ${f(o.durationS / 60, 1)} min, each claim with shutdownTime = create + ${o.ttlS} s and shutdownPolicy Delete, every ${o.deleteEvery}th deleted by the harness at half its TTL (${s.explicitDeletes} in all), a warm pool of ${s.poolSize}. Per ${o.windowS} s window: the claims created in it (create → Ready), the controller's CPU over it and RSS at its end, and the objects live at its end against the expected (claims neither expired nor deleted; those plus the pool for Sandboxes). Deleted Pods stay until their grace period ends, so Pods run above Sandboxes.`,
    '',
    '| window s | created | Ready | p50 ms | p99 ms | max ms | CPU cores | RSS MiB | claims (expected) | Sandboxes (expected) | Pods | Services | PVCs | terminating |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const w of s.windows) {
    lines.push(`| ${f(w.from)}–${f(w.to)} | ${w.created} | ${w.ready} | ${f(w.latencyMs.p50)} | ${f(w.latencyMs.p99)} | ${f(w.latencyMs.max)} | ${f(w.cpuCores, 2)} | ${f(w.rssMiB)} | ${w.live.claims} (${w.expected.claims}) | ${w.live.sandboxes} (${w.expected.sandboxes}) | ${w.live.pods} | ${w.live.services} | ${w.live.pvcs} | ${w.live.terminating} |`);
  }
  const l = s.leaks;
  lines.push('',
    `RSS (every ${o.sampleS} s): ${f(s.rss.startMiB)} MiB at the start, ${f(s.rss.endMiB)} MiB at the end, peak ${f(s.rss.peakMiB)} MiB; ${s.rss.bounded ? 'bounded' : 'NOT bounded'}: ${s.rss.rule}.`,
    `Leaks after every claim expired and ${f(s.drainSeconds)} s of drain: ${l.total} (expired claims still present ${l.expiredClaims}; without a live owner: ${Object.entries(l.orphans).map(([k, v]) => `${k} ${v}`).join(', ')}; pool members beyond ${s.poolSize}: ${l.excessSandboxes})${l.examples.length ? `, e.g. ${l.examples.join(', ')}` : ''}. Left at the end: ${s.final.sandboxes} Sandboxes, ${s.final.pods} Pods, ${s.final.claims} claims.`,
    `Soak ${s.passed ? 'passed' : 'FAILED'} (no leaks, RSS bounded; no timing asserts).`);
  return lines;
}

/** Writes <out>/<id>.json and .md (and .png unless `plot` is false); returns the paths. */
export function writeReport(r: BenchReport, out: string, plot: boolean): string[] {
  fs.mkdirSync(out, { recursive: true });
  const json = path.join(out, `${r.id}.json`);
  const md = path.join(out, `${r.id}.md`);
  fs.writeFileSync(json, JSON.stringify(r, null, 1) + '\n');
  fs.writeFileSync(md, markdown(r));
  const files = [json, md];
  // The same test plot.py makes: it draws claim latencies or a soak's time series, which refill-
  // and capacity-only runs do not have.
  const plottable = r.runs.some((run) => run.soak !== undefined || (run.claims?.latenciesMs.length ?? 0) > 0);
  if (plot && plottable) {
    const png = path.join(out, `${r.id}.png`);
    try {
      execFileSync(path.join(__dirname, 'plot.sh'), [json, png], { stdio: ['ignore', 'inherit', 'inherit'] });
      files.push(png);
    } catch (e) {
      process.stderr.write(`[bench] plot failed (results are still in ${json}): ${(e as Error).message}\n`);
    }
  }
  return files;
}

/** `npx ts-node --transpile-only bench/report.ts <results.json> [--no-plot]`: rewrites its .md (and .png) from the JSON. */
if (require.main === module) {
  const json = process.argv[2];
  const r: BenchReport = JSON.parse(fs.readFileSync(json, 'utf8'));
  process.stdout.write(writeReport(r, path.dirname(path.resolve(json)), !process.argv.includes('--no-plot')).join('\n') + '\n');
}
