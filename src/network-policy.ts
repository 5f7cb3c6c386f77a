import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { PART_OF_LABEL } from './api/crd-manifests';
import { NetworkPolicyManagement } from './api/enums';
import { DEFAULT_SYSTEM_NAMESPACE, ROUTER_APP_LABEL } from './api/labels';
import {
  IPV4_ANY_CIDR, IPV6_ANY_CIDR, NAMESPACE_NAME_LABEL, NetworkPolicyEgressRuleJson, NetworkPolicyIngressRuleJson,
  NetworkPolicyPeerJson, NetworkPolicyPortJson, NetworkPolicySpecJson, allSandboxPodsSelector, checkIpBlock, podsInNamespacePeer,
  networkPolicyNameFor, publicInternetPeers, routerPeer, sandboxTemplateSelector,
} from './api/network-policy-defaults';
import { ErrorList, checkDns1123Label, checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './api/validation';

/** Options of {@link SandboxPeer.router}. */
export interface RouterPeerOptions {
  /** Namespace the sandbox router runs in. @default 'agent-sandbox-system' */
  readonly namespace?: string;
  /** Labels of the router Pods. @default { app: 'sandbox-router' } */
  readonly podLabels?: { [key: string]: string };
}

/** Who a sandbox Pod may accept traffic from (ingress) or send traffic to (egress). */
export class SandboxPeer {
  /** The sandbox router Pods: the only ingress the secure default allows. */
  public static router(options: RouterPeerOptions = {}): SandboxPeer {
    const namespace = options.namespace ?? DEFAULT_SYSTEM_NAMESPACE;
    const podLabels = options.podLabels ?? { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value };
    validate('SandboxPeer.router()', (errors) => {
      errors.check('namespace', checkDns1123Label(namespace));
      checkLabels(errors, 'podLabels', podLabels);
    });
    return new SandboxPeer([podsInNamespacePeer(namespace, podLabels)]);
  }

  /** Every Pod in the namespace named `name`. */
  public static namespace(name: string): SandboxPeer {
    validate('SandboxPeer.namespace()', (errors) => errors.check('name', checkDns1123Label(name)));
    return new SandboxPeer([{ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: name } } }]);
  }

  /** Every Pod in the namespaces with all of `labels` (`{}` means every namespace). */
  public static namespaceLabels(labels: { [key: string]: string }): SandboxPeer {
    validate('SandboxPeer.namespaceLabels()', (errors) => checkLabels(errors, 'labels', labels));
    return new SandboxPeer([{ namespaceSelector: { matchLabels: { ...labels } } }]);
  }

  /**
   * Pods with all of `labels`, in `namespace`, or in the policy's own namespace when omitted.
   * @param labels pod labels (`{}` means every Pod)
   * @param namespace namespace of the Pods; omit for the NetworkPolicy's own namespace
   */
  public static pods(labels: { [key: string]: string }, namespace?: string): SandboxPeer {
    validate('SandboxPeer.pods()', (errors) => {
      checkLabels(errors, 'labels', labels);
      if (namespace !== undefined) errors.check('namespace', checkDns1123Label(namespace));
    });
    return new SandboxPeer([namespace === undefined ? { podSelector: { matchLabels: { ...labels } } } : podsInNamespacePeer(namespace, labels)]);
  }

  /**
   * Addresses in `cidr` except those in `except`. Most CNIs match ipBlocks only against traffic
   * leaving or entering the cluster, not against Pod IPs; use {@link pods} for in-cluster peers.
   * @param cidr such as `203.0.113.0/24` or `2001:db8::/32`
   * @param except sub-ranges of `cidr` to leave out @default - none
   */
  public static ipBlock(cidr: string, except?: string[]): SandboxPeer {
    validate('SandboxPeer.ipBlock()', (errors) => checkIpBlock(errors, cidr, except ?? []));
    return new SandboxPeer([{ ipBlock: { cidr, ...(except && except.length > 0 ? { except: [...except] } : {}) } }]);
  }

  /**
   * All IPv4 and IPv6 addresses except private (RFC 1918), link-local (cloud metadata servers),
   * CGNAT (100.64.0.0/10), IPv6 unique-local and IPv6 link-local ranges: the secure default's egress.
   */
  public static publicInternet(): SandboxPeer {
    return new SandboxPeer(publicInternetPeers());
  }

  /**
   * Every Pod in every namespace and every IPv4/IPv6 address. Both kinds of peer are needed: many
   * CNIs do not match Pod IPs against ipBlocks.
   */
  public static anywhere(): SandboxPeer {
    return new SandboxPeer([{ namespaceSelector: {} }, { ipBlock: { cidr: IPV4_ANY_CIDR } }, { ipBlock: { cidr: IPV6_ANY_CIDR } }]);
  }

  private constructor(private readonly peers: NetworkPolicyPeerJson[]) {}

  /** @internal The networking/v1 NetworkPolicyPeers (one or more) of this peer. */
  public _toKube(): NetworkPolicyPeerJson[] {
    return clone(this.peers);
  }
}

