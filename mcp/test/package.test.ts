/**
 * The MCP server as npm would publish it: `npm pack --dry-run --json` in a fresh copy of mcp/ (the
 * files git has there, beside links to the repository root's node_modules and sdk/, as in a clone
 * after `npm ci` and the SDK's build), whose prepack checks what the build needs and builds it. The
 * package holds the bin (with its shebang), the build, its sources, LICENSE and README, and a
 * package.json that npm can publish publicly. Without what the build needs, prepack says what to do.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Packed {
  readonly name: string;
  readonly version: string;
  readonly files: readonly { readonly path: string }[];
}

let work: string;
let copy: string;
/** `--ignore-scripts`: what the package holds when nothing builds it. */
let unbuilt: Packed;
let packed: Packed;

/** mcp/ as a clone has it (what git tracks there, and new files it does not ignore), under `dir`. */
function freshCopy(dir: string): string {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', 'mcp'], { cwd: ROOT, encoding: 'utf8' });
  for (const file of listed.split('\0').filter(Boolean)) {
    if (!fs.existsSync(path.join(ROOT, file))) continue; // deleted in the working tree
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  if (fs.existsSync(path.join(dir, 'mcp', 'dist'))) throw new Error('the copy has a dist/: git should ignore mcp/dist');
  return path.join(dir, 'mcp');
}

async function npmPack(cwd: string, args: readonly string[]): Promise<Packed> {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', ...args], { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  // The prepack build's output, if any, comes before npm's JSON.
  const [result] = JSON.parse(stdout.slice(stdout.search(/^\[/m)));
  return result;
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'sdk', 'dist', 'index.d.ts'))) throw new Error('sdk/dist is missing: run `npx projen sdk:build` first (mcp:test does)');
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-package-'));
  copy = freshCopy(work);
  // The root's node_modules (which links @cdk8s-agent-sandbox/sdk to sdk/), and sdk/ for the prepack check it shares.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(work, 'node_modules'), 'dir');
  fs.symlinkSync(path.join(ROOT, 'sdk'), path.join(work, 'sdk'), 'dir');
  unbuilt = await npmPack(copy, ['--ignore-scripts']);
  packed = await npmPack(copy, []);
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const paths = (p: Packed) => p.files.map((f) => f.path);
const manifest = () => JSON.parse(fs.readFileSync(path.join(copy, 'package.json'), 'utf8'));

