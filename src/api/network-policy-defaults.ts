/**
 * The NetworkPolicy the operator writes for a Managed SandboxTemplate without custom rules, and
 * the pieces it is made of. Shared by the constructs (which render the same rules when a user
 * customises them or owns the policy in Git) and the operator, so both always agree. No cdk8s
 * imports: the operator loads this file too.
 */
import { DEFAULT_SYSTEM_NAMESPACE, NETWORK_POLICY_NAME_SUFFIX, ROUTER_APP_LABEL, SandboxLabels } from './labels';
import { NameHash } from './name-hash';
import { ErrorList } from './validation';

/** A label selector (meta/v1 LabelSelector) as JSON. */
export interface LabelSelectorJson {
  readonly matchLabels?: { readonly [key: string]: string };
  readonly matchExpressions?: ReadonlyArray<{ readonly key: string; readonly operator: string; readonly values?: readonly string[] }>;
}

/** A networking/v1 NetworkPolicyPeer as JSON. */
export interface NetworkPolicyPeerJson {
  readonly podSelector?: LabelSelectorJson;
  readonly namespaceSelector?: LabelSelectorJson;
  readonly ipBlock?: { readonly cidr: string; readonly except?: readonly string[] };
}

/** A networking/v1 NetworkPolicyPort as JSON. */
export interface NetworkPolicyPortJson {
  readonly protocol: string;
  readonly port?: number;
  readonly endPort?: number;
}

/** A networking/v1 NetworkPolicyIngressRule as JSON. */
export interface NetworkPolicyIngressRuleJson {
  readonly from?: readonly NetworkPolicyPeerJson[];
  readonly ports?: readonly NetworkPolicyPortJson[];
}

/** A networking/v1 NetworkPolicyEgressRule as JSON. */
export interface NetworkPolicyEgressRuleJson {
  readonly to?: readonly NetworkPolicyPeerJson[];
  readonly ports?: readonly NetworkPolicyPortJson[];
}

/** A networking/v1 NetworkPolicySpec as JSON. */
export interface NetworkPolicySpecJson {
  readonly podSelector: LabelSelectorJson;
  readonly policyTypes: readonly string[];
  readonly ingress?: readonly NetworkPolicyIngressRuleJson[];
  readonly egress?: readonly NetworkPolicyEgressRuleJson[];
}

/** The label the API server sets on every Namespace, so a selector can name one namespace. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** Every IPv4 address. */
export const IPV4_ANY_CIDR = '0.0.0.0/0';
/** Every IPv6 address. */
export const IPV6_ANY_CIDR = '::/0';

/** RFC 1918 private networks: where most clusters put their nodes, Pods and Services. */
export const RFC1918_CIDRS: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

/** IPv4 link-local, which holds the cloud metadata servers (169.254.169.254) that hand out node credentials. */
export const IPV4_LINK_LOCAL_CIDR = '169.254.0.0/16';

/**
 * RFC 6598 shared address space ("CGNAT"). Upstream does not exclude it; we do, because clusters
 * often put Pod, Service or node networks there (AWS VPC secondary CIDRs for EKS Pods, GKE's
 * non-RFC 1918 ranges, overlay VPNs such as Tailscale), and no public internet host lives in it,
 * so excluding it closes a path into the cluster at no cost.
 */
export const CGNAT_CIDR = '100.64.0.0/10';

/** IPv4 ranges the default egress excludes: RFC 1918, link-local (metadata) and CGNAT. */
export const PUBLIC_INTERNET_IPV4_EXCEPT: readonly string[] = [...RFC1918_CIDRS, IPV4_LINK_LOCAL_CIDR, CGNAT_CIDR];

/** IPv6 ranges the default egress excludes: unique local (`fc00::/7`) and link-local (`fe80::/10`). */
export const PUBLIC_INTERNET_IPV6_EXCEPT: readonly string[] = ['fc00::/7', 'fe80::/10'];

/**
 * The nameservers the operator gives a Pod (`dnsPolicy: None`) when its template uses the default
 * Managed policy, because that policy blocks the private ranges where cluster DNS lives.
 */
