import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { CONTROLLER, CONTROLLER_LABELS, namespaced } from './manifest';
import { CORE_GROUP, EXTENSIONS_GROUP, KINDS } from '../api/groups';

const ALL_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
// Finalizers `update` lets the controller set blockOwnerDeletion on children it owns
// (OwnerReferencesPermissionEnforcement); no controller adds finalizers.
const FINALIZERS = ['update'];
const STATUS = ['get', 'patch', 'update'];
const sb = KINDS.sandbox.plural;

/**
 * Core controller: upstream's `agent-sandbox-controller` ClusterRole minus what the conversion webhook
 * needed (CRD patching, Secrets) and leases (namespaced Role below), with verbs narrowed to the writes
 * the Sandbox controller makes.
 */
const CORE_RULES = [
  // The pod spec is never updated after creation; metadata and adoption go by patch.
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'watch'] },
  // Adopting an unowned Service is a full update.
  { apiGroups: [''], resources: ['services'], verbs: ALL_VERBS },
  // PVCs are never deleted by the controller; garbage collection removes them with the Sandbox.
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create', 'get', 'list', 'patch', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  // No create: only the extension controllers create Sandboxes. Delete is for shutdownPolicy Delete.
  { apiGroups: [CORE_GROUP], resources: [sb], verbs: ['delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { apiGroups: [CORE_GROUP], resources: [`${sb}/status`], verbs: STATUS },
  { apiGroups: [CORE_GROUP], resources: [`${sb}/finalizers`], verbs: FINALIZERS },
];

/** What the Claim, Template and WarmPool controllers need beyond the core role. */
const EXTENSION_RULES = [
  { apiGroups: [CORE_GROUP], resources: [sb], verbs: ['create'] },
  // Claims are created by users; the controller deletes them for lifecycle Delete policies.
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.claim.plural], verbs: ['delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.template.plural], verbs: ['get', 'list', 'patch', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.warmPool.plural], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [`${KINDS.claim.plural}/status`, `${KINDS.template.plural}/status`, `${KINDS.warmPool.plural}/status`], verbs: STATUS },
  {
    apiGroups: [EXTENSIONS_GROUP],
    resources: [KINDS.claim.plural, KINDS.template.plural, KINDS.warmPool.plural].map((p) => `${p}/finalizers`),
    verbs: FINALIZERS,
  },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ALL_VERBS },
];

// The Lease lock reads, creates and updates the Lease; standbys also watch it, so they take over the
// moment a leader releases it (or its lease expires) instead of polling. The recorder writes events.
const LEADER_ELECTION_RULES = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The ServiceAccount the operator runs as, with `annotations` (workload identity); every binding below names it. */
export function operatorServiceAccount(scope: Construct, namespace: string, annotations?: { [key: string]: string }): ApiObject {
  return new ApiObject(scope, 'ServiceAccount', {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: {
      name: CONTROLLER,
      namespace,
      labels: { ...CONTROLLER_LABELS },
      ...(annotations && Object.keys(annotations).length ? { annotations: { ...annotations } } : {}),
    },
  });
}

/** The core ClusterRole, bound to the operator's ServiceAccount in `namespace`. */
export function coreClusterRole(scope: Construct, namespace: string): void {
  clusterRole(scope, CONTROLLER, CORE_RULES, namespace);
}

/** The extension layer's ClusterRole, bound to the operator's ServiceAccount in `namespace`. */
export function extensionsClusterRole(scope: Construct, namespace: string): void {
  clusterRole(scope, `${CONTROLLER}-extensions`, EXTENSION_RULES, namespace);
}

/** A ClusterRole and its binding to the operator's ServiceAccount in `namespace`. */
function clusterRole(scope: Construct, name: string, rules: object[], namespace: string): void {
  const api = 'rbac.authorization.k8s.io/v1';
  new ApiObject(scope, `${name}-cluster-role`, { apiVersion: api, kind: 'ClusterRole', metadata: { name, labels: { ...CONTROLLER_LABELS } }, rules });
  new ApiObject(scope, `${name}-cluster-role-binding`, {
    apiVersion: api, kind: 'ClusterRoleBinding', metadata: { name, labels: { ...CONTROLLER_LABELS } }, ...bindingBody('ClusterRole', name, namespace),
  });
}

/**
 * The leader-election Role and its binding, in `electionNamespace` (where the Lease lives), bound to
 * the operator's ServiceAccount in `namespace`. Both are named `agent-sandbox-controller` like the
 * namespaced Role and RoleBinding of upstream's release manifests, so installing over upstream
 * updates them in place (the binding's roleRef, which cannot change, is the same).
 */
export function leaderElectionRole(scope: Construct, electionNamespace: string, namespace: string): void {
  const name = CONTROLLER;
  namespaced(scope, 'LeaderElectionRole', 'rbac.authorization.k8s.io/v1', 'Role', name, electionNamespace, { rules: LEADER_ELECTION_RULES });
  namespaced(scope, 'LeaderElectionRoleBinding', 'rbac.authorization.k8s.io/v1', 'RoleBinding', name, electionNamespace,
    bindingBody('Role', name, namespace));
}

function bindingBody(roleKind: string, roleName: string, namespace: string): object {
  return {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
    subjects: [{ kind: 'ServiceAccount', name: CONTROLLER, namespace }],
  };
}
