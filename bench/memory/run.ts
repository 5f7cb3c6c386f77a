/**
 * `npm run bench:memory [-- <sandboxes>]`: heap per 1,000 cached Sandboxes (and their Pods) in each
 * cache shape, no cluster needed. Bundles ./probe.ts (the operator's ESM sources) with esbuild,
 * runs it under --expose-gc, and writes bench/results/memory-<time>.{json,md}.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
// eslint-disable-next-line import/no-extraneous-dependencies
import { buildSync } from 'esbuild';

const root = path.resolve(__dirname, '../..');
const sandboxes = Number(process.argv[2] ?? 5000);
if (!Number.isInteger(sandboxes) || sandboxes < 10 || sandboxes % 10 !== 0) {
  throw new Error(`the Sandbox count must be a multiple of 10 (10 pools), at least 10; got "${process.argv[2]}"`);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-memory-'));
const out = path.join(dir, 'probe.mjs');
buildSync({
  entryPoints: [path.join(__dirname, 'probe.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  outfile: out,
  logLevel: 'error',
  banner: { js: 'import { createRequire } from \'node:module\'; const require = createRequire(import.meta.url);' },
});
const result = JSON.parse(execFileSync(process.execPath, ['--expose-gc', out, String(sandboxes)], { encoding: 'utf8', maxBuffer: 1_048_576 }));
fs.rmSync(dir, { recursive: true, force: true });

const shapes = Object.keys(Object.values(result.mibPer1000)[0] as object);
const lines = [
  `# Cache memory: heap MiB per 1,000 Sandboxes with their Pods (${sandboxes} members over ${result.pools} pools)`,
  '',
  `| template | ${shapes.join(' | ')} |`,
  `|---|${shapes.map(() => '---:').join('|')}|`,
  ...Object.entries(result.mibPer1000 as Record<string, Record<string, number>>).map(([template, row]) => `| ${template} | ${shapes.map((s) => row[s].toFixed(2)).join(' | ')} |`),
  '',
  'Objects built by the operator\'s own code (buildPoolSandbox, buildPod), dressed as the API server serves them (managedFields,',
  'server metadata, Ready status, kubelet-style Pod status), parsed from JSON one by one and cached in indexed stores.',
  '',
];
const stamp = new Date().toISOString().replace(/:/g, '-').replace(/\..*/, '');
const base = path.join(root, 'bench/results', `memory-${stamp}`);
fs.writeFileSync(`${base}.json`, `${JSON.stringify({ date: new Date().toISOString(), node: process.version, ...result }, null, 2)}\n`);
fs.writeFileSync(`${base}.md`, lines.join('\n'));
process.stdout.write(`${lines.join('\n')}\nwritten ${path.relative(root, base)}.{json,md}\n`);
