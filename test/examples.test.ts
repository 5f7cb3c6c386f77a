import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, Testing } from 'cdk8s';
import { synthExamples, synthRelease } from '../build-tools/synth';
import { EXAMPLES } from '../examples';

describe.each(Object.entries(EXAMPLES))('example %s', (_name, build) => {
  const app = Testing.app();
  build(app);
  test.each(app.charts.map((c) => [c.node.id, c]))('chart %s matches its snapshot', (_id, chart) => {
    expect(Testing.synth(chart as any)).toMatchSnapshot();
  });
});

describe('the synth main job', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-'));
  afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

  test('writes the release split like upstream, one file per chart, stable across runs', () => {
    synthRelease(out);
    synthExamples(path.join(out, 'examples'));
    const first = listFiles(out).map((f) => [f, fs.readFileSync(path.join(out, f), 'utf8')]);
    expect(first.map(([f]) => f)).toEqual(expect.arrayContaining([
      'sandbox.yaml', 'extensions.yaml', 'sandbox-with-extensions.yaml', 'crds.yaml',
      'examples/quickstart/quickstart.yaml', 'examples/gitops/platform.yaml',
      'examples/gitops/team-search.yaml', 'examples/hardened-gvisor/hardened-gvisor.yaml',
      'examples/hpa-pool/hpa-pool.yaml', 'examples/router-namespace/router-namespace.yaml',
      'examples/cdk8s-plus/cdk8s-plus.yaml',
    ]));
    synthRelease(out);
    synthExamples(path.join(out, 'examples'));
    const second = listFiles(out).map((f) => [f, fs.readFileSync(path.join(out, f), 'utf8')]);
    expect(second).toEqual(first);
  });

  test('the core bundle has only the Sandbox CRD; the full one has all four, CRDs right after the Namespace', () => {
    const kinds = (file: string) => fs.readFileSync(path.join(out, file), 'utf8').split(/^---$/m)
      .map((doc) => /^kind: (\S+)$/m.exec(doc)?.[1]).filter(Boolean);
    const crdNames = (file: string) => [...fs.readFileSync(path.join(out, file), 'utf8').matchAll(/^ {2}name: (\S+\.agents\.x-k8s\.io)$/gm)].map((m) => m[1]);
    expect(crdNames('sandbox.yaml')).toEqual(['sandboxes.agents.x-k8s.io']);
    expect(crdNames('sandbox-with-extensions.yaml')).toHaveLength(4);
    expect(crdNames('crds.yaml')).toEqual(crdNames('sandbox-with-extensions.yaml'));
    expect(kinds('crds.yaml')).toEqual(Array(4).fill('CustomResourceDefinition'));
    const all = kinds('sandbox-with-extensions.yaml');
    expect(all.slice(0, 5)).toEqual(['Namespace', 'CustomResourceDefinition', 'CustomResourceDefinition', 'CustomResourceDefinition', 'CustomResourceDefinition']);
  });
});

test('every example app builds on a fresh App (as `ts-node examples/<name>/main.ts` does)', () => {
  for (const build of Object.values(EXAMPLES)) expect(() => build(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'ex-')) }))).not.toThrow();
});

function listFiles(dir: string, prefix = ''): string[] {
  return fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? listFiles(dir, path.join(prefix, e.name)) : [path.join(prefix, e.name)]));
}
