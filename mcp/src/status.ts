/**
 * get_sandbox_status's read of the Sandbox object (agents.x-k8s.io/v1beta1) with the server's own
 * Kubernetes credentials: its Ready condition, as upstream's server reports it.
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { SandboxStatus } from './server.js';

export function sandboxStatusReader(kubeconfig: KubeConfig): (sandbox: SandboxHandle) => Promise<SandboxStatus> {
  const api = kubeconfig.makeApiClient(CustomObjectsApi);
  return async (sandbox) => {
    let object: any;
    try {
      object = await api.getNamespacedCustomObject({ group: 'agents.x-k8s.io', version: 'v1beta1', namespace: sandbox.namespace, plural: 'sandboxes', name: sandbox.name });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return { status: 'SandboxNotFound', message: `Sandbox ${sandbox.namespace}/${sandbox.name} does not exist (its claim expired or was deleted?)` };
      throw err;
    }
    const ready = (object?.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
    const message = [ready?.reason, ready?.message].filter((s) => typeof s === 'string' && s !== '').join(': ');
    return { status: ready?.status === 'True' ? 'SandboxReady' : 'SandboxNotReady', message };
  };
}
