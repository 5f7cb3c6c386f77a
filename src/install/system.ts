import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { REFERENCED_KINDS } from '../api/object-kinds';
import { ErrorList } from '../api/validation';
import { SandboxCrds } from '../crds';
import { SandboxFlowControl, SandboxFlowControlOptions } from '../flow-control';
import {
  ALLOW_CREDENTIALS_ANNOTATION, ALLOW_CREDENTIALS_CLUSTER_ROLE, ALLOW_CREDENTIALS_VERB,
  ALLOW_PRIVILEGED_ANNOTATION, ALLOW_PRIVILEGED_CLUSTER_ROLE, ALLOW_PRIVILEGED_VERB,
  DEFAULT_ALLOWED_CAPABILITIES, addAdmissionPolicy, addCredentialsPolicy, addRouterPolicy, checkAllowedCapabilities, checkCredentialsPolicy,
} from './admission-policy';
import { _dropClusterScopedNamespaces, _resolveRef } from '../object-ref';
import type { AgentSandboxExtensions } from './extensions';
import { CONTROLLER, orderFirst } from './manifest';
import {
  OperatorGrafanaDashboardOptions, OperatorPrometheusRuleOptions, OperatorServiceMonitorOptions,
  addGrafanaDashboard, addPrometheusRule, addRouterServiceMonitor, addServiceMonitor, checkMonitoring,
} from './monitoring';
import {
  DEFAULT_OPERATOR_IMAGE, OperatorDeploymentOptions, OperatorDisruptionBudgetOptions, checkDisruptionBudget, metricsService,
  operatorDeployment, operatorDisruptionBudget, resolveOperator,
} from './operator-deployment';
import { recordOperatorImage } from './operator-image';
import { coreClusterRole, extensionsClusterRole, leaderElectionRole, operatorServiceAccount } from './rbac';
import { SandboxRouterOptions, addRouter, checkRouter, routerMetricsPort, routerPodLabelsOf, routerUsername } from './router';
import { checkAnnotations } from './workload';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { defaultRouterPodLabels } from '../api/network-policy-defaults';
import { _guardChart } from '../chart-guards';

