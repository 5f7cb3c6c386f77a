// The main job: synthesize the release bundle and every example to dist/, one YAML file per
// chart, with stable names and ordering, ready to commit for GitOps. No cluster needed.
//
//   npm run synth            (writes dist/)
//   npm run synth -- <dir>   (writes <dir>/)
import * as fs from 'fs';
import * as path from 'path';
import { App, Chart, YamlOutputType } from 'cdk8s';
import { EXAMPLES } from '../examples';
import { AgentSandboxExtensions, AgentSandboxSystem, SandboxCrds } from '../src';

/** The release files: split like upstream's release, plus the CRDs alone (`crds.yaml`). */
export const RELEASE_FILES = ['sandbox.yaml', 'extensions.yaml', 'sandbox-with-extensions.yaml', 'crds.yaml'];

/**
 * Writes the release files: the three split like upstream's release, and `crds.yaml` with only the
 * four CRDs, for installs that apply CRDs in their own stage and the rest with `crds: false`.
 */
export function synthRelease(outdir: string): void {
  const app = new App({ outdir, outputFileExtension: '.yaml', yamlOutputType: YamlOutputType.FILE_PER_CHART });
  const chart = (id: string) => new Chart(app, id, { disableResourceNameHashes: true });
  new AgentSandboxSystem(chart('sandbox'), 'system', { extensions: false });
  new AgentSandboxExtensions(chart('extensions'), 'extensions');
  new AgentSandboxSystem(chart('sandbox-with-extensions'), 'system');
  new SandboxCrds(chart('crds'), 'crds');
  app.synth();
}

/** Writes each example to `<outdir>/<name>/<chart>.yaml`. */
export function synthExamples(outdir: string): void {
  for (const [name, build] of Object.entries(EXAMPLES)) {
    const app = new App({ outdir: path.join(outdir, name), outputFileExtension: '.yaml', yamlOutputType: YamlOutputType.FILE_PER_CHART });
    build(app);
    app.synth();
  }
}

if (require.main === module) {
  const outdir = path.resolve(process.argv[2] ?? 'dist');
  const examples = path.join(outdir, 'examples');
  const started = Date.now();
  // Only what this job writes is replaced: dist/packages holds the jsii-pacmak packages.
  for (const file of RELEASE_FILES) fs.rmSync(path.join(outdir, file), { force: true });
  fs.rmSync(examples, { recursive: true, force: true });
  synthRelease(outdir);
  synthExamples(examples);
  const written = [
    ...RELEASE_FILES.map((f) => path.join(outdir, f)),
    ...fs.readdirSync(examples, { recursive: true, encoding: 'utf8' }).sort().map((f) => path.join(examples, f)),
  ].filter((f) => fs.statSync(f).isFile()).map((f) => path.relative(process.cwd(), f));
  console.log(`synthesized ${written.length} files in ${Date.now() - started} ms:\n  ${written.join('\n  ')}`);
}
