import { SandboxPeer } from './peer';
import { SandboxNetworkPort } from './port';
import { NetworkPolicyEgressRuleJson, NetworkPolicyIngressRuleJson } from '../api/network-policy-defaults';
import { ErrorList } from '../api/validation';

/** One allow rule: traffic to/from any of `peers` on any of `ports`. */
export interface SandboxNetworkRule {
  /** Who may connect (ingress) or be reached (egress). Must not be empty. @default - any peer */
  readonly peers?: SandboxPeer[];
  /** Ports the rule allows. Must not be empty. @default - every port and protocol */
  readonly ports?: SandboxNetworkPort[];
}

/** Rules as JSON; empty lists are refused because Kubernetes reads them as "any", the opposite of how they look. */
export function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'from'): NetworkPolicyIngressRuleJson[];
export function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'to'): NetworkPolicyEgressRuleJson[];
export function renderRules(errors: ErrorList, field: string, rules: SandboxNetworkRule[], key: 'from' | 'to'): object[] {
  return rules.map((rule, i) => {
    if (rule.peers?.length === 0) {
      errors.prop(`${field}[${i}].peers`, 'an empty list allows every peer in Kubernetes; omit peers to allow any peer, or drop the rule to allow none');
    }
    if (rule.ports?.length === 0) {
      errors.prop(`${field}[${i}].ports`, 'an empty list allows every port in Kubernetes; omit ports to allow every port');
    }
    return {
      ...(rule.peers?.length ? { [key]: rule.peers.flatMap((p) => p._toKube()) } : {}),
      ...(rule.ports?.length ? { ports: rule.ports.map((p) => p._toKube()) } : {}),
    };
  });
}
