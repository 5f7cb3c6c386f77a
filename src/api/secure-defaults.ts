/**
 * Names shared by the operator's secure defaults for template-built Pods and the install's admission
 * policy, which refuses an opt-out list it does not understand; and the Pod Security Standards lists
 * that the admission policy and the Sandbox controller's adoption check both apply.
 */

/**
 * Annotation on a SandboxTemplate: a comma-separated list of the hardening defaults the operator must
 * not add to the Pods it builds from the template. A value the template writes explicitly is always
 * kept, so the list is only needed to leave a field unset. The install's admission policy reads it on
 * SandboxTemplates and Sandboxes alike: each entry also admits the explicit settings of the
 * restricted Pod Security Standard control that default stands for (`runAsNonRoot`: `runAsNonRoot:
 * false` and `runAsUser: 0`; `dropCapabilities`: a `capabilities.drop` without `ALL` and adding
 * back capabilities other than `NET_BIND_SERVICE`).
 */
export const SECURE_DEFAULTS_OPT_OUT_ANNOTATION = 'agents.x-k8s.io/secure-defaults-opt-out';

/** The hardening defaults that can be opted out of, as the annotation names them. */
export enum HardeningDefault {
  /** `securityContext.runAsNonRoot: true` on the Pod. */
  RUN_AS_NON_ROOT = 'runAsNonRoot',
  /** `securityContext.seccompProfile: { type: RuntimeDefault }` on the Pod. */
  SECCOMP_PROFILE = 'seccompProfile',
  /** `securityContext.allowPrivilegeEscalation: false` on every container and init container. */
  ALLOW_PRIVILEGE_ESCALATION = 'allowPrivilegeEscalation',
  /** `securityContext.capabilities.drop: [ALL]` on every container and init container. */
  DROP_CAPABILITIES = 'dropCapabilities',
}

export const HARDENING_DEFAULTS: readonly string[] = Object.values(HardeningDefault);

/** The entries of an opt-out annotation value: split on commas, trimmed, empty ones dropped. */
export function parseOptOuts(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * Capabilities the Pod Security Standards' baseline profile lets a container add: the container
 * runtime's default set.
 */
export const BASELINE_CAPABILITIES: readonly string[] = [
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
];

/** The one capability the restricted profile lets a container add. */
export const RESTRICTED_CAPABILITY = 'NET_BIND_SERVICE';

/** The sysctls the baseline profile allows (its list as of Kubernetes 1.32; a kubelet that does not know one refuses the Pod). */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
];

/** SELinux types the baseline profile allows in `seLinuxOptions.type` (besides none); `user` and `role` must stay unset. */
export const SELINUX_TYPES: readonly string[] = ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'];

/** `seccompProfile.type` and `appArmorProfile.type` values the baseline profile allows when set. */
export const CONFINED_PROFILE_TYPES: readonly string[] = ['RuntimeDefault', 'Localhost'];

/** Prefix of the deprecated per-container AppArmor annotation on a Pod; its value must be `runtime/default` or `localhost/<profile>`. */
export const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * Volume sources the restricted profile forbids besides `hostPath` (which baseline forbids already):
 * everything but configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim,
 * projected and secret. Listed by what is forbidden so a volume with no source (an emptyDir) passes.
 */
export const RESTRICTED_VOLUME_TYPES: readonly string[] = [
  'awsElasticBlockStore', 'azureDisk', 'azureFile', 'cephfs', 'cinder', 'fc', 'flexVolume', 'flocker', 'gcePersistentDisk', 'gitRepo',
  'glusterfs', 'iscsi', 'nfs', 'photonPersistentDisk', 'portworxVolume', 'quobyte', 'rbd', 'scaleIO', 'storageos', 'vsphereVolume',
];
