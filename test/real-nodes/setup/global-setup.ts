/**
 * Starts the local control plane with one real node and installs the platform on it as a user
 * would (tools/shared/real-system.ts), once per jest run; test files find it through environment
 * variables (workers are forked after global setup and inherit them).
 *
 * REAL_NODES_REUSE=1 uses a cluster left running by `tools/control-plane/cli.ts up --real-nodes 1`
 * (it applies the platform there too); teardown leaves it running.
 */
import { ENV, Kube } from '../../../tools/control-plane/kube';
import { isRunning } from '../../../tools/control-plane/processes';
import { readState, stateFile } from '../../../tools/control-plane/state';
import { installPlatform, startRealSystem } from '../../../tools/shared/real-system';
import { IMAGES_ENV } from '../e2e';

export default async function globalSetup(): Promise<void> {
  const log = (m: string) => process.stderr.write(`[real-nodes] ${m}\n`);
  if (process.env.REAL_NODES_REUSE === '1') {
    const state = readState();
    if (!state || !state.processes.every(isRunning) || !state.images) {
      throw new Error(`REAL_NODES_REUSE=1 but no running real-node cluster is recorded in ${stateFile()}; run "tools/control-plane/cli.ts up --real-nodes 1"`);
    }
    exportEnv(state.kubeconfig, state.binDir, state.workDir, state.images);
    await installPlatform(Kube.fromEnv(), state.workDir, log);
    return;
  }
  const system = await startRealSystem({ log });
  (globalThis as any).__CONTROL_PLANE__ = { stop: system.stop };
  exportEnv(system.cp.kubeconfig, system.cp.binDir, system.cp.workDir, system.images);
}

function exportEnv(kubeconfig: string, binDir: string, workDir: string, images: Record<string, string>): void {
  process.env[ENV.kubeconfig] = kubeconfig;
  process.env[ENV.binDir] = binDir;
  process.env[ENV.workDir] = workDir;
  process.env[IMAGES_ENV] = JSON.stringify(images);
}
