/**
 * Names shared by the operator's secure defaults for template-built Pods and the install's admission
 * policy, which refuses an opt-out list it does not understand.
 */

/**
 * Annotation on a SandboxTemplate: a comma-separated list of the hardening defaults the operator must
 * not add to the Pods it builds from the template. A value the template writes explicitly is always
 * kept, so the list is only needed to leave a field unset.
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
