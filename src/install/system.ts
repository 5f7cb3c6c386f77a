import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { ErrorList } from '../api/validation';
import { SandboxCrds } from '../crds';
import { SandboxFlowControl, SandboxFlowControlOptions } from '../flow-control';
import type { AgentSandboxExtensions } from './extensions';
import { CONTROLLER, orderFirst } from './manifest';
import { DEFAULT_OPERATOR_IMAGE, OperatorDeploymentOptions, metricsService, operatorDeployment, resolveOperator } from './operator-deployment';
import { coreClusterRole, extensionsClusterRole, leaderElectionRole, operatorServiceAccount } from './rbac';
import { SandboxRouterOptions, addRouter, checkRouter, routerPodLabelsOf } from './router';

/** Props of {@link AgentSandboxSystem}. */
export interface AgentSandboxSystemProps extends OperatorDeploymentOptions {
  /** Create the Namespace. Turn off when it is managed elsewhere. @default true */
  readonly createNamespace?: boolean;
  /**
   * Install the extension layer too (SandboxTemplate, SandboxWarmPool and SandboxClaim CRDs, their
   * RBAC, `--extensions=true`). Off gives upstream's core-only `sandbox.yaml`.
   * @default true
   */
  readonly extensions?: boolean;
  /**
   * Deploy the sandbox router in `namespace` (Pods labelled `router.podLabels`, by default
   * `app: sandbox-router`). The operator is told where (`--router-namespace`, `--router-pod-labels`),
   * so its default per-template NetworkPolicy admits exactly those Pods whatever the namespace. Rules
   * you render yourself (custom template `network` rules, `AllowRouterIngress`, `SandboxPeer.router`)
   * take `namespace` and {@link AgentSandboxSystem.routerPodLabels}. Pass `{}` for the defaults.
   * @default - no router
   */
  readonly router?: SandboxRouterOptions;
  /** API Priority and Fairness for the controller's ServiceAccount. Pass `{}` for upstream's settings. @default - none */
  readonly flowControl?: SandboxFlowControlOptions;
}

/**
 * The whole agent-sandbox install: Namespace, CRDs, the operator's ServiceAccount, least-privilege
 * RBAC, Deployment and metrics Service, and optionally the router and API Priority and Fairness.
 * The Namespace and the CRDs are ordered before everything else in the synthesized manifest.
 *
 * To split the release like upstream: `sandbox.yaml` = `extensions: false`;
 * `extensions.yaml` = {@link AgentSandboxExtensions}; `sandbox-with-extensions.yaml` = the defaults.
 */
export class AgentSandboxSystem extends Construct {
  /** The operator image used when `image` is not given; matches this library's release. */
  public static readonly DEFAULT_IMAGE = DEFAULT_OPERATOR_IMAGE;

  /** The namespace everything namespaced is installed into. */
  public readonly namespace: string;
  /** The operator's ServiceAccount name. */
  public readonly serviceAccountName: string = CONTROLLER;
  /** The CRDs. */
  public readonly crds: SandboxCrds;
  /** The operator Deployment (escape hatch). */
  public readonly deployment: ApiObject;
  /** The router Deployment, when `router` is set. */
  public readonly routerDeployment?: ApiObject;
  /** Labels of the router Pods, when `router` is set (they run in {@link namespace}). */
  public readonly routerPodLabels?: { [key: string]: string };
  /** API Priority and Fairness objects, when `flowControl` is set. */
  public readonly flowControl?: SandboxFlowControl;

  public constructor(scope: Construct, id: string, props: AgentSandboxSystemProps = {}) {
    super(scope, id);
    const extensions = props.extensions ?? true;
    const errors = new ErrorList();
    for (const flag of ['createNamespace', 'extensions'] as const) {
      if (props[flag] !== undefined && typeof props[flag] !== 'boolean') errors.check(flag, `must be true or false, got ${JSON.stringify(props[flag])}`);
    }
    if (props.router) checkRouter(errors, props.router);
    this.routerPodLabels = props.router && routerPodLabelsOf(props.router);
    const operator = resolveOperator(errors, props, extensions, this.routerPodLabels);
    errors.throwIfAny(`AgentSandboxSystem ${this.node.path}`);
    this.namespace = operator.namespace;

    const first: ApiObject[] = [];
    if (props.createNamespace ?? true) {
      first.push(new ApiObject(this, 'Namespace', {
        apiVersion: 'v1',
        kind: 'Namespace',
        // The operator and router satisfy the restricted Pod Security Standard; enforce it.
        metadata: { name: this.namespace, labels: { ...PART_OF_LABEL, 'pod-security.kubernetes.io/enforce': 'restricted' } },
      }));
    }
    this.crds = new SandboxCrds(this, 'Crds', { extensions });
    first.push(...this.crds.apiObjects);

    operatorServiceAccount(this, this.namespace);
    coreClusterRole(this, this.namespace);
    if (extensions) extensionsClusterRole(this, this.namespace);
    leaderElectionRole(this, operator.leaderElectionNamespace ?? this.namespace, this.namespace);
    this.deployment = operatorDeployment(this, operator);
    metricsService(this, operator);

    if (props.router) this.routerDeployment = addRouter(this, this.namespace, props.router, operator.image);
    if (props.flowControl) {
      this.flowControl = new SandboxFlowControl(this, 'FlowControl', {
        ...props.flowControl, serviceAccountName: CONTROLLER, serviceAccountNamespace: this.namespace,
      });
    }
    orderFirst(this, first);
  }
}
