import type { ControlPlane } from '../../../tools/control-plane/control-plane';
import { podProcessesLeft } from '../../../tools/control-plane/real-node';

/**
 * Stops the control plane and the real node global-setup started (nothing when a cluster was
 * reused), and fails the run if any Pod process survived it.
 */
export default async function globalTeardown(): Promise<void> {
  const cp = (globalThis as any).__CONTROL_PLANE__ as ControlPlane | undefined;
  if (!cp) return;
  await cp.stop();
  const left = podProcessesLeft();
  if (left.length > 0) {
    throw new Error(`the real node's Pods left ${left.length} processes running: ${left.map((p) => `${p.pid} ${p.cmd.replace(/\0/g, ' ').slice(0, 80)}`).join('; ')}`);
  }
}
