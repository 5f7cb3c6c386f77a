import { IConstruct } from 'constructs';
import { checkLabels, validate } from './checks';
import { clone } from './policy-object';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/labels';
import {
  IPV4_ANY_CIDR, IPV6_ANY_CIDR, NAMESPACE_NAME_LABEL, NetworkPolicyPeerJson, checkIpBlock, defaultRouterPodLabels,
  podsInNamespacePeer, publicInternetPeers,
} from '../api/network-policy-defaults';
import { REFERENCED_KINDS } from '../api/object-kinds';
import { checkDns1123Label } from '../api/validation';
import { ObjectRef } from '../object-ref';

/**
 * Options of {@link SandboxPeer.router}: where the router Pods run. With `AgentSandboxSystem`, set
 * `namespace` to the system's `namespace` and `podLabels` to its `routerPodLabels`.
 */
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
    const podLabels = options.podLabels ?? defaultRouterPodLabels();
    validate('SandboxPeer', 'router', (errors) => {
      errors.prop('namespace', checkDns1123Label(namespace));
      checkLabels(errors, 'podLabels', podLabels);
    });
    return new SandboxPeer([podsInNamespacePeer(namespace, podLabels)]);
  }

  /** Every Pod in the namespace named `name`. */
  public static namespace(name: string): SandboxPeer {
    validate('SandboxPeer', 'namespace', (errors) => errors.prop('name', checkDns1123Label(name)));
    return new SandboxPeer([{ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: name } } }]);
  }

  /**
   * Every Pod in the Namespace that `namespace` defines: a cdk8s-plus `Namespace`, a `KubeNamespace`
   * or any construct wrapping a Namespace object.
   */
  public static namespaceOf(namespace: IConstruct): SandboxPeer {
    const ref = ObjectRef.fromConstruct(namespace);
    validate('SandboxPeer', 'namespaceOf', (errors) => ref._check(errors, 'namespace', REFERENCED_KINDS.namespace, undefined));
    return SandboxPeer.namespace(ref.name);
  }

  /** Every Pod in the namespaces with all of `labels` (an empty map means every namespace). */
  public static namespaceLabels(labels: { [key: string]: string }): SandboxPeer {
    validate('SandboxPeer', 'namespaceLabels', (errors) => checkLabels(errors, 'labels', labels));
    return new SandboxPeer([{ namespaceSelector: { matchLabels: { ...labels } } }]);
  }

  /**
   * Pods with all of `labels`, in `namespace`, or in the policy's own namespace when omitted.
   * @param labels pod labels (an empty map means every Pod)
   * @param namespace namespace of the Pods; omit for the NetworkPolicy's own namespace
   */
  public static pods(labels: { [key: string]: string }, namespace?: string): SandboxPeer {
    validate('SandboxPeer', 'pods', (errors) => {
      checkLabels(errors, 'labels', labels);
      if (namespace !== undefined) errors.prop('namespace', checkDns1123Label(namespace));
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
    validate('SandboxPeer', 'ipBlock', (errors) => checkIpBlock(errors, cidr, except ?? []));
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
