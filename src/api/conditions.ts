/** Condition types on Sandbox and SandboxClaim status. */
export const ConditionType = {
  READY: 'Ready',
  SUSPENDED: 'Suspended',
  POD_SCHEDULED: 'PodScheduled',
  FINISHED: 'Finished',
} as const;

/** Reasons of the Sandbox `Ready` condition (upstream strings, plus `InvalidConfiguration`). */
export const SandboxReadyReason = {
  DEPENDENCIES_READY: 'DependenciesReady',
  DEPENDENCIES_NOT_READY: 'DependenciesNotReady',
  MULTIPLE_PODS: 'MultiplePods',
  SANDBOX_SUSPENDED: 'SandboxSuspended',
  POD_SUCCEEDED: 'PodSucceeded',
  POD_FAILED: 'PodFailed',
  SANDBOX_EXPIRED: 'SandboxExpired',
  RECONCILER_ERROR: 'ReconcilerError',
  /**
   * Ours, not upstream's: a spec that retrying cannot fix (for example a name too long for the
   * Service). Set once, without a retry loop.
   */
  INVALID_CONFIGURATION: 'InvalidConfiguration',
} as const;

/** Reasons of the Sandbox `Suspended` condition. */
export const SandboxSuspendedReason = {
  POD_TERMINATED: 'PodTerminated',
  POD_TERMINATING: 'PodTerminating',
  POD_NOT_OWNED: 'PodNotOwned',
  NOT_SUSPENDED: 'NotSuspended',
  POD_STATE_UNKNOWN: 'PodStateUnknown',
} as const;

/** Reasons the claim controller adds on the claim's `Ready` condition. */
export const ClaimReadyReason = {
  WARM_POOL_NOT_FOUND: 'WarmPoolNotFound',
  TEMPLATE_NOT_FOUND: 'TemplateNotFound',
  INVALID_METADATA: 'InvalidMetadata',
  ENV_VARS_INJECTION_REJECTED: 'EnvVarsInjectionRejected',
  VOLUME_CLAIM_TEMPLATES_ERROR: 'VolumeClaimTemplatesError',
  ADOPTION_CONFLICT: 'AdoptionConflict',
  SANDBOX_CREATE_PENDING: 'SandboxCreatePending',
  SANDBOX_MISSING: 'SandboxMissing',
  SANDBOX_NOT_READY: 'SandboxNotReady',
  SANDBOX_EXPIRED: 'SandboxExpired',
  CLAIM_EXPIRED: 'ClaimExpired',
  RECONCILER_ERROR: 'ReconcilerError',
} as const;

/** Claim reasons after which waiting longer cannot help (the Python SDK's terminal set). */
export const TERMINAL_CLAIM_REASONS: readonly string[] = [
  ClaimReadyReason.INVALID_METADATA,
  ClaimReadyReason.ENV_VARS_INJECTION_REJECTED,
  ClaimReadyReason.VOLUME_CLAIM_TEMPLATES_ERROR,
  ClaimReadyReason.CLAIM_EXPIRED,
  ClaimReadyReason.SANDBOX_EXPIRED,
];
