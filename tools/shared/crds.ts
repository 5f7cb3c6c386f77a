/** Our synthesized CRDs as one YAML file, applied before kube-controller-manager starts (so owner-reference GC works at once). */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Testing } from 'cdk8s';
import * as yaml from 'yaml';
import { SandboxCrds } from '../src/crds';

export function writeCrds(): string {
  const chart = Testing.chart();
  new SandboxCrds(chart, 'crds');
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-crds-')), 'crds.yaml');
  fs.writeFileSync(file, Testing.synth(chart).map((o) => yaml.stringify(o)).join('---\n'));
  return file;
}
