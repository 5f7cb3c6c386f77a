import type { ControlPlane } from '../../../tools/control-plane/control-plane';

/** Stops the control plane and the real node global-setup started (nothing when a cluster was reused). */
export default async function globalTeardown(): Promise<void> {
  const cp = (globalThis as any).__CONTROL_PLANE__ as ControlPlane | undefined;
  await cp?.stop();
}
