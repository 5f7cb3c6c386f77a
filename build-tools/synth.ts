// The main job: synthesize the release bundle and every example to dist/, one YAML file per
// chart, with stable names and ordering, ready to commit for GitOps. No cluster needed.
//
//   npm run synth            (writes dist/)
//   npm run synth -- <dir>   (writes <dir>/)
import * as fs from 'fs';
import * as path from 'path';
import { App, Chart, YamlOutputType } from 'cdk8s';
import { EXAMPLES } from '../examples';
import { AgentSandboxExtensions, AgentSandboxSystem } from '../src';

/** Writes the three release files, split like upstream's release. */
export function synthRelease(outdir: string): void {
  const app = new App({ outdir, outputFileExtension: '.yaml', yamlOutputType: YamlOutputType.FILE_PER_CHART });
  const chart = (id: string) => new Chart(app, id, { disableResourceNameHashes: true });
  new AgentSandboxSystem(chart('sandbox'), 'system', { extensions: false });
  new AgentSandboxExtensions(chart('extensions'), 'extensions');
  new AgentSandboxSystem(chart('sandbox-with-extensions'), 'system');
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
  const started = Date.now();
  fs.rmSync(outdir, { recursive: true, force: true });
  synthRelease(outdir);
  synthExamples(path.join(outdir, 'examples'));
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.push(path.relative(process.cwd(), full));
    }
  };
  walk(outdir);
  console.log(`synthesized ${files.length} files in ${Date.now() - started} ms:\n  ${files.join('\n  ')}`);
}
