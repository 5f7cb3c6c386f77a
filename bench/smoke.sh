#!/usr/bin/env bash
# The harness's own smoke test (for .ci/run): a handful of claims against both controllers and the
# floor on fresh local control planes, then a second of router traffic per case (ours, upstream's Go router, direct), then a few
# agents through the SDK and as bare HTTP calls, then a 3-minute soak of our operator (10 claims/s in CI, expiring
# by TTL), no timing asserts. Passes when every run brought every claim to Ready, every router request and
# agent iteration succeeded, the soak leaked nothing and its RSS stayed bounded, and the result files were
# written. Prints `bench smoke: N passed, M failed` last and
# writes test-results/bench-smoke.json {passed, failed}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="test-results/bench-smoke/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
npx ts-node --transpile-only bench/run.ts --smoke --out "$OUT" "$@"
rc=$?
npx ts-node --transpile-only bench/run.ts --smoke --scenarios router --out "$OUT/router"
router_rc=$?
npx ts-node --transpile-only bench/run.ts --smoke --scenarios agent --out "$OUT/agent"
agent_rc=$?
# BENCH_SMOKE_SOAK=90s (say) shortens the soak, BENCH_SMOKE_SOAK_RATE=20 runs it at the full soak's rate; CI runs 3 minutes at 10/s.
npx ts-node --transpile-only bench/run.ts --scenarios soak --rates "${BENCH_SMOKE_SOAK_RATE:-10}" --duration "${BENCH_SMOKE_SOAK:-3m}" --window 60 --ttl 30 --drain 120 --no-plot --out "$OUT/soak"
soak_rc=$?
node - "$OUT" "$rc" "$router_rc" "$agent_rc" "$soak_rc" <<'JS'
const fs = require('fs');
const path = require('path');
const [out, rc, routerRc, agentRc, soakRc] = process.argv.slice(2);
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.error(`FAIL: ${what}`); } };
const jsons = fs.readdirSync(out).filter((f) => f.endsWith('.json'));
check(jsons.length === 1, `one results JSON in ${out} (found ${jsons.length})`);
check(fs.readdirSync(out).some((f) => f.endsWith('.md')), `a Markdown table in ${out}`);
if (jsons.length) {
  const report = JSON.parse(fs.readFileSync(path.join(out, jsons[0]), 'utf8'));
  for (const c of ['ours', 'upstream', 'floor']) check(report.runs.some((r) => r.controller === c), `a run against ${c}`);
  for (const r of report.runs) {
    const what = `${r.scenario}/${r.controller}`;
    if (r.error) check(false, `${what}: ${r.error}`);
    else if (r.claims) check(r.claims.created > 0 && r.claims.ready === r.claims.created, `${what}: ${r.claims.ready}/${r.claims.created} claims Ready`);
    else if (r.refill) check(r.refill.completed, `${what}: refill completed`);
    if (r.scale) check(r.scale.restart !== undefined, `${what}: the first claim after the restart was served`);
    else if (r.capacity) {
      const first = r.capacity.steps[0];
      check(first !== undefined && first.created > 0 && first.ready === first.created, `${what}: the first capacity step served every claim (${first ? `${first.ready}/${first.created}` : 'no step'})`);
    }
  }
}
check(rc === '0', `bench/run.ts exit code 0 (was ${rc})`);
const routerDir = path.join(out, 'router');
const routerJsons = fs.existsSync(routerDir) ? fs.readdirSync(routerDir).filter((f) => f.endsWith('.json')) : [];
check(routerJsons.length === 1, `one router results JSON in ${routerDir} (found ${routerJsons.length})`);
if (routerJsons.length) {
  const report = JSON.parse(fs.readFileSync(path.join(routerDir, routerJsons[0]), 'utf8'));
  for (const via of ['direct', 'ours', 'upstream']) {
    const cases = report.cases.filter((c) => c.via === via);
    // Upstream's router has no h2c: its gRPC case is recorded as unsupported, for that reason only.
    const carried = cases.filter((c) => !(via === 'upstream' && c.name.startsWith('gRPC') && /h2c/.test(c.unsupported ?? '')));
    // Upstream's own errors (its connection handling) are results, shown in the table; ours and direct must have none.
    check(cases.length === report.summary.length && cases.length >= 6 && carried.every((c) => c.requests > 0 && (via === 'upstream' || c.errors === 0)),
      `router bench ${via}: every case answered without errors (${cases.map((c) => `${c.name}/c${c.concurrency}: ${c.requests} ok, ${c.errors} errors${c.firstError ? ` (${c.firstError})` : ''}`).join('; ')})`);
  }
  check(report.rss.oursPeakMiB > 0 && report.rss.upstreamPeakMiB > 0, `router bench: both routers' RSS measured (${report.rss.oursPeakMiB}, ${report.rss.upstreamPeakMiB} MiB)`);
}
check(routerRc === '0', `bench/run.ts --scenarios router exit code 0 (was ${routerRc})`);
const agentDir = path.join(out, 'agent');
const agentJsons = fs.existsSync(agentDir) ? fs.readdirSync(agentDir).filter((f) => f.endsWith('.json')) : [];
check(agentJsons.length === 1, `one agent results JSON in ${agentDir} (found ${agentJsons.length})`);
if (agentJsons.length) {
  const report = JSON.parse(fs.readFileSync(path.join(agentDir, agentJsons[0]), 'utf8'));
  for (const way of ['sdk', 'floor']) {
    const cases = report.cases.filter((c) => c.way === way);
    check(cases.length === report.options.concurrency.length && cases.every((c) => c.latencyMs.n > 0),
      `agent bench ${way}: every batch measured (${cases.map((c) => `c${c.concurrency}: n=${c.latencyMs.n}`).join('; ')})`);
  }
}
check(agentRc === '0', `bench/run.ts --scenarios agent exit code 0 (was ${agentRc})`);
const soakDir = path.join(out, 'soak');
const soakJsons = fs.existsSync(soakDir) ? fs.readdirSync(soakDir).filter((f) => f.endsWith('.json')) : [];
check(soakJsons.length === 1, `one soak results JSON in ${soakDir} (found ${soakJsons.length})`);
if (soakJsons.length) {
  const report = JSON.parse(fs.readFileSync(path.join(soakDir, soakJsons[0]), 'utf8'));
  for (const r of report.runs) {
    if (r.error || !r.soak) { check(false, `soak/${r.controller}: ${r.error ?? 'no soak result'}`); continue; }
    const l = r.soak.leaks;
    check(l.total === 0, `soak/${r.controller}: no leaked objects (${l.total}: expired claims ${l.expiredClaims}, orphans ${JSON.stringify(l.orphans)}, excess pool members ${l.excessSandboxes}${l.examples.length ? `, e.g. ${l.examples.join(', ')}` : ''})`);
    check(r.soak.rss.bounded, `soak/${r.controller}: RSS bounded (${r.soak.rss.rule})`);
  }
}
check(soakRc === '0', `bench/run.ts --scenarios soak exit code 0 (was ${soakRc})`);
fs.mkdirSync('test-results', { recursive: true });
fs.writeFileSync('test-results/bench-smoke.json', JSON.stringify({ passed, failed }) + '\n');
console.log(`bench smoke: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
JS