describe('npm pack in mcp/', () => {
  test('lists the bin, the build (dist/ with declarations), the sources, LICENSE and README, and no tests or build files', () => {
    const files = paths(packed);
    expect(files).toEqual(expect.arrayContaining([
      'package.json', 'LICENSE', 'README.md', 'dist/cli.js', 'dist/index.js', 'dist/index.d.ts', 'dist/server.js', 'src/cli.ts',
    ]));
    expect(files.filter((f) => !/^(dist|src)\//.test(f)).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|jest\.config|tsconfig|^scripts\/|node_modules/.test(f))).toEqual([]);
    // Every module of src/ is built.
    for (const source of files.filter((f) => /^src\/.*\.ts$/.test(f))) {
      const built = source.replace(/^src\//, 'dist/').replace(/\.ts$/, '');
      expect([source, files.includes(`${built}.js`), files.includes(`${built}.d.ts`)]).toEqual([source, true, true]);
    }
  });

  test('negative control: without its prepack build the same copy packs no dist/, so no bin', () => {
    const files = paths(unbuilt);
    expect(files.some((f) => f.startsWith('dist/'))).toBe(false);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'LICENSE', 'README.md', 'src/cli.ts']));
  });

  test('the bin is in the package, a Node script with its shebang', () => {
    const { bin } = manifest();
    expect(Object.keys(bin)).toEqual(['agent-sandbox-mcp']);
    const target = path.posix.normalize(bin['agent-sandbox-mcp']);
    expect(target).toBe('dist/cli.js');
    expect(paths(packed)).toContain(target);
    expect(fs.readFileSync(path.join(copy, target), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  test('every export target is in the package, types first; LICENSE is the repository\'s', () => {
    const { exports, types } = manifest();
    const files = paths(packed);
    expect(files).toContain(path.posix.normalize(types));
    for (const [subpath, target] of Object.entries<string | Record<string, string>>(exports)) {
      const targets = typeof target === 'string' ? { default: target } : target;
      if (typeof target !== 'string') expect([subpath, Object.keys(target)[0]]).toEqual([subpath, 'types']);
      for (const file of Object.values(targets)) expect([subpath, files.includes(path.posix.normalize(file))]).toEqual([subpath, true]);
    }
    expect(fs.readFileSync(path.join(copy, 'LICENSE'), 'utf8')).toBe(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'));
  });

  test('package.json: public, ESM, Node >= 20, the checkout\'s version and exactly the SDK of that version', () => {
    const pkg = manifest();
    expect(pkg).toMatchObject({ name: '@cdk8s-agent-sandbox/mcp', type: 'module', license: 'Apache-2.0', publishConfig: { access: 'public' } });
    expect(pkg.private).toBeUndefined();
    expect(pkg.engines.node).toMatch(/^>=20/);
    expect(packed).toMatchObject({ name: '@cdk8s-agent-sandbox/mcp', version: pkg.version });
    const sdk = JSON.parse(fs.readFileSync(path.join(ROOT, 'sdk', 'package.json'), 'utf8'));
    expect(pkg.version).toBe(sdk.version);
    expect(pkg.dependencies['@cdk8s-agent-sandbox/sdk']).toBe(sdk.version);
    expect(pkg.scripts.prepack).toBe('node scripts/prepack.mjs && npm run build');
  });
});

describe('prepack without what the build needs', () => {
  /** Runs mcp/'s prepack in a copy whose node_modules holds `links` of the root's and, if given, an unbuilt SDK. */
  function prepackWith(links: readonly string[], unbuiltSdk: boolean): { status: number | null; stderr: string; distKept: boolean } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-prepack-'));
    try {
      const mcp = path.join(dir, 'mcp');
      fs.mkdirSync(path.join(mcp, 'scripts'), { recursive: true });
      fs.mkdirSync(path.join(mcp, 'dist'));
      fs.copyFileSync(path.join(ROOT, 'mcp', 'scripts', 'prepack.mjs'), path.join(mcp, 'scripts', 'prepack.mjs'));
      fs.symlinkSync(path.join(ROOT, 'sdk'), path.join(dir, 'sdk'), 'dir');
      for (const name of links) {
        fs.mkdirSync(path.dirname(path.join(dir, 'node_modules', name)), { recursive: true });
        fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(dir, 'node_modules', name), 'dir');
      }
      if (unbuiltSdk) {
        const sdk = path.join(dir, 'node_modules', '@cdk8s-agent-sandbox', 'sdk');
        fs.mkdirSync(sdk, { recursive: true });
        fs.writeFileSync(path.join(sdk, 'package.json'), '{ "name": "@cdk8s-agent-sandbox/sdk" }');
      }
      return { ...prepack(mcp), distKept: fs.existsSync(path.join(mcp, 'dist')) };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  function prepack(cwd: string): { status: number | null; stderr: string } {
    try {
      execFileSync(process.execPath, ['scripts/prepack.mjs'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return { status: 0, stderr: '' };
    } catch (err) {
      const failed = err as { status: number | null; stderr: string };
      return { status: failed.status, stderr: failed.stderr };
    }
  }

  const others = ['typescript', '@types/node', '@kubernetes/client-node', '@modelcontextprotocol/sdk', 'zod'];

  test('no node_modules: names them all and says to run npm ci; dist/ is left as it was', () => {
    const result = prepackWith([], false);
    expect(result).toMatchObject({ status: 1, distKept: true });
    expect(result.stderr).toContain(`@cdk8s-agent-sandbox/mcp: cannot build: ${[...others, '@cdk8s-agent-sandbox/sdk', '@cdk8s-agent-sandbox/sdk/dist/index.d.ts'].join(', ')} not found`);
    expect(result.stderr).toContain('run `npm ci` in the repository root');
  });

  test('the SDK linked but not built: says to build the SDK', () => {
    const result = prepackWith(others, true);
    expect(result).toMatchObject({ status: 1, distKept: true });
    expect(result.stderr).toContain('cannot build: @cdk8s-agent-sandbox/sdk/dist/index.d.ts not found');
    expect(result.stderr).toContain('build the SDK (`npx projen sdk:build`');
    expect(result.stderr).not.toContain('npm ci');
  });

  test('negative control: with all of it, prepack passes and empties dist/ for the build', () => {
    expect(prepackWith([...others, '@cdk8s-agent-sandbox/sdk'], false)).toEqual({ status: 0, stderr: '', distKept: false });
  });
});