/** A port, or range of ports, of a network rule. */
export class SandboxNetworkPort {
  /** One TCP port. */
  public static tcp(port: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('tcp', 'TCP', port);
  }

  /** One UDP port. */
  public static udp(port: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('udp', 'UDP', port);
  }

  /** TCP ports `startPort` to `endPort`, both included (needs Kubernetes 1.25+ for `endPort`). */
  public static tcpRange(startPort: number, endPort: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('tcpRange', 'TCP', startPort, endPort);
  }

  /** Every TCP port. */
  public static allTcp(): SandboxNetworkPort {
    return new SandboxNetworkPort({ protocol: 'TCP' });
  }

  /** Every UDP port. */
  public static allUdp(): SandboxNetworkPort {
    return new SandboxNetworkPort({ protocol: 'UDP' });
  }

  private static checked(factory: string, protocol: string, port: number, endPort?: number): SandboxNetworkPort {
    validate(`SandboxNetworkPort.${factory}()`, (errors) => {
      errors.check(endPort === undefined ? 'port' : 'startPort', checkPortNumber(port));
      if (endPort !== undefined) {
        errors.check('endPort', checkPortNumber(endPort));
        if (endPort < port) errors.check('endPort', `${endPort} is below startPort ${port}; use e.g. ${factory}(8000, 8080)`);
      }
    });
    return new SandboxNetworkPort({ protocol, port, ...(endPort !== undefined ? { endPort } : {}) });
  }

  private constructor(private readonly port: NetworkPolicyPortJson) {}

  /** @internal The networking/v1 NetworkPolicyPort. */
  public _toKube(): NetworkPolicyPortJson {
    return { ...this.port };
  }
}

/** One allow rule: traffic to/from any of `peers` on any of `ports`. */
export interface SandboxNetworkRule {
  /** Who may connect (ingress) or be reached (egress). Must not be empty. @default - any peer */
  readonly peers?: SandboxPeer[];
  /** Ports the rule allows. Must not be empty. @default - every port and protocol */
  readonly ports?: SandboxNetworkPort[];
}

/** Options of {@link DnsAccess.clusterDns}. */
export interface ClusterDnsOptions {
  /** Namespace of the cluster DNS Pods. @default 'kube-system' */
  readonly namespace?: string;
  /** Labels of the cluster DNS Pods (CoreDNS keeps kube-dns's label). @default { 'k8s-app': 'kube-dns' } */
  readonly podLabels?: { [key: string]: string };
}

/**
 * How sandbox Pods resolve names. The secure default egress excludes the private ranges where
 * cluster DNS lives, so name resolution is an explicit, documented choice, not an accident.
 */
