import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  BUNDLE_CHUNKS, INSTALLED_BUNDLE, INSTALLED_NODE, InstallRuntimeError, InstallRuntimeUsageError, installRuntime, parseInstallRuntimeArgs,
} from '../../src/commands/install-runtime';

let base: string;
let sources: { node: string; bundle: string };
beforeEach(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'install-runtime-'));
  sources = { node: path.join(base, 'src-node'), bundle: path.join(base, 'src-bundle.mjs') };
  writeFileSync(sources.node, 'not really node');
  chmodSync(sources.node, 0o700);
  writeFileSync(sources.bundle, 'export {};\n');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

function target(): string {
  return mkdtempSync(path.join(base, 'bin-'));
}

test('copies node and the bundle under their fixed names, executable by anyone, leaving no temp files', async () => {
  const dir = target();
  expect(await installRuntime(dir, sources)).toEqual({ files: { [INSTALLED_NODE]: 'copied', [INSTALLED_BUNDLE]: 'copied' }, removed: [] });
  expect(readdirSync(dir).sort()).toEqual([INSTALLED_BUNDLE, INSTALLED_NODE].sort());
  expect(readFileSync(path.join(dir, INSTALLED_NODE), 'utf8')).toBe('not really node');
  expect(readFileSync(path.join(dir, INSTALLED_BUNDLE), 'utf8')).toBe('export {};\n');
  for (const name of [INSTALLED_NODE, INSTALLED_BUNDLE]) expect(statSync(path.join(dir, name)).mode % 0o1000).toBe(0o755);
});

test('idempotent: a second run keeps matching files; a changed source replaces its copy', async () => {
  const dir = target();
  await installRuntime(dir, sources);
  expect(await installRuntime(dir, sources)).toEqual({ files: { [INSTALLED_NODE]: 'unchanged', [INSTALLED_BUNDLE]: 'unchanged' }, removed: [] });
  writeFileSync(sources.bundle, 'export const v = 2;\n');
  utimesSync(sources.bundle, new Date(2030, 0, 1), new Date(2030, 0, 1));
  expect(await installRuntime(dir, sources)).toEqual({ files: { [INSTALLED_NODE]: 'unchanged', [INSTALLED_BUNDLE]: 'copied' }, removed: [] });
  expect(readFileSync(path.join(dir, INSTALLED_BUNDLE), 'utf8')).toBe('export const v = 2;\n');
  expect(readdirSync(dir)).toHaveLength(2);
});

/** A bundle split like operator/build.mjs splits it: the entry point imports a chunk from `chunks/` beside it. */
function splitBundle(chunk: string, body: string): void {
  mkdirSync(path.join(base, BUNDLE_CHUNKS), { recursive: true });
  writeFileSync(path.join(base, BUNDLE_CHUNKS, chunk), body);
  writeFileSync(sources.bundle, `const m = await import('./${BUNDLE_CHUNKS}/${chunk}');\nprocess.stdout.write(m.said(process.argv[2]));\n`);
}

test('a split bundle: its chunks go into chunks/ beside it, and the copies run from the new place', async () => {
  splitBundle('runtime-AAAA.mjs', 'export const said = (arg) => `chunk A ran ${arg}`;\n');
  const dir = target();
  expect(await installRuntime(dir, { node: process.execPath, bundle: sources.bundle })).toEqual({
    files: { [`${BUNDLE_CHUNKS}/runtime-AAAA.mjs`]: 'copied', [INSTALLED_NODE]: 'copied', [INSTALLED_BUNDLE]: 'copied' }, removed: [],
  });
  expect(statSync(path.join(dir, BUNDLE_CHUNKS, 'runtime-AAAA.mjs')).mode % 0o1000).toBe(0o755);
  const run = () => execFileSync(path.join(dir, INSTALLED_NODE), [path.join(dir, INSTALLED_BUNDLE), 'runtime'], { encoding: 'utf8', stdio: 'pipe' });
  expect(run()).toBe('chunk A ran runtime');
  // The negative control: the entry point alone cannot run.
  rmSync(path.join(dir, BUNDLE_CHUNKS), { recursive: true });
  expect(run).toThrow(/Cannot find module|ERR_MODULE_NOT_FOUND/);
});