export const PUBLIC_DNS_NAMESERVERS: readonly string[] = ['8.8.8.8', '1.1.1.1'];

/** Selects the Pods of Sandboxes made from `templateName` (by a claim or warm pool; not bare Sandboxes). */
export function sandboxTemplateSelector(templateName: string): LabelSelectorJson {
  return { matchLabels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(templateName) } };
}

/** Selects every sandbox Pod (bare or from a template): they all carry the name-hash label. */
export function allSandboxPodsSelector(): LabelSelectorJson {
  return { matchExpressions: [{ key: SandboxLabels.SANDBOX_NAME_HASH, operator: 'Exists' }] };
}

/** The longest object name the API server takes (a DNS-1123 subdomain). */
export const MAX_OBJECT_NAME_LENGTH = 253;

/**
 * The name of the per-template NetworkPolicy: upstream's exact `<template>-network-policy` whenever
 * it fits in {@link MAX_OBJECT_NAME_LENGTH} characters. A longer template name (up to 253
 * characters is legal) is cut, and `-<NameHash(template)>` keeps it unique and deterministic:
 * `<template cut>-<8 hex>-network-policy`, exactly 253 characters or less. The cut never ends in
 * `.` or `-`, so the result stays a valid DNS subdomain.
 */
export function networkPolicyNameFor(templateName: string): string {
  const exact = `${templateName}${NETWORK_POLICY_NAME_SUFFIX}`;
  if (exact.length <= MAX_OBJECT_NAME_LENGTH) return exact;
  const hash = NameHash.of(templateName);
  const room = MAX_OBJECT_NAME_LENGTH - NETWORK_POLICY_NAME_SUFFIX.length - hash.length - 1;
  const prefix = templateName.slice(0, room).replace(/[-.]+$/, '');
  return `${prefix}-${hash}${NETWORK_POLICY_NAME_SUFFIX}`;
}

/**
 * Pods with `podLabels` in the namespace `namespace`. Both selectors sit in one peer, so a Pod must
 * match both; two peers would admit any Pod of that namespace, or those labels in any namespace.
 */
export function podsInNamespacePeer(namespace: string, podLabels: { readonly [key: string]: string }): NetworkPolicyPeerJson {
  return {
    namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: namespace } },
    podSelector: { matchLabels: { ...podLabels } },
  };
}

/** The labels of the router Pods the install bundle deploys unless told otherwise: `app=sandbox-router`. */
export function defaultRouterPodLabels(): { [key: string]: string } {
  return { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value };
}

/** The sandbox router Pods (`podLabels`, by default `app=sandbox-router`) in `namespace`. */
export function routerPeer(
  namespace: string = DEFAULT_SYSTEM_NAMESPACE,
  podLabels: { readonly [key: string]: string } = defaultRouterPodLabels(),
): NetworkPolicyPeerJson {
  return podsInNamespacePeer(namespace, podLabels);
}

/** The public internet: all IPv4 and IPv6 addresses minus private, link-local, CGNAT and ULA ranges. */
export function publicInternetPeers(clusterCidrs: readonly string[] = []): NetworkPolicyPeerJson[] {
  const extra = (bits: number, known: readonly string[]) => clusterCidrs
    .filter((c) => parseCidr(c)?.bitsTotal === bits && !known.includes(c));
  return [
    { ipBlock: { cidr: IPV4_ANY_CIDR, except: [...PUBLIC_INTERNET_IPV4_EXCEPT, ...extra(32, PUBLIC_INTERNET_IPV4_EXCEPT)] } },
    { ipBlock: { cidr: IPV6_ANY_CIDR, except: [...PUBLIC_INTERNET_IPV6_EXCEPT, ...extra(128, PUBLIC_INTERNET_IPV6_EXCEPT)] } },
  ];
}

