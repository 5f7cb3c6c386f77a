/** A kind that a reference prop expects: its API group (`''` for core), kind and scope. */
export interface ReferencedKind {
  readonly group: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** The kinds our reference props point at. */
export const REFERENCED_KINDS = {
  serviceAccount: { group: '', kind: 'ServiceAccount', namespaced: true },
  secret: { group: '', kind: 'Secret', namespaced: true },
  configMap: { group: '', kind: 'ConfigMap', namespaced: true },
  persistentVolumeClaim: { group: '', kind: 'PersistentVolumeClaim', namespaced: true },
  namespace: { group: '', kind: 'Namespace', namespaced: false },
  runtimeClass: { group: 'node.k8s.io', kind: 'RuntimeClass', namespaced: false },
  priorityClass: { group: 'scheduling.k8s.io', kind: 'PriorityClass', namespaced: false },
} as const;

/**
 * Kinds that are cluster-scoped: they never carry metadata.namespace, even in a Chart that sets
 * one (the API server rejects or ignores it, and GitOps tools report drift).
 */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'apiextensions.k8s.io/CustomResourceDefinition',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'node.k8s.io/RuntimeClass',
  'scheduling.k8s.io/PriorityClass',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
  'apiregistration.k8s.io/APIService',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'storage.k8s.io/VolumeAttributesClass',
  'networking.k8s.io/IngressClass',
  'networking.k8s.io/IPAddress',
  'networking.k8s.io/ServiceCIDR',
  'certificates.k8s.io/CertificateSigningRequest',
  'certificates.k8s.io/ClusterTrustBundle',
  'resource.k8s.io/DeviceClass',
  'resource.k8s.io/ResourceSlice',
  'internal.apiserver.k8s.io/StorageVersion',
  'storagemigration.k8s.io/StorageVersionMigration',
  '/Namespace',
  '/PersistentVolume',
  '/Node',
  '/ComponentStatus',
]);

/** The API group of an apiVersion (`''` for the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