export class DnsAccess {
  /**
   * Upstream's behaviour: no DNS rule; the operator sets `dnsPolicy: None` with nameservers
   * 8.8.8.8 and 1.1.1.1 on each Pod, which the public-internet egress reaches. Cluster Service
   * names do not resolve. The operator does this only for a Managed template without custom
   * ingress/egress (and only when the Pod sets no `dnsPolicy`), so any other setup must choose
   * {@link clusterDns} or {@link none}.
   */
  public static publicResolvers(): DnsAccess {
    return new DnsAccess('publicResolvers');
  }

  /**
   * Adds an egress rule to the cluster DNS Pods on UDP and TCP port 53, and leaves the Pod's DNS
   * settings alone. Cluster Service names resolve (and so reveal which Services exist). Most CNIs
   * evaluate policy after the kube-dns Service IP is translated to a Pod IP, so selecting the Pods
   * is enough; with NodeLocal DNSCache, also allow its link-local address with an ipBlock rule.
   */
  public static clusterDns(options: ClusterDnsOptions = {}): DnsAccess {
    const namespace = options.namespace ?? 'kube-system';
    const podLabels = options.podLabels ?? { 'k8s-app': 'kube-dns' };
    validate('DnsAccess.clusterDns()', (errors) => {
      errors.check('namespace', checkDns1123Label(namespace));
      checkLabels(errors, 'podLabels', podLabels);
    });
    return new DnsAccess('clusterDns', [podsInNamespacePeer(namespace, podLabels)]);
  }

  /**
   * No DNS rule and no DNS rewrite: for Pods that need no names, or whose egress rules already
   * reach the resolver they are configured with.
   */
  public static none(): DnsAccess {
    return new DnsAccess('none');
  }

  /** @internal `publicResolvers`, `clusterDns` or `none`. */
  public readonly _mode: string;
  private readonly dnsPeers?: NetworkPolicyPeerJson[];

  private constructor(mode: string, dnsPeers?: NetworkPolicyPeerJson[]) {
    this._mode = mode;
    this.dnsPeers = dnsPeers;
  }

  /** @internal The egress rule this choice adds, if any. */
  public _egressRule(): NetworkPolicyEgressRuleJson | undefined {
    if (this.dnsPeers === undefined) return undefined;
    return { to: clone(this.dnsPeers), ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }] };
  }
}

/**
 * The network settings of a SandboxTemplate (its `network` prop).
 *
 * - MANAGED, no `ingress`/`egress`, `dns` publicResolvers (all defaults): `spec.networkPolicy`
 *   stays unset; the operator applies the secure default (router-only ingress, public-internet
 *   egress) and points the Pods at public resolvers.
 * - MANAGED with `ingress`, `egress` or `DnsAccess.clusterDns()`/`none()`: the template gets
 *   `spec.networkPolicy: {ingress, egress}` rendered here; a side not given keeps its default
 *   (ingress from the router, egress to the public internet), plus the DNS rule.
 * - UNMANAGED: Git owns the policy. The template emits a NetworkPolicy `<template>-network-policy`
 *   selecting its Pods with the same rules, and sets `networkPolicyManagement: Unmanaged`.
 *   Never both a managed and a Git-owned policy.
 */
export interface SandboxNetworkPolicyOptions {
  /** Who owns the template's NetworkPolicy. @default NetworkPolicyManagement.MANAGED */
  readonly management?: NetworkPolicyManagement;
  /** Allowed ingress. `[]` denies all ingress. @default - only from the sandbox router */
  readonly ingress?: SandboxNetworkRule[];
  /** Allowed egress (the DNS rule is added to it). `[]` denies all egress. @default - the public internet */
  readonly egress?: SandboxNetworkRule[];
  /** How the Pods resolve names. @default DnsAccess.publicResolvers() */
  readonly dns?: DnsAccess;
  /**
   * Namespace of the sandbox router, for the rules rendered here. The operator's own default
   * policy trusts the namespace the operator is installed in.
   * @default 'agent-sandbox-system'
   */
  readonly routerNamespace?: string;
}