/** Props of {@link AgentSandboxSystem}. */
export interface AgentSandboxSystemProps extends OperatorDeploymentOptions {
  /** Create the Namespace. Turn off when it is managed elsewhere. @default true */
  readonly createNamespace?: boolean;
  /**
   * Annotations of the operator's ServiceAccount `agent-sandbox-controller`, such as workload
   * identity (`iam.gke.io/gcp-service-account`, `eks.amazonaws.com/role-arn`). The router's
   * ServiceAccount takes `router.serviceAccountAnnotations`.
   * @default - none
   */
  readonly serviceAccountAnnotations?: { [key: string]: string };
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
   * take `namespace` and {@link AgentSandboxSystem.routerPodLabels}. Pass an empty SandboxRouterOptions for the defaults.
   * @default - no router
   */
  readonly router?: SandboxRouterOptions;
  /** API Priority and Fairness for the controller's ServiceAccount. Pass an empty SandboxFlowControlOptions for upstream's settings. @default - none */
  readonly flowControl?: SandboxFlowControlOptions;
  /**
   * Ship a ValidatingAdmissionPolicy (with a Deny binding) that refuses Sandboxes and
   * SandboxTemplates whose pod template breaks a control of the Pod Security Standards' baseline
   * profile (host namespaces, privileged, capabilities beyond `admissionPolicyAllowedCapabilities`,
   * hostPath, hostPort, probe and lifecycle hosts, AppArmor, SELinux, /proc mount, seccomp, sysctls,
   * Windows hostProcess), sets allowPrivilegeEscalation, or sets what the restricted profile forbids
   * (volume types; runAsNonRoot false and runAsUser 0; a drop without ALL and added capabilities
   * other than NET_BIND_SERVICE, each waived by the matching entry of the
   * `agents.x-k8s.io/secure-defaults-opt-out` annotation), or carries the router's Pod labels; and the
   * unbound ClusterRole {@link AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE} whose holders may
   * waive the other rules for one object with the annotation
   * {@link AgentSandboxSystem.ALLOW_PRIVILEGED_ANNOTATION}. docs/pod-security-standards.md lists
   * every rule. Also the `agent-sandbox-ownership` policy: only the operator (and the garbage
   * collector, removing references) may set or change a Sandbox's SandboxClaim or SandboxWarmPool
   * ownerReferences and the system labels that claiming and the NetworkPolicy read, which the router
   * trusts. With `router`, also the `agent-sandbox-router` policy: the router's ServiceAccount,
   * which needs `patch` on every Sandbox, may only stamp `agents.x-k8s.io/last-activity` and resume
   * an idle-suspended Sandbox whose idlePolicy allows it (operatingMode Suspended to Running, removing
   * `agents.x-k8s.io/idle-suspended-at`); any other change it makes is refused. Needs Kubernetes
   * 1.30 or later.
   * @default true
   */
  readonly admissionPolicy?: boolean;
  /**
   * Capabilities the admission policy lets a container add, upper case without `CAP_`.
   * @default - the container runtime's default set: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT
   */
  readonly admissionPolicyAllowedCapabilities?: string[];
  /**
   * Ship a second ValidatingAdmissionPolicy (`agent-sandbox-credentials`, with a Deny binding) that
   * limits the credentials a Sandbox or SandboxTemplate Pod may name, which otherwise are any
   * ServiceAccount and Secret of the namespace: `serviceAccountName` must be `default` or one of
   * `credentialsPolicyServiceAccounts`; `automountServiceAccountToken: true` and projected
   * `serviceAccountToken` sources are refused unless `credentialsPolicyServiceAccountTokens`; secret
   * volumes, projected secret sources, CSI `nodePublishSecretRef`, `env[].valueFrom.secretKeyRef`
   * and `envFrom[].secretRef` may name only `credentialsPolicySecrets`. A user granted the unbound
   * ClusterRole {@link AgentSandboxSystem.ALLOW_CREDENTIALS_CLUSTER_ROLE} waives it for one object
   * with the annotation {@link AgentSandboxSystem.ALLOW_CREDENTIALS_ANNOTATION}: "true". Needs
   * Kubernetes 1.30 or later.
   * @default false
   */
  readonly credentialsPolicy?: boolean;
  /** ServiceAccounts the credentials policy lets a pod template name, besides `default`. @default - none */
  readonly credentialsPolicyServiceAccounts?: string[];
  /** Secrets the credentials policy lets a pod template read. @default - none */
  readonly credentialsPolicySecrets?: string[];
  /** Let pod templates ask for a service-account token despite the credentials policy. @default false */
  readonly credentialsPolicyServiceAccountTokens?: boolean;
  /**
   * Include the CRDs. Turn off when they are applied separately (a CRD-only release, or a GitOps
   * stage that runs first); {@link SandboxCrds} on its own gives them.
   * @default true
   */
  readonly crds?: boolean;
  /** A PodDisruptionBudget for the operator. Pass an empty OperatorDisruptionBudgetOptions for maxUnavailable 1. @default - none */
  readonly podDisruptionBudget?: OperatorDisruptionBudgetOptions;
  /**
   * Prometheus Operator ServiceMonitors: `agent-sandbox-controller` for the operator's metrics and,
   * with `router`, `sandbox-router` for the router's (port `metrics` of its Service). Pass an empty
   * OperatorServiceMonitorOptions for the defaults.
   * @default - none
   */
  readonly serviceMonitor?: OperatorServiceMonitorOptions;
  /** Prometheus Operator alerts on claims, warm pools and reconcile errors. Pass an empty OperatorPrometheusRuleOptions for the defaults. @default - none */
  readonly prometheusRule?: OperatorPrometheusRuleOptions;
  /** A Grafana dashboard as a ConfigMap labelled for the Grafana sidecar. Pass an empty OperatorGrafanaDashboardOptions for the defaults. @default - none */
  readonly grafanaDashboard?: OperatorGrafanaDashboardOptions;
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
  /** The operator image used when `image` is not given: ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator:v<this library's version>. */
  public static readonly DEFAULT_IMAGE = DEFAULT_OPERATOR_IMAGE;
  /** The annotation (value `"true"`) that asks the admission policy to waive its host-access rules for one object. */
  public static readonly ALLOW_PRIVILEGED_ANNOTATION = ALLOW_PRIVILEGED_ANNOTATION;
  /** The RBAC verb on `sandboxes` or `sandboxtemplates` a user needs for that annotation to count. */
  public static readonly ALLOW_PRIVILEGED_VERB = ALLOW_PRIVILEGED_VERB;
  /** The ClusterRole granting that verb; shipped unbound: bind it per namespace to whom you trust. */
  public static readonly ALLOW_PRIVILEGED_CLUSTER_ROLE = ALLOW_PRIVILEGED_CLUSTER_ROLE;
  /** The annotation (value `"true"`) that asks the credentials policy to waive its rules for one object. */
  public static readonly ALLOW_CREDENTIALS_ANNOTATION = ALLOW_CREDENTIALS_ANNOTATION;
  /** The RBAC verb on `sandboxes` or `sandboxtemplates` a user needs for that annotation to count. */
  public static readonly ALLOW_CREDENTIALS_VERB = ALLOW_CREDENTIALS_VERB;
  /** The ClusterRole granting that verb, shipped unbound with the credentials policy. */
  public static readonly ALLOW_CREDENTIALS_CLUSTER_ROLE = ALLOW_CREDENTIALS_CLUSTER_ROLE;

