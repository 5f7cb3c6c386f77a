/**
 * The Pod defaults every Sandbox built from a template gets, as upstream's template handling
 * applies them: when the warm pool or a claim's cold path builds a Sandbox, and to the template
 * before comparing it with a pool member, so a defaulted member is not mistaken for a stale one.
 * Bare Sandboxes never get them: their author wrote the whole Pod.
 */
import type { PodSpec, SandboxTemplate } from './generated';
import { NetworkPolicyManagement } from '../../../src/api/enums';
import { PUBLIC_DNS_NAMESERVERS } from '../../../src/api/network-policy-defaults';

/** Whether the operator writes the secure-default NetworkPolicy for this template (Managed, no custom rules). */
export function usesDefaultNetworkPolicy(template: SandboxTemplate): boolean {
  const management = template.spec.networkPolicyManagement;
  // Upstream treats an empty value as Managed; the CRD default makes it Managed anyway.
  const managed = management === undefined || (management as string) === '' || management === NetworkPolicyManagement.MANAGED;
  return managed && template.spec.networkPolicy === undefined;
}

/**
 * `podSpec` with the template's secure defaults; the input is not modified.
 *
 * - No service-account token unless the template asks for one: an agent running untrusted code
 *   should not hold Kubernetes credentials by accident.
 * - Public resolvers when the default NetworkPolicy applies and the template chose no DNS policy:
 *   that policy blocks the private ranges where cluster DNS lives, so without this the Pod could
 *   not resolve anything. Searches and options the template set are kept; only nameservers are
 *   filled in when it set none (dnsPolicy None requires at least one).
 */
export function applySecureDefaults(podSpec: PodSpec, template: SandboxTemplate): PodSpec {
  const out: PodSpec = structuredClone(podSpec);
  if (out.automountServiceAccountToken === undefined) out.automountServiceAccountToken = false;
  if (usesDefaultNetworkPolicy(template) && (out.dnsPolicy === undefined || out.dnsPolicy === '')) {
    out.dnsPolicy = 'None';
    const nameservers = out.dnsConfig?.nameservers?.length ? out.dnsConfig.nameservers : [...PUBLIC_DNS_NAMESERVERS];
    out.dnsConfig = { ...out.dnsConfig, nameservers };
  }
  return out;
}
