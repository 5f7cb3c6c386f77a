/**
 * Label keys with meaning to the agent-sandbox controllers, router and SDKs.
 * Values match upstream `agents.x-k8s.io/v1beta1` exactly; changing one breaks
 * wire compatibility.
 */
export class SandboxLabels {
  /** On Pods, Services and PVCs: `NameHash(sandbox name)`. Service selector and router key. */
  public static readonly SANDBOX_NAME_HASH = 'agents.x-k8s.io/sandbox-name-hash';
  /** On pool Sandboxes (and their Pods while unclaimed): `NameHash(pool name)`. */
  public static readonly WARM_POOL_SANDBOX = 'agents.x-k8s.io/warm-pool-sandbox';
  /** On templates, Sandboxes and Pods: `NameHash(template name)`. NetworkPolicy selector. */
  public static readonly SANDBOX_TEMPLATE_REF_HASH = 'agents.x-k8s.io/sandbox-template-ref-hash';
  /** On pool Sandboxes: hash of the template blueprint, for staleness. */
  public static readonly SANDBOX_TEMPLATE_HASH = 'agents.x-k8s.io/sandbox-template-hash';
  /** Deprecated upstream: hash of the template's podTemplate. */
  public static readonly SANDBOX_POD_TEMPLATE_HASH = 'agents.x-k8s.io/sandbox-pod-template-hash';
  /** `cold` or `warm`: how a claimed Sandbox was obtained. */
  public static readonly LAUNCH_TYPE = 'agents.x-k8s.io/launch-type';
  /** Who created a claim (`go-client`, `python-client`, `controller`, ...). */
  public static readonly CREATED_BY = 'agents.x-k8s.io/created-by';
  /** `true` on pre-provisioned Pods/Services/PVCs that a Sandbox may adopt. */
  public static readonly ADOPTABLE = 'agents.x-k8s.io/adoptable';
  /** The UID of the claim that owns a Sandbox. */
  public static readonly CLAIM_UID = 'agents.x-k8s.io/claim-uid';
  /** Legacy claim label naming the adopted Sandbox (now an annotation). */
  public static readonly DEPRECATED_SANDBOX_NAME = 'agents.x-k8s.io/sandbox-name';

  private constructor() {}
}

/** Annotation keys with meaning to the controllers and SDKs. */
export class SandboxAnnotations {
  /** On a Sandbox: the name of its backing Pod. */
  public static readonly POD_NAME = 'agents.x-k8s.io/pod-name';
  /** On a Sandbox: the template it was built from. */
  public static readonly SANDBOX_TEMPLATE_REF = 'agents.x-k8s.io/sandbox-template-ref';
  /** On a Pod: sorted keys of labels copied from the podTemplate. */
  public static readonly PROPAGATED_LABELS = 'agents.x-k8s.io/propagated-labels';
  /** On a Pod: sorted keys of annotations copied from the podTemplate. */
  public static readonly PROPAGATED_ANNOTATIONS = 'agents.x-k8s.io/propagated-annotations';
  /** On a claim: the adopted warm Sandbox. */
  public static readonly SANDBOX_NAME = 'agents.x-k8s.io/sandbox-name';
  /** On a claim: when the controller first saw it (RFC 3339 with nanoseconds). */
  public static readonly CONTROLLER_FIRST_OBSERVED_AT = 'agents.x-k8s.io/controller-first-observed-at';
  /** On a claim, set by SDKs: when the client asked. */
  public static readonly CLIENT_FIRST_REQUESTED_AT = 'agents.x-k8s.io/client-first-requested-at';
  /** On a claim: when it first became Ready, or `unknown`. */
  public static readonly CLAIM_FIRST_READY_AT = 'agents.x-k8s.io/claim-first-ready-at';
  /** On a claim, set by an optional webhook. */
  public static readonly WEBHOOK_FIRST_OBSERVED_AT = 'agents.x-k8s.io/webhook-first-observed-at';
  /** W3C trace context (JSON map) carried from claim to Sandbox; never copied to the Pod. */
  public static readonly TRACE_CONTEXT = 'opentelemetry.io/trace-context';
  /**
   * On a Sandbox with an idle policy (ours): when it was last used (RFC 3339, milliseconds), as the
   * router saw requests and connections and the claim controller saw the claim. The idle clock runs
   * from the later of this and the Sandbox's last transition to Ready.
   */
  public static readonly LAST_ACTIVITY = 'agents.x-k8s.io/last-activity';
  /** On a Sandbox the operator suspended for idleness (ours): when (RFC 3339); removed when it is resumed. */
  public static readonly IDLE_SUSPENDED_AT = 'agents.x-k8s.io/idle-suspended-at';
  /** Set to `true` on warm Pods so the cluster autoscaler may evict them. */
  public static readonly SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict';

  private constructor() {}
}

/**
 * Label and annotation prefixes only the system may set on a sandbox Pod. Keys under them in a
 * user's podTemplate metadata are dropped, so no tenant can claim another sandbox's hash label
 * (and with it the other sandbox's Service traffic or NetworkPolicy).
 */
export const RESERVED_PREFIXES: readonly string[] = ['agents.x-k8s.io/', 'extensions.agents.x-k8s.io/'];

/** Annotation keys that are reserved besides the prefixes. */
export const RESERVED_ANNOTATION_KEYS: readonly string[] = [SandboxAnnotations.TRACE_CONTEXT];

/** Whether a label key is reserved for the system. */
export function isReservedLabelKey(key: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => key.startsWith(prefix));
}

/** Whether an annotation key is reserved for the system. */
export function isReservedAnnotationKey(key: string): boolean {
  return isReservedLabelKey(key) || RESERVED_ANNOTATION_KEYS.includes(key);
}

/** A copy of `map` without the keys for which `reserved` holds. */
export function withoutReserved(
  map: { readonly [key: string]: string } | undefined,
  reserved: (key: string) => boolean,
): { [key: string]: string } {
  const out: { [key: string]: string } = {};
  for (const [key, value] of Object.entries(map ?? {})) {
    if (!reserved(key)) out[key] = value;
  }
  return out;
}

/** Values the Sandbox controller allows for `created-by` on a Pod; anything else becomes `unknown`. */
export const CREATED_BY_POD_VALUES: readonly string[] = ['go-client', 'python-client', 'typescript-client', 'controller'];

/** Label and selector of the sandbox router, which the default NetworkPolicy admits. */
export const ROUTER_APP_LABEL = { key: 'app', value: 'sandbox-router' } as const;

/** Namespace upstream installs into, and which the default policy trusts for the router. */
export const DEFAULT_SYSTEM_NAMESPACE = 'agent-sandbox-system';

/** Suffix of the per-template NetworkPolicy name. */
export const NETWORK_POLICY_NAME_SUFFIX = '-network-policy';
