/**
 * Bundles the operator with esbuild: `operator/dist/agent-sandbox-operator.mjs`, the one entry point
 * (`agent-sandbox-operator <command>`), and `operator/dist/chunks/`, what the commands import.
 *
 * Each command is a chunk of its own, imported when the process is told to run it, so a process
 * evaluates only the code its command needs: the runtime inside every sandbox does not load the
 * Kubernetes client, the controllers or the router (idle, 49 MiB RSS against 78 for the bundle of
 * one file), and the router does not load the controllers. Chunk names carry a hash of their content; chunks of an
 * earlier build are removed after the new ones are written, so `chunks/` holds exactly this build's.
 *
 * @grpc/proto-loader (and protobufjs under it) is required by grpc-js only inside its channelz and
 * ORCA services, which the operator never registers: left out, it saves a third of a megabyte.
 * node-fetch is imported by client-node's KubeConfig module for API clients the operator never
 * makes; a shim over Node's fetch saves 0.4 MB (operator/src/runtime/node-fetch-shim.ts).
 *
 * Run: node operator/build.mjs [--outdir=DIR] [--metafile=FILE] (the projen task operator:build
 * type-checks first; operator/test/bundle.test.ts builds into a folder of its own and reads the
 * metafile, esbuild's account of which inputs went into which output).
 */
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({ options: { outdir: { type: 'string' }, metafile: { type: 'string' } } });
const outdir = path.resolve(args.outdir ?? path.join(here, 'dist'));
const CHUNKS = 'chunks';

const result = await build({
  entryPoints: { 'agent-sandbox-operator': path.join(here, 'src', 'main.ts') },
  outdir,
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  outExtension: { '.js': '.mjs' },
  chunkNames: `${CHUNKS}/[name]-[hash]`,
  external: ['@grpc/proto-loader'],
  alias: { 'node-fetch': path.join(here, 'src', 'runtime', 'node-fetch-shim.ts') },
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
});

if (args.metafile) writeFileSync(args.metafile, JSON.stringify(result.metafile));
const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.resolve(file)));
const chunkDir = path.join(outdir, CHUNKS);
let removed = 0;
for (const name of existsSync(chunkDir) ? readdirSync(chunkDir) : []) {
  const file = path.join(chunkDir, name);
  if (!written.has(file)) {
    rmSync(file, { force: true });
    removed++;
  }
}
const chunks = [...written].filter((f) => f.startsWith(chunkDir + path.sep) && f.endsWith('.mjs')).length;
process.stdout.write(`${path.relative(process.cwd(), outdir) || '.'}: agent-sandbox-operator.mjs and ${chunks} chunks${removed ? ` (${removed} files of an earlier build removed)` : ''}\n`);
