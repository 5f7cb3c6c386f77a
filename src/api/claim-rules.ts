import { ROUTER_APP_LABEL } from './labels';
import { checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './validation';

/**
 * Rules for a claim's `additionalPodMetadata` (upstream's SandboxClaim validation), shared by the construct
 * (at synth) and the operator (at reconcile). A claim may only add labels in domains the
 * platform allows, so tenants cannot impersonate the router or system labels.
 */

/** The label domain allowed by default (upstream's default allow-list). */
export const DEFAULT_ALLOWED_LABEL_DOMAINS: readonly string[] = ['sandbox.users.io'];

/** Annotation domains a claim may never set. */
export const FORBIDDEN_ANNOTATION_DOMAINS: readonly string[] = ['kubernetes.io', 'k8s.io', 'agents.x-k8s.io'];

/** The one annotation under a forbidden domain that claims may still set. */
export const ALLOWED_SYSTEM_ANNOTATION = 'cluster-autoscaler.kubernetes.io/safe-to-evict';

const inDomain = (domain: string, allowed: string): boolean => domain === allowed || domain.endsWith(`.${allowed}`);

/** Problems with one claim Pod label, or undefined. */
export function checkClaimPodLabel(
  key: string,
  value: string,
  allowedDomains: readonly string[] = DEFAULT_ALLOWED_LABEL_DOMAINS,
): string | undefined {
  const keyProblem = checkQualifiedName(key);
  if (keyProblem) return keyProblem;
  const slash = key.indexOf('/');
  if (slash < 0) return `label "${key}" needs a domain prefix from the allow-list (${allowedDomains.join(', ')}), e.g. "${allowedDomains[0] ?? 'example.com'}/${key}"`;
  const domain = key.slice(0, slash).toLowerCase();
  if (!allowedDomains.some((allowed) => inDomain(domain, allowed.toLowerCase()))) {
    return `label domain "${domain}" is not allowed; use one of ${allowedDomains.join(', ')} (or a subdomain)`;
  }
  if (key.toLowerCase() === ROUTER_APP_LABEL.key && value.toLowerCase() === ROUTER_APP_LABEL.value) {
    return 'app=sandbox-router is reserved for the router';
  }
  return checkLabelValue(value);
}

/** Problems with one claim Pod annotation key, or undefined. */
export function checkClaimPodAnnotation(key: string): string | undefined {
  const keyProblem = checkQualifiedName(key);
  if (keyProblem) return keyProblem;
  if (key === ALLOWED_SYSTEM_ANNOTATION) return undefined;
  const slash = key.indexOf('/');
  if (slash < 0) return undefined;
  const domain = key.slice(0, slash).toLowerCase();
  if (checkDns1123Subdomain(domain)) return `annotation "${key}" has an invalid domain`;
  const forbidden = FORBIDDEN_ANNOTATION_DOMAINS.find((d) => inDomain(domain, d));
  return forbidden ? `annotation domain "${domain}" is reserved (${forbidden}); use your own domain or no prefix` : undefined;
}
