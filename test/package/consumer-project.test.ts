/**
 * What a platform engineer does with the npm package: a fresh cdk8s project (cdk8s, constructs,
 * cdk8s-plus-30) installs the library from its tarball alone, writes a chart with the install, a
 * template running as a cdk8s-plus ServiceAccount, a warm pool and access for the agent,
 * type-checks it strictly (skipLibCheck off, so the package's declarations are checked too),
 * compiles it and runs `cdk8s synth`. Needs a compiled library (`npx projen compile`).
 *
 * No registry: the dependencies are packed from this repository's node_modules (each bundles its
 * own dependencies) and installed with `npm install --offline` beside the library's tarball.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import * as YAML from 'yaml';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const CDK8S = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'bin', 'cdk8s');
/** The consumer's dependencies, at the versions this repository builds and tests with. */
const DEPENDENCIES = ['cdk8s', 'constructs', 'cdk8s-plus-30'];

const CHART = `import { App, Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-30';
import { AgentSandboxSystem, SandboxAccess, SandboxTemplate, SandboxWarmPool } from 'cdk8s-agent-sandbox';

const app = new App();

new AgentSandboxSystem(new Chart(app, 'system', { disableResourceNameHashes: true }), 'system', { router: {} });

const agents = new Chart(app, 'agents', { namespace: 'agents', disableResourceNameHashes: true });
const serviceAccount = new kplus.ServiceAccount(agents, 'agent', { metadata: { name: 'agent' } });
const template = new SandboxTemplate(agents, 'python', {
  metadata: { name: 'python' },
  serviceAccount,
  containers: [{
    image: 'python:3.12-slim',
    security: { runAsUser: 1000, runAsGroup: 1000 },
    resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
  }],
  runtime: {},
});
const pool: SandboxWarmPool = new SandboxWarmPool(agents, 'pool', { metadata: { name: 'python' }, template, replicas: 2 });
new SandboxAccess(agents, 'access', { serviceAccounts: [serviceAccount] });

// The types are the package's, not any: wrong props do not compile.
export function wrong(): void {
  // @ts-expect-error replicas is a number
  new SandboxWarmPool(agents, 'bad', { metadata: { name: 'bad' }, template, replicas: 'two' });
  // @ts-expect-error SandboxTemplate has no prop images
  new SandboxTemplate(agents, 'bad-template', { containers: [], images: [] });
  void pool;
}

app.synth();
`;

let work: string;
let consumer: string;
let tarball: string;

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'lib', 'index.js'))) throw new Error('lib/ is missing: run `npx projen compile` first');
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'consumer-project-'));
  const packs = path.join(work, 'packs');
  fs.mkdirSync(packs);
  // The library as `npm publish` would ship it (lib/ is already built: no prepack to run).
  tarball = path.join(packs, await npmPack(ROOT, packs));
  const deps = await Promise.all(DEPENDENCIES.map((name) => npmPack(path.join(ROOT, 'node_modules', name), packs)));

  consumer = path.join(work, 'project');
  fs.mkdirSync(consumer);
  fs.writeFileSync(path.join(consumer, 'package.json'), `${JSON.stringify({ name: 'platform', version: '1.0.0', private: true }, null, 2)}\n`);
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball, ...deps.map((file) => path.join(packs, file))],
    { cwd: consumer, timeout: 120_000 });
  fs.writeFileSync(path.join(consumer, 'cdk8s.yaml'), 'language: typescript\napp: node main.js\n');
  fs.writeFileSync(path.join(consumer, 'main.ts'), CHART);
  fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'commonjs', target: 'es2022', skipLibCheck: false, types: [], outDir: '.' },
    files: ['main.ts'],
  }, null, 2));
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

async function npmPack(dir: string, destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], { cwd: dir, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout)[0].filename;
}

test('the project has the library from the tarball and the dependencies at this repository\'s versions', () => {
  const installed = (name: string) => JSON.parse(fs.readFileSync(path.join(consumer, 'node_modules', name, 'package.json'), 'utf8'));
  const pkg = JSON.parse(fs.readFileSync(path.join(consumer, 'package.json'), 'utf8'));
  expect(pkg.dependencies['cdk8s-agent-sandbox']).toMatch(/^file:.*cdk8s-agent-sandbox-.*\.tgz$/);
  // A copy, not a link to this repository.
  expect(fs.lstatSync(path.join(consumer, 'node_modules', 'cdk8s-agent-sandbox')).isSymbolicLink()).toBe(false);
  expect(fs.existsSync(path.join(consumer, 'node_modules', 'cdk8s-agent-sandbox', 'src'))).toBe(false);
  for (const name of DEPENDENCIES) {
    expect([name, installed(name).version]).toEqual([name, JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version]);
  }
});

test('the chart type-checks strictly against the package\'s declarations, and wrong props do not', async () => {
  await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: consumer, timeout: 120_000 }).catch((err) => {
    throw new Error(`tsc failed:\n${err.stdout}${err.stderr}`);
  });
  expect(fs.existsSync(path.join(consumer, 'main.js'))).toBe(true);
}, 150_000);

test('negative control: without @ts-expect-error the wrong props fail tsc, naming the prop', async () => {
  const dir = path.join(work, 'negative');
  fs.mkdirSync(dir);
  fs.symlinkSync(path.join(consumer, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(dir, 'main.ts'), CHART.replace(/^\s*\/\/ @ts-expect-error.*\n/gm, ''));
  fs.copyFileSync(path.join(consumer, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
  const failure = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit'], { cwd: dir, timeout: 120_000 }).then(() => undefined, (err) => `${err.stdout}`);
  expect(failure).toMatch(/main\.ts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
  expect(failure).toContain("'images' does not exist in type 'SandboxTemplateProps'");
}, 150_000);

describe('cdk8s synth', () => {
  let manifests: Record<string, unknown[]>;
  beforeAll(async () => {
    if (!fs.existsSync(path.join(consumer, 'main.js'))) {
      await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: consumer, timeout: 120_000 });
    }
    await run(process.execPath, [CDK8S, 'synth', '--no-check-upgrade'], { cwd: consumer, timeout: 120_000 }).catch((err) => {
      throw new Error(`cdk8s synth failed:\n${err.stdout}${err.stderr}`);
    });
    const dist = path.join(consumer, 'dist');
    manifests = Object.fromEntries(fs.readdirSync(dist).sort().map((file) =>
      [file, YAML.parseAllDocuments(fs.readFileSync(path.join(dist, file), 'utf8')).map((doc) => doc.toJSON())]));
  }, 150_000);

  test('writes one file per chart', () => {
    expect(Object.keys(manifests)).toEqual(['agents.k8s.yaml', 'system.k8s.yaml']);
  });

  test('the install: its objects (the whole objects are the install tests\' snapshots)', () => {
    const objects = manifests['system.k8s.yaml'] as { kind: string; metadata: { name: string; namespace?: string } }[];
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`)).toMatchSnapshot();
  });

  test('the agents\' chart: ServiceAccount, template, pool and access, in full', () => {
    const objects = manifests['agents.k8s.yaml'] as { kind: string; spec?: { podTemplate?: { spec?: { serviceAccountName?: string } } } }[];
    expect(objects.find((o) => o.kind === 'SandboxTemplate')?.spec?.podTemplate?.spec?.serviceAccountName).toBe('agent');
    expect(manifests['agents.k8s.yaml']).toMatchSnapshot();
  });
});