/** @internal What a SandboxTemplate writes for its `network` options. */
export interface _TemplateNetwork {
  /** `spec.networkPolicyManagement`. */
  readonly management: NetworkPolicyManagement;
  /** `spec.networkPolicy`, when custom rules are managed by the operator. */
  readonly specField?: { readonly ingress: NetworkPolicyIngressRuleJson[]; readonly egress: NetworkPolicyEgressRuleJson[] };
  /** The spec of the Git-owned `<template>-network-policy` (emit it with SandboxNetworkPolicy's `spec`). */
  readonly gitOwnedPolicySpec?: NetworkPolicySpecJson;
}

/**
 * @internal Turn a template's `network` options into template fields or a Git-owned policy spec.
 * Throws naming the `network.*` field and the fix for combinations the operator cannot honour.
 */
export function _renderTemplateNetwork(options: SandboxNetworkPolicyOptions | undefined, templateName: string): _TemplateNetwork {
  const opts = options ?? {};
  const management = opts.management ?? NetworkPolicyManagement.MANAGED;
  const dns = opts.dns ?? DnsAccess.publicResolvers();
  const routerNamespace = opts.routerNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  const custom = opts.ingress !== undefined || opts.egress !== undefined;
  const errors = new ErrorList();
  errors.check('network.routerNamespace', checkDns1123Label(routerNamespace));
  if (dns._mode === 'publicResolvers' && management === NetworkPolicyManagement.UNMANAGED) {
    errors.check('network.dns', 'DnsAccess.publicResolvers() (the default) relies on the operator rewriting Pod DNS, which it does only for management MANAGED; '
      + 'set dns to DnsAccess.clusterDns() or DnsAccess.none(), or management to NetworkPolicyManagement.MANAGED');
  } else if (dns._mode === 'publicResolvers' && custom) {
    errors.check('network.dns', 'DnsAccess.publicResolvers() (the default) works only with the operator\'s default policy: the operator rewrites Pod DNS only when a template has no custom ingress/egress; '
      + 'set dns to DnsAccess.clusterDns() or DnsAccess.none(), or remove network.ingress and network.egress');
  }
  const ingress = opts.ingress === undefined ? [{ from: [routerPeer(routerNamespace)] }] : renderRules(errors, 'network.ingress', opts.ingress, 'from');
  const egress = opts.egress === undefined ? [{ to: publicInternetPeers() }] : renderRules(errors, 'network.egress', opts.egress, 'to');
  errors.throwIfAny(`SandboxTemplate "${templateName}"`);

  if (management === NetworkPolicyManagement.MANAGED && !custom && dns._mode === 'publicResolvers') return { management };
  const dnsRule = dns._egressRule();
  const rules = { ingress, egress: dnsRule ? [...egress, dnsRule] : egress };
  if (management === NetworkPolicyManagement.MANAGED) return { management, specField: rules };
  return { management, gitOwnedPolicySpec: { podSelector: sandboxTemplateSelector(templateName), policyTypes: ['Ingress', 'Egress'], ...rules } };
}

/** Props of {@link SandboxNetworkPolicy}. */
export interface SandboxNetworkPolicyProps {
  /**
   * Metadata of the NetworkPolicy. With a MANAGED template, set a name other than
   * `<template>-network-policy`: the operator refuses to manage a policy of that name it does not own.
   * @default - named `<templateName>-network-policy` (the Git-owned policy of that template) when
   * `templateName` is set, otherwise a generated name; the chart's namespace
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * Select only the Pods of Sandboxes made from this SandboxTemplate (by a claim or warm pool;
   * bare Sandboxes never carry the template label).
   * @default - every sandbox Pod in the namespace
   */
  readonly templateName?: string;
  /** Allowed ingress. @default - none: ingress is denied unless another policy allows it */
  readonly ingress?: SandboxNetworkRule[];
  /** Allowed egress (the DNS rule is added to it). @default - none: egress is denied unless another policy allows it */
  readonly egress?: SandboxNetworkRule[];
  /** DNS egress to add. `publicResolvers()` is refused: it is an operator rewrite, not a rule. @default DnsAccess.none() */
  readonly dns?: DnsAccess;
  /**
   * A complete networking/v1 NetworkPolicySpec, emitted verbatim instead of one built from
   * `templateName`, `ingress`, `egress` and `dns` (TypeScript only; SandboxTemplate passes its
   * rendered Git-owned spec here).
   * @default - built from the other props
   * @jsii ignore
   */
  readonly spec?: NetworkPolicySpecJson;
}

