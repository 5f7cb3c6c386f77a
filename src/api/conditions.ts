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
  /** Ours: the cold path waits until the template's NetworkPolicy exists, so no Sandbox runs unisolated. */
  NETWORK_POLICY_NOT_READY: 'NetworkPolicyNotReady',
  /** Ours: the template gives its Pods the router's labels; nothing is built from it. */
  ROUTER_LABELS_REFUSED: 'RouterLabelsRefused',
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

/**
 * Condition types on SandboxTemplate status. Ours: upstream templates have no status. They say
 * whether Sandboxes can be built from the template, since pools and claims refuse to build any
 * until they are True.
 */
export const TemplateConditionType = {
  /** Whether the template's NetworkPolicy exists (or the template is Unmanaged). */
  NETWORK_POLICY_READY: 'NetworkPolicyReady',
  /** Whether the template's Pod labels are free of the router's labels. */
  POD_LABELS_ALLOWED: 'PodLabelsAllowed',
} as const;

/** Reasons of the SandboxTemplate conditions. */
export const TemplateConditionReason = {
  /** NetworkPolicyReady=True: the operator's policy for the template exists. */
  NETWORK_POLICY_READY: 'NetworkPolicyReady',
  /** NetworkPolicyReady=True: the template is Unmanaged, so its policy is the user's business. */
  UNMANAGED: 'Unmanaged',
  /** NetworkPolicyReady=False: the policy was asked for and the cache does not show it yet. */
  NETWORK_POLICY_PENDING: 'NetworkPolicyPending',
  /** NetworkPolicyReady=False: a policy of that name exists and is someone else's. */
  NETWORK_POLICY_CONFLICT: 'NetworkPolicyConflict',
  /** PodLabelsAllowed=True. */
  NO_ROUTER_LABELS: 'NoRouterLabels',
  /** PodLabelsAllowed=False: the Pods would carry the router's labels. */
  ROUTER_LABELS_REFUSED: 'RouterLabelsRefused',
} as const;

/** Condition types on SandboxWarmPool status. Ours: upstream pools have no conditions. */
export const WarmPoolConditionType = {
  /** Whether members can be built from the pool's template; False stops all creates. */
  TEMPLATE_READY: 'TemplateReady',
  /** Only on pools with `scaleToZeroAfterSeconds`: True while the pool keeps no warm members for want of claims. */
  SCALED_TO_ZERO: 'ScaledToZero',
} as const;

/** Reasons of the SandboxWarmPool `ScaledToZero` condition. */
export const WarmPoolScaledToZeroReason = {
  /** True: no claim for `scaleToZeroAfterSeconds`; the pool holds no warm members (`spec.replicas` unchanged). */
  NO_RECENT_CLAIMS: 'NoRecentClaims',
  /** False: a claim (or the pool's creation) is recent enough; the pool keeps `spec.replicas` warm. */
  RECENT_CLAIMS: 'RecentClaims',
} as const;

/** Reasons of the SandboxWarmPool `TemplateReady` condition (also used on claims' Ready for the cold path). */
export const WarmPoolTemplateReason = {
  TEMPLATE_READY: 'TemplateReady',
  TEMPLATE_NOT_FOUND: 'TemplateNotFound',
  NETWORK_POLICY_NOT_READY: 'NetworkPolicyNotReady',
  ROUTER_LABELS_REFUSED: 'RouterLabelsRefused',
} as const;
