/**
 * Wire shapes of the objects the Sandbox controller reads and writes: only the fields it uses.
 * The contract itself (kinds, label keys, reasons, enums) lives in src/api; these are the JSON
 * shapes of the Kubernetes objects around it, which src/api describes only as schemas.
 */
import { API_VERSION_NAME, KINDS } from '../../../../src/api/groups';
import type { KubeObject, ObjectMeta, ResourceType } from '../../runtime/types';

/** metav1.Condition. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface PodMetadataTemplate {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface VolumeClaimTemplate {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

export interface SandboxSpec {
  podTemplate: { metadata?: PodMetadataTemplate; spec: PodSpec };
  volumeClaimTemplates?: VolumeClaimTemplate[];
  service?: boolean;
  shutdownTime?: string;
  shutdownPolicy?: string;
  operatingMode?: string;
}

export interface SandboxStatus {
  conditions?: Condition[];
  service?: string;
  serviceFQDN?: string;
  selector?: string;
  podIPs?: string[];
  nodeName?: string;
}

export interface Sandbox extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxSpec;
  status?: SandboxStatus;
}

export interface ContainerPort {
  name?: string;
  containerPort?: number;
  protocol?: string;
}

export interface Container {
  name: string;
  ports?: ContainerPort[];
  restartPolicy?: string;
  [key: string]: unknown;
}

export interface Volume {
  name: string;
  [key: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  nodeName?: string;
  [key: string]: unknown;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: {
    phase?: string;
    conditions?: PodCondition[];
    podIPs?: { ip: string }[];
    podIP?: string;
  };
}

export interface ServicePort {
  name: string;
  port: number;
  protocol: string;
  targetPort: number | string;
}

export interface Service extends KubeObject {
  spec?: {
    clusterIP?: string;
    selector?: Record<string, string>;
    ports?: ServicePort[];
    [key: string]: unknown;
  };
}

export type PersistentVolumeClaim = KubeObject;

/** The resource types the controller addresses. */
export const RESOURCES = {
  sandboxes: { group: KINDS.sandbox.group, version: API_VERSION_NAME, resource: KINDS.sandbox.plural, namespaced: true },
  pods: { group: '', version: 'v1', resource: 'pods', namespaced: true },
  services: { group: '', version: 'v1', resource: 'services', namespaced: true },
  pvcs: { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true },
} as const satisfies Record<string, ResourceType>;

/** The child kinds a Sandbox owns. */
export type ChildKind = 'pod' | 'service' | 'pvc';

/** Recorded by the API server as the writer of everything this controller creates or patches. */
export const FIELD_MANAGER = 'sandbox-controller';