/**
 * The spec the operator writes to `<template>-network-policy` for a Managed template without
 * `spec.networkPolicy`: ingress only from the router Pods (`routerPodLabels` in the namespace
 * `routerNamespace`, matched by its `kubernetes.io/metadata.name` label, any port), egress to the public internet
 * (any port). There is deliberately no DNS rule; the operator points the Pods at
 * {@link PUBLIC_DNS_NAMESERVERS} instead.
 *
 * Same as upstream's `buildDefaultNetworkPolicySpec`, except that egress also excludes
 * {@link CGNAT_CIDR}, and the cluster's own ranges outside the private ones (`--cluster-cidrs`).
 */
export function defaultSandboxNetworkPolicySpec(
  templateName: string,
  routerNamespace: string = DEFAULT_SYSTEM_NAMESPACE,
  routerPodLabels: { readonly [key: string]: string } = defaultRouterPodLabels(),
  clusterCidrs: readonly string[] = [],
): NetworkPolicySpecJson {
  return {
    podSelector: sandboxTemplateSelector(templateName),
    policyTypes: ['Ingress', 'Egress'],
    ingress: [{ from: [routerPeer(routerNamespace, routerPodLabels)] }],
    egress: [{ to: publicInternetPeers(clusterCidrs) }],
  };
}

/**
 * The API server's ipBlock rules, checked eagerly so a typo fails at synth, not at apply time:
 * `cidr` and every `except` are CIDRs, and each `except` is a strict sub-range of `cidr`.
 * Records errors under the fields `cidr` and `except[i]`.
 */
export function checkIpBlock(errors: ErrorList, cidr: string, except: readonly string[]): void {
  const notCidr = (value: string) => `"${value}" is not a CIDR block; use a form like "10.0.0.0/8" or "fc00::/7"`;
  const outer = parseCidr(cidr);
  if (!outer) errors.prop('cidr', notCidr(cidr));
  except.forEach((value, i) => {
    const inner = parseCidr(value);
    if (!inner) {
      errors.prop(`except[${i}]`, notCidr(value));
    } else if (outer && !strictlyWithin(inner, outer)) {
      errors.prop(`except[${i}]`, `"${value}" must be a strict sub-range of cidr "${cidr}", e.g. "10.1.0.0/16" within "10.0.0.0/8"`);
    }
  });
}

/** A CIDR block as numbers: `address` holds all `bitsTotal` (32 or 128) bits, `prefix` the mask length. */
export interface ParsedCidr { readonly bitsTotal: number; readonly address: bigint; readonly prefix: number }

/** Parse `a.b.c.d/n` or an IPv6 `x:x::x/n`; `undefined` if malformed (leading zeros included, as Go refuses them). */
export function parseCidr(value: string): ParsedCidr | undefined {
  const match = /^([^/]+)\/(0|[1-9]\d{0,2})$/.exec(value);
  if (!match) return undefined;
  const address = match[1].includes(':') ? parseIpv6(match[1]) : parseIpv4(match[1]);
  const bitsTotal = match[1].includes(':') ? 128 : 32;
  const prefix = Number(match[2]);
  return address === undefined || prefix > bitsTotal ? undefined : { bitsTotal, address, prefix };
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((acc, p) => acc * 256n + BigInt(Number(p)), 0n);
}

function parseIpv6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = halves.map((h) => (h === '' ? [] : h.split(':')));
  const count = groups.reduce((n, g) => n + g.length, 0);
  if ((halves.length === 1 && count !== 8) || (halves.length === 2 && count > 7)) return undefined;
  if (groups.some((g) => g.some((x) => !/^[0-9a-fA-F]{1,4}$/.test(x)))) return undefined;
  const zeros: string[] = halves.length === 2 ? new Array(8 - count).fill('0') : [];
  const all = [...groups[0], ...zeros, ...(groups[1] ?? [])];
  return all.reduce((acc, g) => acc * 65536n + BigInt(parseInt(g, 16)), 0n);
}

/** Whether `inner` lies inside `outer` and is smaller, the API server's rule for ipBlock `except`. */
export function strictlyWithin(inner: ParsedCidr, outer: ParsedCidr): boolean {
  if (inner.bitsTotal !== outer.bitsTotal || inner.prefix <= outer.prefix) return false;
  const hostRange = 2n ** BigInt(outer.bitsTotal - outer.prefix);
  return inner.address / hostRange === outer.address / hostRange;
}
