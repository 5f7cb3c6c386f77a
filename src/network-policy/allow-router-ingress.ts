import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { checkLabels } from './checks';
import type { SandboxDefaultDenyPolicy } from './default-deny';
import { networkPolicyObject, podSelectorFor } from './policy-object';
import { SandboxNetworkPort } from './port';
import { defaultRouterPodLabels, routerPeer } from '../api/network-policy-defaults';
import { ErrorList, checkDns1123Label, checkDns1123Subdomain } from '../api/validation';
import { _guardChart } from '../chart-guards';

/** Props of {@link AllowRouterIngress}. With `AgentSandboxSystem`, pass `routerNamespace: system.namespace, routerPodLabels: system.routerPodLabels`. */
export interface AllowRouterIngressProps {
  /** Namespace the sandbox router runs in (matched by its `kubernetes.io/metadata.name` label). */
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
    _guardChart(this);
    const podLabels = props.routerPodLabels ?? defaultRouterPodLabels();
    const errors = new ErrorList();
    errors.prop('routerNamespace', checkDns1123Label(props.routerNamespace));
    checkLabels(errors, 'routerPodLabels', podLabels);
    if (props.templateName !== undefined) errors.prop('templateName', checkDns1123Subdomain(props.templateName));
    if (props.ports?.length === 0) errors.prop('ports', 'an empty list allows every port in Kubernetes; omit ports to allow every port');
    errors.throwIfAny(`AllowRouterIngress ${this.node.path}`);
    this.apiObject = networkPolicyObject(this, props.metadata, {
      podSelector: podSelectorFor(props.templateName),
      policyTypes: ['Ingress'],
      ingress: [{
        from: [routerPeer(props.routerNamespace, podLabels)],
        ...(props.ports ? { ports: props.ports.map((p) => p._toKube()) } : {}),
      }],
    });
  }
}
