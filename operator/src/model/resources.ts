/** Every resource type the operator addresses. */
import { API_VERSION_NAME, KINDS } from '#api/groups';
import type { ResourceType } from '../runtime/types';

export const RESOURCES = {
  sandboxes: { group: KINDS.sandbox.group, version: API_VERSION_NAME, resource: KINDS.sandbox.plural, namespaced: true },
  templates: { group: KINDS.template.group, version: API_VERSION_NAME, resource: KINDS.template.plural, namespaced: true },
  warmPools: { group: KINDS.warmPool.group, version: API_VERSION_NAME, resource: KINDS.warmPool.plural, namespaced: true },
  claims: { group: KINDS.claim.group, version: API_VERSION_NAME, resource: KINDS.claim.plural, namespaced: true },
  pods: { group: '', version: 'v1', resource: 'pods', namespaced: true },
  services: { group: '', version: 'v1', resource: 'services', namespaced: true },
  pvcs: { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true },
  networkPolicies: { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', namespaced: true },
} as const satisfies Record<string, ResourceType>;
