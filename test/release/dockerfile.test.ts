/**
 * operator/Dockerfile without a Docker engine: its stages, what it copies from the build context
 * (the repository root, filtered by operator/Dockerfile.dockerignore) and from the build stage, and
 * the projen task it runs all exist and fit together.
 */
import * as fs from 'fs';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');
const dockerfile = fs.readFileSync(path.join(root, 'operator', 'Dockerfile'), 'utf8');
const ignorePatterns = fs.readFileSync(path.join(root, 'operator', 'Dockerfile.dockerignore'), 'utf8')
  .split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const tasks = JSON.parse(fs.readFileSync(path.join(root, '.projen', 'tasks.json'), 'utf8')).tasks;

interface Instruction { readonly stage: number; readonly op: string; readonly args: string }
const instructions: Instruction[] = [];
let stage = -1;
for (const line of dockerfile.replace(/\\\n/g, ' ').split('\n')) {
  const m = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
  if (!m) continue;
  if (m[1] === 'FROM') stage++;
  instructions.push({ stage, op: m[1], args: m[2].trim() });
}
const froms = instructions.filter((i) => i.op === 'FROM').map((i) => {
  const [image, , name] = i.args.split(/\s+/);
  return { image, name };
});

/** Whether the .dockerignore keeps `file` (relative to the context) out of the build context. */
function ignored(file: string): boolean {
  return ignorePatterns.some((pattern) => {
    const body = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*\*\//g, '(?:.*/)?').replace(/\*/g, '[^/]*');
    return new RegExp(`^${body}(?:/|$)`).test(file);
  });
}

test('two stages: a Node 22 build stage and the distroless Node 22 runtime, each a build argument with that default', () => {
  expect(froms).toEqual([
    { image: '${BUILD_IMAGE}', name: 'build' },
    { image: '${RUNTIME_IMAGE}', name: undefined },
  ]);
  // Global ARGs (before the first FROM) are what FROM lines may use.
  const globalArgs = instructions.filter((i) => i.stage === -1 && i.op === 'ARG').map((i) => i.args);
  expect(globalArgs).toEqual(['BUILD_IMAGE=node:22-slim', 'RUNTIME_IMAGE=gcr.io/distroless/nodejs22-debian12:nonroot']);
});

test('what the build stage copies from the context exists and is not ignored', () => {
  const copies = instructions.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'));
  expect(copies.length).toBeGreaterThan(0);
  for (const copy of copies) {
    const sources = copy.args.split(/\s+/).slice(0, -1);
    for (const source of sources) {
      expect(fs.existsSync(path.join(root, source))).toBe(true);
      if (source !== '.') expect([source, ignored(source)]).toEqual([source, false]);
    }
  }
});

test('the context keeps what `npx projen operator:build` reads, and drops build output', () => {
  // sdk/src/process-proto.ts: the runtime's gRPC codec, one module with the SDK's.
  for (const needed of ['package.json', 'package-lock.json', '.projen/tasks.json', 'tsconfig.operator.json', 'operator/build.mjs', 'operator/src/main.ts', 'src/api',
    'sdk/src/process-proto.ts']) {
    expect(fs.existsSync(path.join(root, needed))).toBe(true);
    expect([needed, ignored(needed)]).toEqual([needed, false]);
  }
  for (const dropped of ['node_modules', 'operator/dist', 'lib', 'dist', '.git']) expect([dropped, ignored(dropped)]).toEqual([dropped, true]);
});

test('the build stage runs a projen task that writes the files the runtime stage copies', () => {
  const run = instructions.find((i) => i.stage === 0 && i.op === 'RUN' && i.args.startsWith('npx projen '))!;
  const taskName = run.args.split(/\s+/)[2];
  expect(tasks[taskName]).toBeDefined();
  // The task bundles with operator/build.mjs: the entry point and its chunks/ in operator/dist/, with source maps.
  const build = tasks[taskName].steps.map((s: any) => s.exec ?? '').find((e: string) => e.startsWith('node ') && e.endsWith('build.mjs'));
  const script = build.split(/\s+/)[1];
  const source = fs.readFileSync(path.join(root, script), 'utf8');
  expect(source).toContain("entryPoints: { 'agent-sandbox-operator':");
  expect(source).toContain('sourcemap: true');
  const outdir = /const outdir = path\.resolve\(args\.outdir \?\? path\.join\(here, '([^']+)'\)\)/.exec(source)![1];
  const distDir = path.posix.join(path.posix.dirname(script), outdir);
  const workdir = instructions.find((i) => i.stage === 0 && i.op === 'WORKDIR')!.args;
  const copy = instructions.find((i) => i.stage === 1 && i.op === 'COPY' && i.args.startsWith('--from='))!;
  const [from, sourceDir, dest] = copy.args.split(/\s+/);
  expect(from).toBe('--from=build');
  // The whole folder (a trailing slash: its contents), so the chunks go with the entry point.
  expect(sourceDir).toBe(`${path.posix.join(workdir, distDir)}/`);
  const entrypoint = JSON.parse(instructions.find((i) => i.op === 'ENTRYPOINT')!.args);
  expect(entrypoint[entrypoint.length - 1]).toBe(path.posix.join(dest, 'agent-sandbox-operator.mjs'));
});

test('the version label and build info come from build arguments the release workflow passes', () => {
  expect(dockerfile).toMatch(/^ARG VERSION=/m);
  expect(dockerfile).toMatch(/AGENT_SANDBOX_VERSION=\$VERSION/);
});
