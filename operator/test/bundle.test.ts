/**
 * The bundle's split (operator/build.mjs): each command loads only the code it needs. Built into a
 * folder of its own, the chunk graph read from esbuild's metafile: what a command evaluates at
 * start is its chunk and the chunks those import statically (dynamic imports wait until called).
 * Each rule is also checked against an input the command does load, so none passes by matching
 * nothing; and the built entry point runs a command from its chunks.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRY = 'agent-sandbox-operator.mjs';

interface Metafile {
  readonly outputs: {
    readonly [file: string]: {
      readonly entryPoint?: string;
      readonly inputs: { readonly [input: string]: unknown };
      readonly imports: readonly { readonly path: string; readonly kind: string }[];
    };
  };
}

let dir: string;
let meta: Metafile;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'operator-bundle-'));
  execFileSync(process.execPath, [path.join(ROOT, 'operator', 'build.mjs'), `--outdir=${dir}`, `--metafile=${path.join(dir, 'meta.json')}`],
    { cwd: ROOT, stdio: 'pipe' });
  meta = JSON.parse(readFileSync(path.join(dir, 'meta.json'), 'utf8'));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The output whose entry point (a command's module, or main.ts) is `source`. */
function outputOf(source: string): string {
  const found = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === source);
  if (!found) throw new Error(`no output for ${source}`);
  return found[0];
}

/** The inputs evaluated when `output` is imported: it and everything it imports statically, transitively. */
function loadedInputs(output: string): Set<string> {
  const inputs = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const o = meta.outputs[file];
    if (!o) return;
    for (const input of Object.keys(o.inputs)) inputs.add(input);
    for (const i of o.imports) if (i.kind === 'import-statement' && meta.outputs[i.path]) visit(i.path);
  };
  visit(output);
  return inputs;
}

const command = (name: string) => [...loadedInputs(outputOf('operator/src/main.ts')), ...loadedInputs(outputOf(`operator/src/commands/${name}.ts`))];
const has = (inputs: string[], prefix: string) => inputs.some((i) => i.startsWith(prefix));

test('the entry point loads no dependency: each command is imported when it runs', () => {
  const entry = [...loadedInputs(outputOf('operator/src/main.ts'))];
  expect(entry.filter((i) => i.includes('node_modules/'))).toEqual([]);
  expect(has(entry, 'operator/src/commands/')).toBe(false);
  expect(has(entry, 'operator/src/main.ts')).toBe(true);
});

test('the runtime in a sandbox loads neither the Kubernetes client nor the controllers, the router, the YAML parser, nor gRPC until --grpc-port', () => {
  const runtime = command('runtime');
  for (const absent of ['node_modules/@kubernetes/client-node/', 'operator/src/controllers/', 'operator/src/router/', 'node_modules/undici/',
    'node_modules/yaml/', 'node_modules/prom-client/', 'node_modules/@grpc/grpc-js/', 'operator/src/sandboxd/process-service.ts']) {
    expect([absent, has(runtime, absent)]).toEqual([absent, false]);
  }
  expect(has(runtime, 'operator/src/sandboxd/server.ts')).toBe(true);
  // The gRPC service and grpc-js: a chunk the runtime's server imports when it starts gRPC.
  const grpc = loadedInputs(outputOf('operator/src/sandboxd/process-service.ts'));
  expect([...grpc].some((i) => i.startsWith('node_modules/@grpc/grpc-js/'))).toBe(true);
});

test('the router and the controller load client-node and the YAML parser only to read a kubeconfig, and not each other', () => {
  const router = command('router');
  const controller = command('controller');
  for (const inputs of [router, controller]) {
    expect(has(inputs, 'node_modules/@kubernetes/client-node/')).toBe(false);
    expect(has(inputs, 'node_modules/yaml/')).toBe(false);
    expect(has(inputs, 'operator/src/runtime/cluster-config.ts')).toBe(true);
    expect(has(inputs, 'operator/src/sandboxd/')).toBe(false);
  }
  expect(has(router, 'operator/src/controllers/')).toBe(false);
  expect(has(router, 'node_modules/undici/')).toBe(true);
  expect(has(controller, 'operator/src/router/')).toBe(false);
  expect(has(controller, 'operator/src/controllers/')).toBe(true);
  // It is in the bundle, in a chunk of its own that a kubeconfig makes cluster-config import.
  expect(Object.values(meta.outputs).some((o) => Object.keys(o.inputs).some((i) => i.startsWith('node_modules/@kubernetes/client-node/')))).toBe(true);
});

test('the built entry point runs a command from its chunks', () => {
  const out = execFileSync(process.execPath, [path.join(dir, ENTRY), 'runtime', '--help'], { encoding: 'utf8' });
  expect(out).toMatch(/^Usage: agent-sandbox-operator runtime/);
});
