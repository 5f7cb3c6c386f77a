import { checkLabels, validate } from './checks';
import { clone } from './policy-object';
import { NetworkPolicyEgressRuleJson, NetworkPolicyPeerJson, podsInNamespacePeer } from '../api/network-policy-defaults';
import { checkDns1123Label } from '../api/validation';

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
    validate('DnsAccess', 'clusterDns', (errors) => {
      errors.prop('namespace', checkDns1123Label(namespace));
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