/**
 * A NetworkPolicy you own in Git for sandbox Pods, isolating both directions (policyTypes Ingress
 * and Egress) and allowing exactly the given rules: the Git-owned policy of an UNMANAGED
 * template, or an extra policy next to others (NetworkPolicies are additive).
 */
export class SandboxNetworkPolicy extends Construct {
  /** The NetworkPolicy object (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: SandboxNetworkPolicyProps = {}) {
    super(scope, id);
    const errors = new ErrorList();
    if (props.templateName !== undefined) errors.check('templateName', checkDns1123Subdomain(props.templateName));
    if (props.dns?._mode === 'publicResolvers') {
      errors.check('dns', 'DnsAccess.publicResolvers() is an operator DNS rewrite for MANAGED templates, not a NetworkPolicy rule; use DnsAccess.clusterDns() or DnsAccess.none()');
    }
    if (props.spec && (props.ingress || props.egress || props.dns)) {
      errors.check('spec', 'give either a complete spec or ingress/egress/dns, not both');
    }
    const ingress = renderRules(errors, 'ingress', props.ingress ?? [], 'from');
    const egress = renderRules(errors, 'egress', props.egress ?? [], 'to');
    errors.throwIfAny(`SandboxNetworkPolicy ${this.node.path}`);
    const dnsRule = props.dns?._egressRule();
    const name = props.metadata?.name ?? (props.templateName === undefined ? undefined : networkPolicyNameFor(props.templateName));
    this.apiObject = networkPolicyObject(this, { ...props.metadata, ...(name ? { name } : {}) }, props.spec ?? {
      podSelector: podSelectorFor(props.templateName),
      policyTypes: ['Ingress', 'Egress'],
      ingress,
      egress: dnsRule ? [...egress, dnsRule] : egress,
    });
  }
}

/** Props of {@link SandboxDefaultDenyPolicy}. */
export interface SandboxDefaultDenyPolicyProps {
  /** Metadata of the NetworkPolicy. @default - a generated name, the chart's namespace */
  readonly metadata?: ApiObjectMetadata;
}

/**
 * Denies all ingress and egress for every sandbox Pod in its namespace, bare or from a template.
 * NetworkPolicies are additive, so this is a floor: template policies, {@link AllowRouterIngress}
 * and {@link SandboxNetworkPolicy} open holes in it. It also covers bare Sandboxes, which template
 * policies never select.
 */
export class SandboxDefaultDenyPolicy extends Construct {
  /** The NetworkPolicy object (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: SandboxDefaultDenyPolicyProps = {}) {
    super(scope, id);
    this.apiObject = networkPolicyObject(this, props.metadata, {
      podSelector: allSandboxPodsSelector(),
      policyTypes: ['Ingress', 'Egress'],
    });
  }
}

/** Props of {@link AllowRouterIngress}. */
export interface AllowRouterIngressProps {
  /** Namespace the sandbox router runs in. */
  readonly routerNamespace: string;
  /** Labels of the router Pods. @default { app: 'sandbox-router' } */
  readonly routerPodLabels?: { [key: string]: string };
  /** Admit the router only to the Pods of this SandboxTemplate. @default - every sandbox Pod in the namespace */
  readonly templateName?: string;
  /** Ports the router may reach. @default - every port */
  readonly ports?: SandboxNetworkPort[];
  /** Metadata of the NetworkPolicy. @default - a generated name, the chart's namespace */
  readonly metadata?: ApiObjectMetadata;
}

/**
 * Allows ingress from the sandbox router in `routerNamespace`: the additive companion of
 * {@link SandboxDefaultDenyPolicy}. It lists only the Ingress policy type, so it never isolates egress.
 */
export class AllowRouterIngress extends Construct {
  /** The NetworkPolicy object (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: AllowRouterIngressProps) {
    super(scope, id);
    const podLabels = props.routerPodLabels ?? { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value };
    const errors = new ErrorList();
    errors.check('routerNamespace', checkDns1123Label(props.routerNamespace));
    checkLabels(errors, 'routerPodLabels', podLabels);
    if (props.templateName !== undefined) errors.check('templateName', checkDns1123Subdomain(props.templateName));
    if (props.ports?.length === 0) errors.check('ports', 'an empty list allows every port in Kubernetes; omit ports to allow every port');
    errors.throwIfAny(`AllowRouterIngress ${this.node.path}`);
    this.apiObject = networkPolicyObject(this, props.metadata, {
      podSelector: podSelectorFor(props.templateName),
      policyTypes: ['Ingress'],
      ingress: [{
        from: [podsInNamespacePeer(props.routerNamespace, podLabels)],
        ...(props.ports ? { ports: props.ports.map((p) => p._toKube()) } : {}),
      }],
    });
  }
}

/** A networking.k8s.io/v1 NetworkPolicy as a plain ApiObject, so JSON patches reach every field. */
function networkPolicyObject(scope: Construct, metadata: ApiObjectMetadata | undefined, spec: NetworkPolicySpecJson): ApiObject {
  return new ApiObject(scope, 'Resource', {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { ...metadata, labels: { ...PART_OF_LABEL, ...metadata?.labels } },
    spec: clone(spec),
  });
}

function podSelectorFor(templateName: string | undefined) {
  return templateName === undefined ? allSandboxPodsSelector() : sandboxTemplateSelector(templateName);
}

/** Rules as JSON; empty lists are refused because Kubernetes reads them as "any", the opposite of how they look. */
function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'from'): NetworkPolicyIngressRuleJson[];
function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'to'): NetworkPolicyEgressRuleJson[];
function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'from' | 'to'): object[] {
  return rules.map((rule, i) => {
    if (rule.peers?.length === 0) {
      errors.check(`${field}[${i}].peers`, 'an empty list allows every peer in Kubernetes; omit peers to allow any peer, or drop the rule to allow none');
    }
    if (rule.ports?.length === 0) {
      errors.check(`${field}[${i}].ports`, 'an empty list allows every port in Kubernetes; omit ports to allow every port');
    }
    return {
      ...(rule.peers?.length ? { [key]: rule.peers.flatMap((p) => p._toKube()) } : {}),
      ...(rule.ports?.length ? { ports: rule.ports.map((p) => p._toKube()) } : {}),
    };
  });
}

function checkLabels(errors: ErrorList, field: string, labels: { [key: string]: string }): void {
  for (const [key, value] of Object.entries(labels)) {
    errors.check(field, checkQualifiedName(key));
    errors.check(`${field}.${key}`, checkLabelValue(value));
  }
}

function checkPortNumber(port: number): string | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? undefined : `${port} is not a port; use an integer from 1 to 65535, e.g. 443`;
}

/** Run `check` and throw one error naming the factory and every bad argument, so mistakes fail where they are made. */
function validate(where: string, check: (errors: ErrorList) => void): void {
  const errors = new ErrorList();
  check(errors);
  if (errors.all.length > 0) throw new Error(`${where}: invalid arguments:\n  - ${errors.all.join('\n  - ')}`);
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}
