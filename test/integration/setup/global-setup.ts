/**
 * Starts the shared control plane once per jest run and tells test files where it is via
 * environment variables (workers are forked after global setup, so they inherit them).
 *
 * CONTROL_PLANE_REUSE=1 uses the cluster left running by `tools/control-plane/cli.ts up`
 * instead (fast edit-test loops); teardown then leaves it running.
 * Manifests in setup/manifests/ and in CONTROL_PLANE_MANIFESTS=a.yaml,b.yaml are applied before
 * kube-controller-manager starts: put CRDs there so garbage collection of custom-resource
 * owners works at once instead of after the collector's 30 s discovery resync.
 */
import * as fs from 'fs';
import * as path from 'path';
import { startControlPlane } from '../../../tools/control-plane/control-plane';
import { ENV } from '../../../tools/control-plane/kube';
import { isRunning } from '../../../tools/control-plane/processes';
import { readState, stateFile } from '../../../tools/control-plane/state';
import { writeCrds } from '../../../tools/shared/crds';

export default async function globalSetup(): Promise<void> {
  if (process.env.CONTROL_PLANE_REUSE === '1') {
    const state = readState();
    if (!state || !state.processes.every(isRunning)) {
      throw new Error(`CONTROL_PLANE_REUSE=1 but no running cluster is recorded in ${stateFile()}; run "tools/control-plane/cli.ts up"`);
    }
    exportEnv(state.kubeconfig, state.binDir, state.workDir);
    return;
  }
  const dir = path.join(__dirname, 'manifests');
  const manifests = [
    ...fs.readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f)).sort().map((f) => path.join(dir, f)),
    ...(process.env.CONTROL_PLANE_MANIFESTS ?? '').split(',').filter(Boolean).map((f) => path.resolve(f)),
  ];
  // Our CRDs go in before kube-controller-manager starts, so garbage collection of Sandboxes and
  // claims works at once instead of after the collector's 30 s rediscovery.
  manifests.unshift(writeCrds());
  const cp = await startControlPlane({ nodes: 3, manifests });
  (globalThis as any).__CONTROL_PLANE__ = cp;
  exportEnv(cp.kubeconfig, cp.binDir, cp.workDir);
}

function exportEnv(kubeconfig: string, binDir: string, workDir: string): void {
  process.env[ENV.kubeconfig] = kubeconfig;
  process.env[ENV.binDir] = binDir;
  process.env[ENV.workDir] = workDir;
}
