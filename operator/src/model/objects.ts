/**
 * The core objects around the four kinds: the Pod, Service and PVC a Sandbox owns and the
 * NetworkPolicy a template owns. Their specs are the generated core/v1 and networking/v1 types the
 * CRDs embed; the rest is only what the controllers and the data plane read.
 */
import type { NetworkPolicySpecJson } from '#api/network-policy-defaults';
import type { Condition, PersistentVolumeClaimSpec, PodSpec } from './generated';
import type { KubeObject, ObjectMeta } from '../runtime/types';

/** core/v1 PodCondition (its status is not restricted to a union on the wire). */
export interface PodCondition extends Omit<Condition, 'status' | 'lastTransitionTime' | 'reason' | 'message'> {
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface PodStatus {
  phase?: string;
  conditions?: PodCondition[];
  podIP?: string;
  podIPs?: Array<{ ip: string }>;
}

export interface Pod extends KubeObject {
  metadata: ObjectMeta;
  spec?: PodSpec;
  status?: PodStatus;
}

export interface ServicePort {
  name: string;
  port: number;
  protocol: string;
  targetPort: number | string;
}

export interface ServiceSpec {
  clusterIP?: string;
  selector?: Record<string, string>;
  ports?: ServicePort[];
  publishNotReadyAddresses?: boolean;
}

export interface Service extends KubeObject {
  metadata: ObjectMeta;
  spec?: ServiceSpec;
}

export interface PersistentVolumeClaim extends KubeObject {
  metadata: ObjectMeta;
  spec?: PersistentVolumeClaimSpec;
}

export interface NetworkPolicy extends KubeObject {
  metadata: ObjectMeta;
  spec: NetworkPolicySpecJson;
}

/** Whether a Pod reports Ready=True. */
export function isPodReady(pod: Pod): boolean {
  return pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/** The Pod's IPs, from status.podIPs, else status.podIP. */
export function podIPsOf(pod: Pod): string[] {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip).filter((ip) => ip);
  if (ips.length > 0) return ips;
  return pod.status?.podIP ? [pod.status.podIP] : [];
}

/** Values of the `agents.x-k8s.io/launch-type` label: how a claimed Sandbox was obtained. */
export const LaunchType = { WARM: 'warm', COLD: 'cold' } as const;

/** The `agents.x-k8s.io/created-by` value on Sandboxes the warm pool creates. */
export const CREATED_BY_CONTROLLER = 'controller';
