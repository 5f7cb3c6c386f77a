/**
 * The SDK as npm delivers it: `npm pack` in a fresh copy of sdk/ (the files git has there, and the
 * repository root's node_modules, as after `npm ci` in a clone), installed into an empty project
 * from the tarball alone, type-checked there by a strict consumer with skipLibCheck off, and run by
 * plain `node` against the local control plane: claim from a warm pool, `echo hi`, close.
 */
import { execFile, execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { waitFor } from '../../../tools/control-plane/kube';
import { DataPlane } from '../data-plane/data-plane';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface Packed {
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

let work: string;
/** `npm pack --dry-run --ignore-scripts` of the fresh copy: what the package held when nothing built it. */
let unbuilt: Packed;
let packed: Packed;
let tarball: string;
/** The extracted tarball (its package/ folder). */
let extracted: string;
let consumer: string;
let dp: DataPlane;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-packed-'));
  // Packing and installing overlap with the data plane's start.
  const packing = (async () => {
    const sdk = freshCopy(path.join(work, 'clone'));
    unbuilt = await npmPack(sdk, ['--dry-run', '--ignore-scripts']);
    packed = await npmPack(sdk, ['--pack-destination', work]);
    tarball = path.join(work, packed.filename);
    extracted = path.join(work, 'extracted');
    fs.mkdirSync(extracted);
    await run('tar', ['-xzf', tarball, '-C', extracted]);
    extracted = path.join(extracted, 'package');
    consumer = path.join(work, 'consumer');
    fs.mkdirSync(consumer);
    fs.writeFileSync(path.join(consumer, 'package.json'), `${JSON.stringify({ name: 'sdk-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`);
    // The registry serves @kubernetes/client-node and its dependencies; the npm cache usually has them.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: consumer, timeout: 150_000 });
  })();
  try {
    dp = await DataPlane.start('sdk-packed', 1, { claims: 0 });
  } finally {
    await packing;
  }
}, 300_000);