  /** The namespace everything namespaced is installed into. */
  public readonly namespace: string;
  /**
   * The operator image the install runs, with `@sha256:...` when `imageDigest` pins it. A
   * SandboxTemplate's `runtime` in the same App follows it unless `runtime.image` is set; pass it as
   * `runtime.image` to a template synthesized in another App.
   */
  public readonly image: string;
  /** The operator's ServiceAccount name. */
  public readonly serviceAccountName: string = CONTROLLER;
  /** The CRDs, unless `crds` is false. */
  public readonly crds?: SandboxCrds;
  /** The operator Deployment (escape hatch). */
  public readonly deployment: ApiObject;
  /** The router Deployment, when `router` is set. */
  public readonly routerDeployment?: ApiObject;
  /** Labels of the router Pods, when `router` is set (they run in {@link namespace}). */
  public readonly routerPodLabels?: { [key: string]: string };
  /** API Priority and Fairness objects, when `flowControl` is set. */
  public readonly flowControl?: SandboxFlowControl;
  /** The ValidatingAdmissionPolicy, unless `admissionPolicy` is false (escape hatch). */
  public readonly admissionPolicy?: ApiObject;
  /** The credentials ValidatingAdmissionPolicy, when `credentialsPolicy` is true (escape hatch). */
  public readonly credentialsPolicy?: ApiObject;