test('a new version: its chunks are copied, the entry point replaced, the old version\'s chunks removed, matching ones kept', async () => {
  splitBundle('runtime-AAAA.mjs', 'export const said = () => "A";\n');
  writeFileSync(path.join(base, BUNDLE_CHUNKS, 'shared-SSSS.mjs'), 'export {};\n');
  const dir = target();
  await installRuntime(dir, { node: process.execPath, bundle: sources.bundle });
  rmSync(path.join(base, BUNDLE_CHUNKS, 'runtime-AAAA.mjs'));
  splitBundle('runtime-BBBB.mjs', 'export const said = (arg) => `chunk B ran ${arg}`;\n');
  utimesSync(sources.bundle, new Date(2030, 0, 1), new Date(2030, 0, 1));
  expect(await installRuntime(dir, { node: process.execPath, bundle: sources.bundle })).toEqual({
    files: {
      [`${BUNDLE_CHUNKS}/runtime-BBBB.mjs`]: 'copied',
      [`${BUNDLE_CHUNKS}/shared-SSSS.mjs`]: 'unchanged',
      [INSTALLED_NODE]: 'unchanged',
      [INSTALLED_BUNDLE]: 'copied',
    },
    removed: [`${BUNDLE_CHUNKS}/runtime-AAAA.mjs`],
  });
  expect(readdirSync(path.join(dir, BUNDLE_CHUNKS)).sort()).toEqual(['runtime-BBBB.mjs', 'shared-SSSS.mjs']);
  expect(execFileSync(path.join(dir, INSTALLED_NODE), [path.join(dir, INSTALLED_BUNDLE), 'x'], { encoding: 'utf8' })).toBe('chunk B ran x');
});

test('a missing directory, or a file in its place, is an error naming it and the fix', async () => {
  for (const dir of [path.join(base, 'missing'), sources.node]) {
    const error = await installRuntime(dir, sources).catch((err: Error) => err);
    expect(error).toBeInstanceOf(InstallRuntimeError);
    expect((error as Error).message).toBe(`${dir} is not a directory; mount a volume there (an emptyDir shared with the sandbox container) and pass its path`);
  }
});

test('a missing source fails without leaving a temp file behind', async () => {
  const dir = target();
  await expect(installRuntime(dir, { ...sources, bundle: path.join(base, 'nope.mjs') })).rejects.toThrow(/ENOENT/);
  expect(readdirSync(dir)).toEqual([INSTALLED_NODE]);
});

test('the copied node binary runs the copied bundle from the new place', async () => {
  const dir = target();
  writeFileSync(sources.bundle, 'process.stdout.write(`ran ${process.argv[2]} with node ${process.version}`);\n');
  await installRuntime(dir, { node: process.execPath, bundle: sources.bundle });
  const out = execFileSync(path.join(dir, INSTALLED_NODE), [path.join(dir, INSTALLED_BUNDLE), 'runtime'], { encoding: 'utf8' });
  expect(out).toBe(`ran runtime with node ${process.version}`);
});

test('arguments: one absolute directory, or --help', () => {
  expect(parseInstallRuntimeArgs(['/opt/agent-sandbox/bin'])).toBe('/opt/agent-sandbox/bin');
  expect(parseInstallRuntimeArgs(['--help'])).toBeUndefined();
  for (const args of [[], ['/a', '/b'], ['relative/dir'], ['--dir=/x']]) {
    expect(() => parseInstallRuntimeArgs(args)).toThrow(new InstallRuntimeUsageError(`expected one absolute directory, got ${JSON.stringify(args)}`));
  }
});