afterAll(async () => {
  await dp?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/**
 * sdk/ as a clone has it (what git tracks there, and new files it does not ignore), beside a link to
 * the root's node_modules, where `npm ci` in the clone's root puts the SDK's build dependencies.
 */
function freshCopy(clone: string): string {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', 'sdk'], { cwd: ROOT, encoding: 'utf8' });
  for (const file of listed.split('\0').filter(Boolean)) {
    if (!fs.existsSync(path.join(ROOT, file))) continue; // deleted in the working tree
    fs.mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(clone, file));
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
  if (fs.existsSync(path.join(clone, 'sdk', 'dist'))) throw new Error('the copy has a dist/: git should ignore sdk/dist');
  return path.join(clone, 'sdk');
}

async function npmPack(cwd: string, args: string[]): Promise<Packed> {
  const { stdout } = await run('npm', ['pack', '--json', ...args], { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  // The prepack build's output, if any, comes before npm's JSON.
  const [result] = JSON.parse(stdout.slice(stdout.search(/^\[/m)));
  return result;
}

const paths = (p: Packed) => p.files.map((f) => f.path);

describe('the packed SDK', () => {
  test('holds the build (dist/ with declarations), its sources, LICENSE and README, and no tests or build files', () => {
    const files = paths(packed);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'LICENSE', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'src/index.ts']));
    // Every source module has its build beside it (a .js and a .d.ts in dist/).
    const modules = files.filter((f) => /^src\/.*\.ts$/.test(f) && !f.endsWith('.d.ts')).map((f) => f.slice('src/'.length, -'.ts'.length));
    expect(modules.length).toBeGreaterThan(5);
    expect(modules.filter((m) => !files.includes(`dist/${m}.js`) || !files.includes(`dist/${m}.d.ts`))).toEqual([]);
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|\.spec\.|jest\.config|tsconfig|^scripts\/|node_modules/.test(f))).toEqual([]);
    expect(files.filter((f) => !/^(dist|src)\//.test(f)).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(fs.readFileSync(path.join(extracted, 'LICENSE'), 'utf8')).toBe(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'));
  });

  test('negative control: without its prepack build the same copy packs no dist/ (the 2-file package this test would have caught)', () => {
    const files = paths(unbuilt);
    expect(files.some((f) => f.startsWith('dist/'))).toBe(false);
    expect(files.some((f) => f.endsWith('.js'))).toBe(false);
    expect(files.length).toBeLessThan(paths(packed).length);
  });

  test('every source map names files the package ships', () => {
    const maps = paths(packed).filter((f) => f.endsWith('.map'));
    expect(maps).toEqual(expect.arrayContaining(['dist/index.js.map', 'dist/index.d.ts.map']));
    for (const map of maps) {
      const { sources } = JSON.parse(fs.readFileSync(path.join(extracted, map), 'utf8'));
      for (const source of sources) expect([map, fs.existsSync(path.resolve(path.dirname(path.join(extracted, map)), source))]).toEqual([map, true]);
    }
  });

  test('its package.json: ESM exports with types first, sideEffects false, engines, the version', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(extracted, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: '@cdk8s-agent-sandbox/sdk', type: 'module', types: './dist/index.d.ts', sideEffects: false, license: 'Apache-2.0' });
    expect(Object.keys(pkg.exports['.'])).toEqual(['types', 'import']);
    expect(pkg.exports['./package.json']).toBe('./package.json');
    expect(pkg.engines.node).toMatch(/^>=20/);
    expect(pkg.version).toBe(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    // Its declarations name none of client-node's types (which need @types/ws).
    const declarations = paths(packed).filter((f) => f.endsWith('.d.ts'));
    for (const file of declarations) expect([file, /['"]@kubernetes\/client-node['"]/.test(fs.readFileSync(path.join(extracted, file), 'utf8'))]).toEqual([file, false]);
  });
});

describe('a project with only the tarball installed', () => {
  test('type-checks a strict consumer with skipLibCheck off, module nodenext and no @types of its own', async () => {
    expect(fs.existsSync(path.join(consumer, 'node_modules', '@types', 'ws'))).toBe(false);
    fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: false, noEmit: true },
      include: ['consumer.ts'],
    }, null, 2));
    fs.writeFileSync(path.join(consumer, 'consumer.ts'), [
      "import { SandboxClient, SandboxError, type KubeConfigLike, type RunResult } from '@cdk8s-agent-sandbox/sdk';",
      '',
      'export async function hello(kubeconfig: string | KubeConfigLike, namespace: string): Promise<string> {',
      "  await using client = new SandboxClient({ kubeconfig, namespace, connection: { mode: 'pod' } });",
      "  await using sandbox = await client.claim({ pool: 'pool', ttl: '5m' });",
      "  const result: RunResult = await sandbox.run('echo hi', { onStdout: (chunk: string) => void chunk });",
      '  const code: number = result.exitCode;',
      "  const text: string = await sandbox.files.readText('a.txt').catch((err: unknown) => (err instanceof SandboxError ? err.message : ''));",
      '  return `${result.stdout}${code}${text}`;',
      '}',
      '',
      '// The types are the SDK\'s, not any: a wrong call is an error.',
      '// @ts-expect-error pool is a string',
      'export const wrong = (client: SandboxClient) => client.claim({ pool: 1 });',
      '',
    ].join('\n'));
    await expect(run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: consumer, timeout: 120_000 }).catch((err) => {
      throw new Error(`tsc failed:\n${err.stdout}${err.stderr}`);
    })).resolves.toBeDefined();
  });

  test('runs an ESM script with plain node: claim from the pool, echo hi, close', async () => {
    fs.writeFileSync(path.join(consumer, 'run.mjs'), [
      "import { SandboxClient } from '@cdk8s-agent-sandbox/sdk';",
      '',
      'const [kubeconfig, namespace] = process.argv.slice(2);',
      "const client = new SandboxClient({ kubeconfig, namespace, connection: { mode: 'pod' } });",
      "const sandbox = await client.claim({ pool: 'pool', ttl: '5m' });",
      "const result = await sandbox.run('echo hi');",
      'await sandbox.close();',
      'await client.close();',
      "const resolved = import.meta.resolve('@cdk8s-agent-sandbox/sdk');",
      'process.stdout.write(JSON.stringify({ claim: sandbox.claim, result, resolved }));',
      '',
    ].join('\n'));
    const { stdout } = await run(process.execPath, ['run.mjs', dp.kube.kubeconfig, dp.ns], { cwd: consumer, timeout: 120_000 });
    const out = JSON.parse(stdout);
    expect(out.result).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0, timedOut: false });
    // The installed copy, not the repository's sdk/.
    expect(out.resolved).toBe(`file://${path.join(fs.realpathSync(consumer), 'node_modules', '@cdk8s-agent-sandbox', 'sdk', 'dist', 'index.js')}`);
    await waitFor(async () => (await dp.ext.get('sandboxclaims', out.claim)) === undefined, 60_000, `claim ${out.claim} to be deleted by close()`);
  });
});