  public constructor(scope: Construct, id: string, props: AgentSandboxSystemProps = {}) {
    super(scope, id);
    _guardChart(this);
    const extensions = props.extensions ?? true;
    const errors = new ErrorList();
    for (const flag of ['createNamespace', 'extensions'] as const) {
      if (props[flag] !== undefined && typeof props[flag] !== 'boolean') errors.check(flag, `must be true or false, got ${JSON.stringify(props[flag])}`);
    }
    this.routerPodLabels = props.router && routerPodLabelsOf(props.router);
    const operator = resolveOperator(errors, props, extensions, this.routerPodLabels);
    if (props.router) checkRouter(errors, props.router, operator.namespace);
    checkAnnotations(errors, 'serviceAccountAnnotations', props.serviceAccountAnnotations);
    const admissionPolicy = props.admissionPolicy ?? true;
    if (typeof admissionPolicy !== 'boolean') errors.check('admissionPolicy', `${JSON.stringify(admissionPolicy)} must be true or false`);
    checkAllowedCapabilities(errors, admissionPolicy !== false, props.admissionPolicyAllowedCapabilities);
    checkCredentialsPolicy(errors, props);
    if (props.podDisruptionBudget) checkDisruptionBudget(errors, props.podDisruptionBudget, operator.replicas);
    checkMonitoring(errors, props.serviceMonitor, props.prometheusRule, props.grafanaDashboard);
    errors.throwIfAny(`AgentSandboxSystem ${this.node.path}`);
    this.namespace = operator.namespace;
    this.image = operator.image;
    recordOperatorImage(this, { image: operator.image, imagePullPolicy: operator.imagePullPolicy });

    const first: ApiObject[] = [];
    if (props.createNamespace ?? true) {
      first.push(new ApiObject(this, 'Namespace', {
        apiVersion: 'v1',
        kind: 'Namespace',
        // The operator and router satisfy the restricted Pod Security Standard; enforce it.
        metadata: { name: this.namespace, labels: { ...PART_OF_LABEL, 'pod-security.kubernetes.io/enforce': 'restricted' } },
      }));
    }
    if (props.crds ?? true) {
      this.crds = new SandboxCrds(this, 'Crds', { extensions });
      first.push(...this.crds.apiObjects);
    }

    operatorServiceAccount(this, this.namespace, props.serviceAccountAnnotations);
    coreClusterRole(this, this.namespace);
    if (extensions) extensionsClusterRole(this, this.namespace);
    leaderElectionRole(this, operator.leaderElectionNamespace ?? this.namespace, this.namespace);
    this.deployment = operatorDeployment(this, operator);
    metricsService(this, operator);
    if (props.podDisruptionBudget) operatorDisruptionBudget(this, operator, props.podDisruptionBudget);
    if (props.serviceMonitor) addServiceMonitor(this, this.namespace, props.serviceMonitor);
    if (props.prometheusRule) addPrometheusRule(this, this.namespace, props.prometheusRule);
    if (props.grafanaDashboard) addGrafanaDashboard(this, this.namespace, props.grafanaDashboard);

    if (props.router) {
      this.routerDeployment = addRouter(this, this.namespace, props.router, {
        image: operator.image,
        imagePullSecrets: operator.imagePullSecrets.map((r, i) => ({ name: _resolveRef(`imagePullSecrets[${i}]`, r, REFERENCED_KINDS.secret, this.namespace)! })),
        nodeSelector: operator.nodeSelector,
        tolerations: operator.tolerations,
        priorityClass: operator.priorityClass,
      });
      if (props.serviceMonitor && routerMetricsPort(props.router) !== undefined) {
        addRouterServiceMonitor(this, this.namespace, props.serviceMonitor, { ...this.routerPodLabels!, ...PART_OF_LABEL });
      }
    }
    if (props.flowControl) {
      this.flowControl = new SandboxFlowControl(this, 'FlowControl', {
        ...props.flowControl, serviceAccountName: CONTROLLER, serviceAccountNamespace: this.namespace,
      });
    }
    if (admissionPolicy === true) {
      this.admissionPolicy = addAdmissionPolicy(this, {
        namespace: this.namespace,
        routerPodLabels: this.routerPodLabels ?? props.controller?.routerPodLabels ?? defaultRouterPodLabels(),
        allowedCapabilities: props.admissionPolicyAllowedCapabilities ?? DEFAULT_ALLOWED_CAPABILITIES,
      });
      if (props.router) addRouterPolicy(this, routerUsername(this.namespace));
    }
    if (props.credentialsPolicy === true) {
      this.credentialsPolicy = addCredentialsPolicy(this, {
        namespace: this.namespace,
        serviceAccounts: props.credentialsPolicyServiceAccounts ?? [],
        secrets: props.credentialsPolicySecrets ?? [],
        serviceAccountTokens: props.credentialsPolicyServiceAccountTokens ?? false,
      });
    }
    orderFirst(this, first);
    _dropClusterScopedNamespaces(this);
  }
}
