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
    cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(),
    node: process.version, go: sh('go', ['version']), upstream: upstreamBin ? sh(upstreamBin, ['--version']) : undefined,
    gitCommit: sh('git', ['rev-parse', '--short', 'HEAD']),
  };
}

const f = (x: number | undefined, d = 0) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));

/** The Markdown tables (claims, then refill). */
export function markdown(r: BenchReport): string {
  const floors = new Map<string, BenchRun>();
  for (const run of r.runs) if (run.controller === 'floor' && run.claims) floors.set(`${run.podReadyDelayMs}/${run.scenario}`, run);
  const lines: string[] = [];
  lines.push(`Run \`${r.id}\` — ${(r.environment as any).cpus} cores, ${(r.environment as any).memoryGiB} GiB, node ${(r.environment as any).node}, ${(r.environment as any).upstream ?? ''}; ${r.totalSeconds} s in all.`, '');
  lines.push('Claim latency: client create call → claim Ready=True seen on a watch. Writes/claim: API writes by the controller (sandboxes, claims, pools, pods, events, …) from the apiserver\'s `apiserver_request_total`, the harness\'s own claim creates excluded; a warm claim needs at least 2. CPU-s/1k: controller utime+stime per 1,000 claims during the claim phase; RSS: peak VmRSS in that phase.', '');
  lines.push('| pod-ready delay | scenario | controller | Ready | p50 ms | p90 ms | p99 ms | max ms | claims/s | p50 ×floor | p99 ×floor | writes/claim | CPU-s/1k | peak RSS MiB |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const run of r.runs) {
    if (run.error) {
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller} | failed: ${run.error.split('\n')[0].slice(0, 80)} |||||||||||`);
      continue;
    }
    if (!run.claims) continue;
    const c = run.claims;
    const fl = floors.get(`${run.podReadyDelayMs}/${run.scenario}`);
    const ratio = (q: 'p50' | 'p99') => (fl && run.controller !== 'floor' && fl.claims!.latencyMs[q] > 0 ? `${(c.latencyMs[q] / fl.claims!.latencyMs[q]).toFixed(1)}×` : '–');
    const ctrl = run.measure.controller;
    lines.push(`| ${run.podReadyDelayMs} ms | ${run.scenario} | ${run.controller} | ${c.ready}/${c.created} | ${f(c.latencyMs.p50)} | ${f(c.latencyMs.p90)} | ${f(c.latencyMs.p99)} | ${f(c.latencyMs.max)} | ${f(c.claimsPerSecond, 1)} | ${ratio('p50')} | ${ratio('p99')} | ${f(run.measure.requests.controllerWritesPerClaim, 2)} | ${ctrl ? f(ctrl.cpuSecondsPer1000, 1) : '–'} | ${ctrl ? f(ctrl.peakRssMiB) : '–'} |`);
  }
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
    lines.push('| pod-ready delay | controller | Ready | seconds | sandboxes/s | writes/sandbox | CPU-s/1k sandboxes | peak RSS MiB |');
    lines.push('|---|---|---|---|---|---|---|---|');
    for (const run of refills) {
      const ctrl = run.measure.controller;
      lines.push(`| ${run.podReadyDelayMs} ms | ${run.controller} | ${run.refill!.sandboxes}/${run.params.size} | ${f(run.refill!.seconds, 2)} | ${f(run.refill!.sandboxesPerSecond, 1)} | ${f(run.measure.requests.controllerWritesPerClaim, 2)} | ${ctrl ? f(ctrl.cpuSecondsPer1000, 1) : '–'} | ${ctrl ? f(ctrl.peakRssMiB) : '–'} |`);
    }
  }
  for (const run of r.runs.filter((x) => x.soak)) lines.push('', ...soakMarkdown(run));
  const notes = r.runs.filter((x) => x.notes?.length).map((x) => `- ${x.scenario} / ${x.controller} / ${x.podReadyDelayMs} ms: ${x.notes.join('; ')}`);
  if (notes.length) lines.push('', 'Notes:', '', ...notes);
  return lines.join('\n') + '\n';
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
  if (plot) {
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
