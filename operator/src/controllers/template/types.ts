/**
 * Wire shapes of the objects the extension controllers (template, warm pool, claim) read and
 * build: only the fields they use, everything else passes through untouched. The contract (kinds,
 * label keys, enums, reasons) lives in src/api; these are the JSON shapes around it.
 *
 * They sit in the template folder because the template is the root of the other two: a pool and a
 * claim both build Sandboxes from a template's blueprint.
 */
import { API_VERSION_NAME, KINDS } from '../../../../src/api/groups';
import type { NetworkPolicyEgressRuleJson, NetworkPolicyIngressRuleJson, NetworkPolicySpecJson } from '../../../../src/api/network-policy-defaults';
import type { KubeObject, ObjectMeta, ResourceType } from '../../runtime/types';
import type { Condition } from '../sandbox/types';

/** metav1.Condition: one definition, the Sandbox controller's. */
export type { Condition };

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

export interface Container {
  name: string;
  env?: EnvVar[];
  envFrom?: unknown[];
  [key: string]: unknown;
}

export interface PodDnsConfig {
  nameservers?: string[];
  searches?: string[];
  options?: unknown[];
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  automountServiceAccountToken?: boolean;
  dnsPolicy?: string;
  dnsConfig?: PodDnsConfig;
  [key: string]: unknown;
}

export interface PodMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface PodTemplate {
  metadata?: PodMetadata;
  spec: PodSpec;
}

export interface VolumeClaimTemplate {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

/** The fields a SandboxTemplate and a Sandbox share (upstream's inlined SandboxBlueprint). */
export interface SandboxBlueprint {
  podTemplate: PodTemplate;
  volumeClaimTemplates?: VolumeClaimTemplate[];
  service?: boolean;
}

export interface SandboxTemplateSpec extends SandboxBlueprint {
  networkPolicy?: { ingress?: NetworkPolicyIngressRuleJson[]; egress?: NetworkPolicyEgressRuleJson[] };
  networkPolicyManagement?: string;
  envVarsInjectionPolicy?: string;
  volumeClaimTemplatesPolicy?: string;
}

export interface SandboxTemplate extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxTemplateSpec;
}

export interface SandboxSpec extends SandboxBlueprint {
  shutdownTime?: string;
  shutdownPolicy?: string;
  operatingMode?: string;
}

export interface SandboxStatus {
  conditions?: Condition[];
  podIPs?: string[];
  nodeName?: string;
  [key: string]: unknown;
}

export interface Sandbox extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxSpec;
  status?: SandboxStatus;
}

export interface NetworkPolicy extends KubeObject {
  metadata: ObjectMeta;
  spec: NetworkPolicySpecJson;
}

/**
 * A JSON merge patch (RFC 7386) of an object: `null` deletes a key, objects merge, everything
 * else (arrays included) replaces.
 */
export type MergePatch = { [key: string]: MergePatch | string | number | boolean | null | unknown[] };

/** Values of the `agents.x-k8s.io/launch-type` label: how a claimed Sandbox was obtained. */
export const LaunchType = { WARM: 'warm', COLD: 'cold' } as const;

/** The `agents.x-k8s.io/created-by` value on Sandboxes the warm pool creates. */
export const CREATED_BY_CONTROLLER = 'controller';

/** The resource types these controllers address. */
export const EXTENSION_RESOURCES = {
  sandboxes: { group: KINDS.sandbox.group, version: API_VERSION_NAME, resource: KINDS.sandbox.plural, namespaced: true },
  templates: { group: KINDS.template.group, version: API_VERSION_NAME, resource: KINDS.template.plural, namespaced: true },
  warmPools: { group: KINDS.warmPool.group, version: API_VERSION_NAME, resource: KINDS.warmPool.plural, namespaced: true },
  claims: { group: KINDS.claim.group, version: API_VERSION_NAME, resource: KINDS.claim.plural, namespaced: true },
  networkPolicies: { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', namespaced: true },
} as const satisfies Record<string, ResourceType>;
