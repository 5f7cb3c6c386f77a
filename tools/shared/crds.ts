/**
 * Our synthesized CRDs as one YAML file, for a local control plane to apply before
 * kube-controller-manager starts (so owner-reference garbage collection of Sandboxes and claims
 * works at once instead of after the collector's 30 s rediscovery).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Testing } from 'cdk8s';
import * as yaml from 'yaml';
import { SandboxCrds } from '../../src/crds';

/** Writes the CRDs to a new file in the temp dir and returns its path. */
export function writeCrds(): string {
  const chart = Testing.chart();
  new SandboxCrds(chart, 'crds');
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-crds-')), 'crds.yaml');
  fs.writeFileSync(file, Testing.synth(chart).map((o) => yaml.stringify(o)).join('---\n'));
  return file;
}
