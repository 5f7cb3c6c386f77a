/**
 * The wire names the SDK speaks: API groups, resources, labels, condition reasons and the router's
 * headers. They are copies of the construct library's contract (src/api in this repository) so the
 * SDK needs nothing from it at run time; test/wire.test.ts fails when a copy drifts from the source.
 */

export const CORE_GROUP = 'agents.x-k8s.io';
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const API_VERSION = 'v1beta1';

export const CLAIMS = { group: EXTENSIONS_GROUP, version: API_VERSION, plural: 'sandboxclaims', kind: 'SandboxClaim' } as const;
export const SANDBOXES = { group: CORE_GROUP, version: API_VERSION, plural: 'sandboxes', kind: 'Sandbox' } as const;
export const WARM_POOLS = { group: EXTENSIONS_GROUP, version: API_VERSION, plural: 'sandboxwarmpools', kind: 'SandboxWarmPool' } as const;

/** Who created a claim; ours says `typescript-client` (upstream's SDKs say `python-client`, `go-client`). */
export const CREATED_BY_LABEL = 'agents.x-k8s.io/created-by';
export const CREATED_BY_VALUE = 'typescript-client';
/** `cold` or `warm` on a claimed Sandbox. */
export const LAUNCH_TYPE_LABEL = 'agents.x-k8s.io/launch-type';
/** Set by SDKs on a claim: when the client asked (RFC 3339). */
export const CLIENT_FIRST_REQUESTED_AT = 'agents.x-k8s.io/client-first-requested-at';
/** Label prefixes only the system may set. */
export const RESERVED_PREFIXES: readonly string[] = ['agents.x-k8s.io/', 'extensions.agents.x-k8s.io/'];

export const CONDITION_READY = 'Ready';
export const CONDITION_SUSPENDED = 'Suspended';

/** Reasons on a claim's `Ready` condition that the SDK treats specially. */
export const ClaimReason = {
  WARM_POOL_NOT_FOUND: 'WarmPoolNotFound',
  TEMPLATE_NOT_FOUND: 'TemplateNotFound',
  SANDBOX_CREATE_PENDING: 'SandboxCreatePending',
} as const;

/** Claim reasons after which waiting longer cannot help. */
export const TERMINAL_CLAIM_REASONS: readonly string[] = [
  'InvalidMetadata',
  'EnvVarsInjectionRejected',
  'VolumeClaimTemplatesError',
  'ClaimExpired',
  'SandboxExpired',
  // Sandbox reasons the claim mirrors: retrying cannot fix these either.
  'InvalidConfiguration',
  'PodFailed',
  'PodSucceeded',
];

/** `spec.operatingMode` values of a Sandbox. */
export const OperatingMode = { RUNNING: 'Running', SUSPENDED: 'Suspended' } as const;

/** The router's request headers (upstream's sandbox-router). */
export const RouterHeader = {
  ID: 'X-Sandbox-ID',
  NAMESPACE: 'X-Sandbox-Namespace',
  PORT: 'X-Sandbox-Port',
  TIMEOUT: 'X-Sandbox-Timeout',
} as const;

/** The runtime's legacy API port, and the router's defaults. */
export const RUNTIME_PORT = 8888;
export const ROUTER_SERVICE = 'sandbox-router-svc';
export const ROUTER_PORT = 8080;
export const SYSTEM_NAMESPACE = 'agent-sandbox-system';
