/**
 * get_sandbox_status's read of the Sandbox object (agents.x-k8s.io/v1beta1) with the server's own
 * Kubernetes credentials: its Ready condition, as upstream's server reports it, and whether it is
 * suspended (ours): asleep after its idle policy's time unused, or suspended by someone, and
 * whether the next tool call wakes it.
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { SandboxStatus } from './server.js';

/** When the operator suspended it for idleness (RFC 3339); removed when it is resumed. */
const IDLE_SUSPENDED_AT = 'agents.x-k8s.io/idle-suspended-at';
/** When it was last used, as the router and the claim controller saw it (RFC 3339). */
const LAST_ACTIVITY = 'agents.x-k8s.io/last-activity';

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
    return statusOf(object);
  };
}

/** The status of a Sandbox object as read from the API. */
export function statusOf(object: any): SandboxStatus {
  const ready = (object?.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
  const message = [ready?.reason, ready?.message].filter((s) => typeof s === 'string' && s !== '').join(': ');
  const annotations = object?.metadata?.annotations ?? {};
  const policy = object?.spec?.idlePolicy;
  const suspendAfterSeconds = typeof policy?.suspendAfterSeconds === 'number' ? policy.suspendAfterSeconds : undefined;
  const idle = {
    ...(suspendAfterSeconds === undefined ? {} : { suspendAfterSeconds, resumeOnRequest: policy.resumeOnRequest !== false }),
    ...(typeof annotations[LAST_ACTIVITY] === 'string' ? { lastActivity: annotations[LAST_ACTIVITY] } : {}),
    ...(typeof annotations[IDLE_SUSPENDED_AT] === 'string' ? { suspendedAt: annotations[IDLE_SUSPENDED_AT] } : {}),
  };
  const extra = Object.keys(idle).length > 0 ? { idle } : {};
  if (object?.spec?.operatingMode === 'Suspended') {
    // The router wakes it for a request only under an idle policy that says so.
    const wakes = idle.resumeOnRequest === true;
    const since = idle.suspendedAt ? ` since ${idle.suspendedAt}` : '';
    const why = idle.suspendedAt ? `asleep after ${suspendAfterSeconds} s unused${since}` : 'suspended';
    return {
      status: 'SandboxSuspended',
      message: `${why}: ${wakes ? 'the next tool call wakes it (that call waits a few seconds longer); files outside the workspace volume and processes did not survive'
        : `tool calls fail until someone resumes it (${policy ? 'its idle policy does not let a request wake it' : 'it has no idle policy that lets a request wake it'})`}`,
      ...extra,
    };
  }
  const sleeps = suspendAfterSeconds === undefined ? '' : `sleeps after ${suspendAfterSeconds} s unused${idle.lastActivity ? ` (last used ${idle.lastActivity})` : ''}`;
  return { status: ready?.status === 'True' ? 'SandboxReady' : 'SandboxNotReady', message: [message, sleeps].filter((m) => m !== '').join('; '), ...extra };
}
