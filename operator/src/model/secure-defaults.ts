/**
 * The Pod defaults every Sandbox built from a template gets: when the warm pool or a claim's cold
 * path builds a Sandbox, and to the template before comparing it with a pool member, so a defaulted
 * member is not mistaken for a stale one. Two layers:
 * - upstream's (no token, public DNS under the default NetworkPolicy), applied as upstream does;
 * - ours, the hardening this library's constructs write (non-root, seccomp RuntimeDefault, no
 *   privilege escalation, ALL capabilities dropped), so a template written by hand or for upstream
 *   gets the same Pods. Each fills only a field the template left unset, and a template can list
 *   the ones it does not want in the `agents.x-k8s.io/secure-defaults-opt-out` annotation.
 * Bare Sandboxes get only "no token unless asked" (see defaultBareSandboxPod): their author wrote
 * the whole Pod, and the install's admission policy refuses host access in them.
 */
import { NetworkPolicyManagement } from '#api/enums';
import { PUBLIC_DNS_NAMESERVERS } from '#api/network-policy-defaults';
import { HardeningDefault, SECURE_DEFAULTS_OPT_OUT_ANNOTATION, parseOptOuts } from '#api/secure-defaults';
import type { Container, PodSpec, SandboxTemplate } from './generated';

/** Whether the operator writes the secure-default NetworkPolicy for this template (Managed, no custom rules). */
export function usesDefaultNetworkPolicy(template: SandboxTemplate): boolean {
  const management = template.spec.networkPolicyManagement;
  // Upstream treats an empty value as Managed; the CRD default makes it Managed anyway.
  const managed = management === undefined || (management as string) === '' || management === NetworkPolicyManagement.MANAGED;
  return managed && template.spec.networkPolicy === undefined;
}

/**
 * `podSpec` with upstream's template defaults; the input is not modified.
 *
 * - No service-account token unless the template asks for one: an agent running untrusted code
 *   should not hold Kubernetes credentials by accident.
 * - Public resolvers when the default NetworkPolicy applies and the template chose no DNS policy:
 *   that policy blocks the private ranges where cluster DNS lives, so without this the Pod could
 *   not resolve anything. Searches and options the template set are kept; only nameservers are
 *   filled in when it set none (dnsPolicy None requires at least one).
 */
export function applyUpstreamDefaults(podSpec: PodSpec, template: SandboxTemplate): PodSpec {
  const out: PodSpec = structuredClone(podSpec);
  if (out.automountServiceAccountToken === undefined) out.automountServiceAccountToken = false;
  if (usesDefaultNetworkPolicy(template) && (out.dnsPolicy === undefined || out.dnsPolicy === '')) {
    out.dnsPolicy = 'None';
    const nameservers = out.dnsConfig?.nameservers?.length ? out.dnsConfig.nameservers : [...PUBLIC_DNS_NAMESERVERS];
    out.dnsConfig = { ...out.dnsConfig, nameservers };
  }
  return out;
}

/** The hardening defaults `template` opts out of (its annotation); unknown names are ignored. */
export function hardeningOptOuts(template: SandboxTemplate): Set<string> {
  return new Set(parseOptOuts(template.metadata.annotations?.[SECURE_DEFAULTS_OPT_OUT_ANNOTATION]));
}

const isSysAdmin = (capability: string) => /^(CAP_)?SYS_ADMIN$/i.test(capability);

/** Whether the Pod explicitly asks to run as root somewhere: then runAsNonRoot would only stop it starting. */
function asksForRoot(spec: PodSpec): boolean {
  if (spec.securityContext?.runAsUser === 0) return true;
  return [...spec.containers, ...(spec.initContainers ?? [])].some((c) =>
    c.securityContext?.runAsNonRoot === false || c.securityContext?.runAsUser === 0);
}

/** Container defaults, each only where unset and where the API server would accept it. */
function hardenContainer(c: Container, optOuts: Set<string>): Container {
  const sc = c.securityContext ?? {};
  if (sc.privileged === true) return c; // privileged ignores both, and the API refuses escalation false with it
  const added: typeof sc = {};
  if (!optOuts.has(HardeningDefault.ALLOW_PRIVILEGE_ESCALATION) && sc.allowPrivilegeEscalation === undefined
    && !(sc.capabilities?.add ?? []).some(isSysAdmin)) {
    added.allowPrivilegeEscalation = false;
  }
  if (!optOuts.has(HardeningDefault.DROP_CAPABILITIES) && sc.capabilities?.drop === undefined) {
    added.capabilities = { ...sc.capabilities, drop: ['ALL'] };
  }
  return Object.keys(added).length === 0 ? c : { ...c, securityContext: { ...sc, ...added } };
}

/**
 * `podSpec` with the hardening this library's constructs write, where the template left each field
 * unset and did not opt out (see the module comment); the input is not modified. Windows Pods get
 * none of it (the fields are Linux-only).
 */
export function applyHardeningDefaults(podSpec: PodSpec, template: SandboxTemplate): PodSpec {
  if (podSpec.os?.name === 'windows') return structuredClone(podSpec);
  const optOuts = hardeningOptOuts(template);
  const out: PodSpec = structuredClone(podSpec);
  const pod = { ...out.securityContext };
  if (!optOuts.has(HardeningDefault.RUN_AS_NON_ROOT) && pod.runAsNonRoot === undefined && !asksForRoot(out)) pod.runAsNonRoot = true;
  if (!optOuts.has(HardeningDefault.SECCOMP_PROFILE) && pod.seccompProfile === undefined) pod.seccompProfile = { type: 'RuntimeDefault' };
  if (Object.keys(pod).length > 0) out.securityContext = pod;
  out.containers = out.containers.map((c) => hardenContainer(c, optOuts));
  if (out.initContainers) out.initContainers = out.initContainers.map((c) => hardenContainer(c, optOuts));
  return out;
}

/** Every default a template-built Sandbox gets: upstream's, then the hardening. */
export function applySecureDefaults(podSpec: PodSpec, template: SandboxTemplate): PodSpec {
  return applyHardeningDefaults(applyUpstreamDefaults(podSpec, template), template);
}

/**
 * A bare Sandbox's Pod spec as the Sandbox controller creates it: no service-account token unless
 * the Sandbox sets `automountServiceAccountToken` (upstream mounts the namespace's default token).
 * Template-built Sandboxes always carry the field, so this changes nothing for them.
 */
export function defaultBareSandboxPod(podSpec: PodSpec): PodSpec {
  return podSpec.automountServiceAccountToken === undefined ? { ...podSpec, automountServiceAccountToken: false } : podSpec;
}
