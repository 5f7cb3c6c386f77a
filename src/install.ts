import { ApiObject, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import {
  ControllerFlagValue, controllerFlag, flagPropertyName, portOfBindAddress,
  renderControllerArgs, validateControllerFlagValues,
} from './api/controller-flags';
import { PART_OF_LABEL } from './api/crd-manifests';
import { CORE_GROUP, EXTENSIONS_GROUP, KINDS } from './api/groups';
import { DEFAULT_SYSTEM_NAMESPACE, ROUTER_APP_LABEL } from './api/labels';
import { ErrorList, checkDns1035Label, checkDns1123Label, checkQuantity } from './api/validation';
import { ContainerResources, ImagePullPolicy, dropUndefined } from './container';
import { SandboxCrds } from './crds';
import { SandboxFlowControl, SandboxFlowControlOptions } from './flow-control';

/** Log levels of the operator (`--log-level`). */
export enum ControllerLogLevel {
  DEBUG = 'debug',
  INFO = 'info',
  WARN = 'warn',
  ERROR = 'error',
}

/**
 * The operator's command-line flags as typed options; each field is the camelCase of the flag
 * (`sandboxConcurrentWorkers` → `--sandbox-concurrent-workers`). Only values that differ from the
 * operator's defaults are rendered. `--extensions` follows `AgentSandboxSystemProps.extensions`.
 */
export interface ControllerOptions {
  /** `--metrics-bind-address`; its port becomes the container and metrics Service port. @default ":8080" */
  readonly metricsBindAddress?: string;
  /** `--health-probe-bind-address`; its port serves the liveness and readiness probes. @default ":8081" */
  readonly healthProbeBindAddress?: string;
  /** `--leader-elect`: only the Lease holder reconciles. Required when `replicas` > 1. @default true */
  readonly leaderElect?: boolean;
  /** `--leader-election-namespace`; the leader-election Role is created there. @default - the install namespace */
  readonly leaderElectionNamespace?: string;
  /** `--cluster-domain`, used in `status.serviceFQDN`. @default "cluster.local" */
  readonly clusterDomain?: string;
  /** `--kube-api-qps`; negative disables client-side throttling (API Priority and Fairness still applies). @default -1 */
  readonly kubeApiQps?: number;
  /** `--kube-api-burst`, > 0; ignored while `kubeApiQps` is negative. @default 10 */
  readonly kubeApiBurst?: number;
  /**
   * `--kube-api-max-in-flight` (ours, not upstream's): most API requests in flight at once; the rest
   * wait in the operator, the writes a waiting claim needs first, pool refill and Events last, so a
   * refill burst cannot queue ahead of claims in the API server. 0 sends everything at once.
   * @default 32
   */
  readonly kubeApiMaxInFlight?: number;
  /** `--sandbox-concurrent-workers`, > 0. @default 100 */
  readonly sandboxConcurrentWorkers?: number;
  /** `--sandbox-claim-concurrent-workers`, > 0. @default 50 */
  readonly sandboxClaimConcurrentWorkers?: number;
  /** `--sandbox-warm-pool-concurrent-workers`, > 0. @default 1 */
  readonly sandboxWarmPoolConcurrentWorkers?: number;
  /** `--sandbox-template-concurrent-workers`, > 0. @default 1 */
  readonly sandboxTemplateConcurrentWorkers?: number;
  /**
   * `--sandbox-progress-status-window` (ours, not upstream's): how long a Sandbox's not-yet-Ready
   * progress status may wait to be written. A Sandbox whose Pod is Ready within the window gets one
   * status write instead of three; readiness, errors and suspension are always written at once.
   * `Duration.seconds(0)` writes every change at once.
   * @default Duration.seconds(1)
   */
  readonly sandboxProgressStatusWindow?: Duration;
  /** `--sandbox-warm-pool-max-batch-size`: most creates or deletes per pool pass, > 0. @default 300 */
  readonly sandboxWarmPoolMaxBatchSize?: number;
  /**
   * `--sandbox-warm-pool-replenish-delay`: wait before replacing claimed members. Under sustained
   * claim arrivals a delay can drain the pool; leave it at zero unless refill bursts hurt.
   * @default Duration.seconds(0)
   */
  readonly sandboxWarmPoolReplenishDelay?: Duration;
  /** `--sandbox-warm-pool-max-refill-rate`: sandboxes per second per pool, finite ≥ 0; 0 = unpaced. @default 0 */
  readonly sandboxWarmPoolMaxRefillRate?: number;
  /** `--sandbox-warm-pool-readiness-grace-period`, > 0. @default Duration.minutes(5) */
  readonly sandboxWarmPoolReadinessGracePeriod?: Duration;
  /** `--sandbox-warm-pool-unschedulable-recheck-interval`, > 0. @default Duration.minutes(1) */
  readonly sandboxWarmPoolUnschedulableRecheckInterval?: Duration;
  /** `--enable-warm-pool-eviction`: warm pods are marked safe to evict for the cluster autoscaler. @default true */
  readonly enableWarmPoolEviction?: boolean;
  /** `--cache-label-selectors`: cache only Pods and Services that carry the sandbox tracking label. @default false */
  readonly cacheLabelSelectors?: boolean;
  /** `--disable-claim-events`. @default false */
  readonly disableClaimEvents?: boolean;
  /** `--disable-claim-observability-annotations`. @default false */
  readonly disableClaimObservabilityAnnotations?: boolean;
  /** `--log-level`. @default ControllerLogLevel.INFO */
  readonly logLevel?: ControllerLogLevel;
  /** `--kubeconfig`; in a cluster the pod's service account is used. @default - in-cluster config */
  readonly kubeconfig?: string;
}

/** How the operator Deployment runs; shared by {@link AgentSandboxSystem} and {@link AgentSandboxExtensions}. */
export interface OperatorDeploymentOptions {
  /** Namespace of the operator, its ServiceAccount and Services. @default "agent-sandbox-system" */
  readonly namespace?: string;
  /**
   * Operator image; its entrypoint takes the command (`controller`, `router`) as first argument.
   * @default AgentSandboxSystem.DEFAULT_IMAGE
   */
  readonly image?: string;
  /** Pin the image by digest (`sha256:<64 hex>`); rendered as `image@sha256:...`. @default - not pinned */
  readonly imageDigest?: string;
  /** @default - Kubernetes' default for the image reference */
  readonly imagePullPolicy?: ImagePullPolicy;
  /** Operator replicas; more than 1 needs leader election (the default). @default 1 */
  readonly replicas?: number;
  /**
   * Operator resources. No CPU limit by default: throttling a controller shows up as claim latency.
   * @default - requests 100m CPU and 128Mi memory, limit 1Gi memory
   */
  readonly resources?: ContainerResources;
  /** Command-line flags of the operator. @default - the operator's defaults */
  readonly controller?: ControllerOptions;
}

/** The sandbox router: the HTTP/WebSocket data plane in front of sandbox pods. */
export interface SandboxRouterOptions {
  /** Router image. @default - the operator image, run with the `router` command */
  readonly image?: string;
  /** Pin the router image by digest (`sha256:<64 hex>`). @default - not pinned */
  readonly imageDigest?: string;
  /** @default 2 */
  readonly replicas?: number;
  /** Extra router arguments after the `router` command. @default - none */
  readonly args?: string[];
  /**
   * Service name. Upstream's SDKs port-forward to `svc/sandbox-router-svc` in the install namespace.
   * @default "sandbox-router-svc"
   */
  readonly serviceName?: string;
  /** @default - requests 100m CPU and 64Mi memory, limit 256Mi memory */
  readonly resources?: ContainerResources;
}

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
   * Deploy the sandbox router (pods labelled `app: sandbox-router`, which the default managed
   * NetworkPolicy admits from the `agent-sandbox-system` namespace; in another `namespace`, admit
   * it with `SandboxPeer.router({ namespace })` or sandboxes answer 504). Pass `{}` for the defaults.
   * @default - no router
   */
  readonly router?: SandboxRouterOptions;
  /** API Priority and Fairness for the controller's ServiceAccount. Pass `{}` for upstream's settings. @default - none */
  readonly flowControl?: SandboxFlowControlOptions;
}

const CONTROLLER = 'agent-sandbox-controller';
const CONTROLLER_LABELS = { app: CONTROLLER, ...PART_OF_LABEL };
const ROUTER_LABELS = { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value, ...PART_OF_LABEL };
const ALL_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
// Finalizers `update` lets the controller set blockOwnerDeletion on children it owns
// (OwnerReferencesPermissionEnforcement); no controller adds finalizers.
const FINALIZERS = ['update'];
const STATUS = ['get', 'patch', 'update'];
const sb = KINDS.sandbox.plural;
const POD_SECURITY = { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } };
const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } };

/**
 * Core controller: upstream's `agent-sandbox-controller` ClusterRole minus what the conversion webhook
 * needed (CRD patching, Secrets) and leases (namespaced Role below), with verbs narrowed to the writes
 * the Sandbox controller makes (upstream-behavior §1).
 */
const CORE_RULES = [
  // The pod spec is never updated after creation; metadata and adoption go by patch.
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'watch'] },
  // Adopting an unowned Service is a full update.
  { apiGroups: [''], resources: ['services'], verbs: ALL_VERBS },
  // PVCs are never deleted by the controller; garbage collection removes them with the Sandbox.
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create', 'get', 'list', 'patch', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  // No create: only the extension controllers create Sandboxes. Delete is for shutdownPolicy Delete.
  { apiGroups: [CORE_GROUP], resources: [sb], verbs: ['delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { apiGroups: [CORE_GROUP], resources: [`${sb}/status`], verbs: STATUS },
  { apiGroups: [CORE_GROUP], resources: [`${sb}/finalizers`], verbs: FINALIZERS },
];

/** What the Claim, Template and WarmPool controllers need beyond the core role (upstream-behavior §2-§4). */
const EXTENSION_RULES = [
  { apiGroups: [CORE_GROUP], resources: [sb], verbs: ['create'] },
  // Claims are created by users; the controller deletes them for lifecycle Delete policies.
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.claim.plural], verbs: ['delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.template.plural], verbs: ['get', 'list', 'patch', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [KINDS.warmPool.plural], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [EXTENSIONS_GROUP], resources: [`${KINDS.claim.plural}/status`, `${KINDS.warmPool.plural}/status`], verbs: STATUS },
  {
    apiGroups: [EXTENSIONS_GROUP],
    resources: [KINDS.claim.plural, KINDS.template.plural, KINDS.warmPool.plural].map((p) => `${p}/finalizers`),
    verbs: FINALIZERS,
  },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ALL_VERBS },
];

// The Lease lock reads, creates and updates the Lease; standbys also watch it, so they take over the
// moment a leader releases it (or its lease expires) instead of polling. The recorder writes events.
const LEADER_ELECTION_RULES = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

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
  public static readonly DEFAULT_IMAGE = 'ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator:v0.1.0';

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
  /** API Priority and Fairness objects, when `flowControl` is set. */
  public readonly flowControl?: SandboxFlowControl;

  public constructor(scope: Construct, id: string, props: AgentSandboxSystemProps = {}) {
    super(scope, id);
    const extensions = props.extensions ?? true;
    const errors = new ErrorList();
    const operator = resolveOperator(errors, props, extensions);
    if (props.router) checkRouter(errors, props.router);
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

    new ApiObject(this, 'ServiceAccount', {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: CONTROLLER, namespace: this.namespace, labels: { ...CONTROLLER_LABELS } },
    });
    clusterRole(this, CONTROLLER, CORE_RULES, this.namespace);
    if (extensions) clusterRole(this, `${CONTROLLER}-extensions`, EXTENSION_RULES, this.namespace);
    const electionNamespace = operator.leaderElectionNamespace ?? this.namespace;
    namespaced(this, 'LeaderElectionRole', 'rbac.authorization.k8s.io/v1', 'Role', `${CONTROLLER}-leader-election`, electionNamespace, { rules: LEADER_ELECTION_RULES });
    namespaced(this, 'LeaderElectionRoleBinding', 'rbac.authorization.k8s.io/v1', 'RoleBinding', `${CONTROLLER}-leader-election`, electionNamespace,
      bindingBody('Role', `${CONTROLLER}-leader-election`, this.namespace));
    this.deployment = operatorDeployment(this, operator);
    namespaced(this, 'MetricsService', 'v1', 'Service', `${CONTROLLER}-metrics`, this.namespace, {
      spec: {
        selector: { app: CONTROLLER },
        ports: [{ name: 'metrics', port: operator.metricsPort, targetPort: 'metrics', protocol: 'TCP' }],
      },
    });

    if (props.router) this.routerDeployment = this.addRouter(props.router, operator.image);
    if (props.flowControl) {
      this.flowControl = new SandboxFlowControl(this, 'FlowControl', {
        ...props.flowControl, serviceAccountName: CONTROLLER, serviceAccountNamespace: this.namespace,
      });
    }
    orderFirst(this, first);
  }

  private addRouter(router: SandboxRouterOptions, operatorImage: string): ApiObject {
    const image = router.image === undefined ? operatorImage : imageRef(router.image, router.imageDigest);
    const deployment = namespaced(this, 'RouterDeployment', 'apps/v1', 'Deployment', 'sandbox-router', this.namespace, {
      spec: {
        replicas: router.replicas ?? 2,
        selector: { matchLabels: { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value } },
        template: {
          metadata: { labels: { ...ROUTER_LABELS } },
          spec: {
            // The router proxies by pod IP or DNS and needs no API access by default.
            automountServiceAccountToken: false,
            securityContext: POD_SECURITY,
            containers: [{
              name: 'router',
              image,
              args: ['router', ...(router.args ?? [])],
              ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
              livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 10, periodSeconds: 20 },
              resources: resourcesOf(router.resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } }),
              securityContext: CONTAINER_SECURITY,
            }],
          },
        },
      },
    }, ROUTER_LABELS);
    namespaced(this, 'RouterService', 'v1', 'Service', router.serviceName ?? 'sandbox-router-svc', this.namespace, {
      spec: {
        selector: { [ROUTER_APP_LABEL.key]: ROUTER_APP_LABEL.value },
        ports: [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }],
      },
    }, ROUTER_LABELS);
    return deployment;
  }
}

/**
 * Only the extension layer, applied on top of a core-only install (upstream's `extensions.yaml`):
 * the SandboxTemplate, SandboxWarmPool and SandboxClaim CRDs, their ClusterRole and binding, and the
 * operator Deployment again, now with `--extensions=true`. Give it the same options as the core install.
 */
export class AgentSandboxExtensions extends Construct {
  /** The extension CRDs. */
  public readonly crds: SandboxCrds;
  /** The operator Deployment with extensions enabled. */
  public readonly deployment: ApiObject;

  public constructor(scope: Construct, id: string, props: OperatorDeploymentOptions = {}) {
    super(scope, id);
    const errors = new ErrorList();
    const operator = resolveOperator(errors, props, true);
    errors.throwIfAny(`AgentSandboxExtensions ${this.node.path}`);
    this.crds = new SandboxCrds(this, 'Crds', { core: false, extensions: true });
    clusterRole(this, `${CONTROLLER}-extensions`, EXTENSION_RULES, operator.namespace);
    this.deployment = operatorDeployment(this, operator);
    orderFirst(this, this.crds.apiObjects);
  }
}

/** Check the options and turn them into Deployment settings; errors go to `errors`. */
function resolveOperator(errors: ErrorList, props: OperatorDeploymentOptions, extensions: boolean) {
  const namespace = props.namespace ?? DEFAULT_SYSTEM_NAMESPACE;
  errors.check('namespace', checkDns1123Label(namespace));
  checkImage(errors, '', props.image, props.imageDigest);
  const replicas = props.replicas ?? 1;
  errors.check('replicas', Number.isInteger(replicas) && replicas >= 0 ? undefined : `${replicas} must be a whole number of at least 0`);
  checkResources(errors, 'resources', props.resources);

  const values: { [flag: string]: ControllerFlagValue } = { extensions };
  for (const [field, value] of Object.entries(props.controller ?? {})) {
    const flag = field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    if (value === undefined) continue;
    if (!controllerFlag(flag) || flag === 'extensions') {
      errors.check(`controller.${field}`, flag === 'extensions'
        ? 'is set by the install; use the extensions prop of AgentSandboxSystem or AgentSandboxExtensions'
        : 'is not a ControllerOptions field; check the spelling against the ControllerOptions docs');
      continue;
    }
    values[flag] = value instanceof Duration ? value.toMilliseconds({ integral: false }) : value as ControllerFlagValue;
  }
  const problems = validateControllerFlagValues(values);
  for (const p of problems) errors.check(`controller.${flagPropertyName(p.flag)}`, p.message);

  const leaderElect = values['leader-elect'] !== false;
  if (replicas > 1 && !leaderElect) {
    errors.check('replicas', `${replicas} replicas would all reconcile at once without leader election; set replicas to 1 or controller.leaderElect to true`);
  }
  const valid = problems.length === 0;
  return {
    namespace,
    image: imageRef(props.image ?? AgentSandboxSystem.DEFAULT_IMAGE, props.imageDigest),
    imagePullPolicy: props.imagePullPolicy,
    replicas,
    leaderElect,
    leaderElectionNamespace: (values['leader-election-namespace'] as string | undefined) || undefined,
    args: valid ? renderControllerArgs(values) : [],
    metricsPort: portOfBindAddress(String(values['metrics-bind-address'] ?? ':8080')) ?? 8080,
    healthPort: portOfBindAddress(String(values['health-probe-bind-address'] ?? ':8081')) ?? 8081,
    resources: resourcesOf(props.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '1Gi' } }),
  };
}

/** The operator Deployment. */
function operatorDeployment(scope: Construct, op: ReturnType<typeof resolveOperator>): ApiObject {
  return namespaced(scope, 'Deployment', 'apps/v1', 'Deployment', CONTROLLER, op.namespace, {
    spec: {
      replicas: op.replicas,
      selector: { matchLabels: { app: CONTROLLER } },
      // With leader election the new pod waits for the Lease, which the old one releases on shutdown:
      // surge first for a near-instant handover. Without it two pods must never overlap.
      strategy: op.leaderElect
        ? { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } }
        : { type: 'Recreate' },
      template: {
        metadata: { labels: { ...CONTROLLER_LABELS } },
        spec: {
          serviceAccountName: CONTROLLER,
          // The operator talks to the API server with its service-account token.
          automountServiceAccountToken: true,
          securityContext: POD_SECURITY,
          containers: [dropUndefined({
            name: 'controller',
            image: op.image,
            imagePullPolicy: op.imagePullPolicy,
            args: ['controller', ...op.args],
            ports: [
              { name: 'metrics', containerPort: op.metricsPort, protocol: 'TCP' },
              { name: 'health', containerPort: op.healthPort, protocol: 'TCP' },
            ],
            livenessProbe: { httpGet: { path: '/healthz', port: 'health' }, initialDelaySeconds: 15, periodSeconds: 20 },
            readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, initialDelaySeconds: 5, periodSeconds: 10 },
            resources: op.resources,
            securityContext: CONTAINER_SECURITY,
            // A read-only root filesystem still needs somewhere for temporary files.
            volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
          })],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  });
}

/** A ClusterRole and its binding to the operator's ServiceAccount. */
function clusterRole(scope: Construct, name: string, rules: object[], namespace: string): void {
  const api = 'rbac.authorization.k8s.io/v1';
  new ApiObject(scope, `${name}-cluster-role`, { apiVersion: api, kind: 'ClusterRole', metadata: { name, labels: { ...CONTROLLER_LABELS } }, rules });
  new ApiObject(scope, `${name}-cluster-role-binding`, {
    apiVersion: api, kind: 'ClusterRoleBinding', metadata: { name, labels: { ...CONTROLLER_LABELS } }, ...bindingBody('ClusterRole', name, namespace),
  });
}

/** Make every other ApiObject under `scope` depend on `first`, so cdk8s emits `first` at the top. */
function orderFirst(scope: Construct, first: ApiObject[]): void {
  first.forEach((obj, i) => { if (i > 0) obj.addDependency(...first.slice(0, i)); });
  for (const child of scope.node.findAll()) {
    if (child instanceof ApiObject && !first.includes(child)) child.addDependency(...first);
  }
}

function bindingBody(roleKind: string, roleName: string, namespace: string): object {
  return {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
    subjects: [{ kind: 'ServiceAccount', name: CONTROLLER, namespace }],
  };
}

function namespaced(scope: Construct, id: string, apiVersion: string, kind: string, name: string, namespace: string,
  body: object, labels: { [key: string]: string } = CONTROLLER_LABELS): ApiObject {
  return new ApiObject(scope, id, { apiVersion, kind, metadata: { name, namespace, labels: { ...labels } }, ...body });
}

function imageRef(image: string, digest: string | undefined): string {
  return digest ? `${image}@${digest}` : image;
}

function resourcesOf(resources: ContainerResources | undefined, fallback: ContainerResources): { [key: string]: unknown } {
  return dropUndefined({ requests: (resources ?? fallback).requests, limits: (resources ?? fallback).limits });
}

function checkImage(errors: ErrorList, prefix: string, image: string | undefined, digest: string | undefined): void {
  if (image !== undefined && (image === '' || /\s/.test(image))) {
    errors.check(`${prefix}image`, `"${image}" must be a non-empty image reference without spaces, e.g. "registry.example.com/agent-sandbox-operator:v0.1.0"`);
  }
  if (digest !== undefined) {
    errors.check(`${prefix}imageDigest`, /^sha256:[a-f0-9]{64}$/.test(digest)
      ? undefined : `"${digest}" must be "sha256:" followed by 64 lowercase hex digits, as \`crane digest\` or \`docker buildx imagetools inspect\` print it`);
    if (image?.includes('@')) {
      errors.check(`${prefix}image`, `"${image}" already pins a digest; drop the "@..." part or the ${prefix}imageDigest prop`);
    }
  }
}

function checkResources(errors: ErrorList, field: string, resources: ContainerResources | undefined): void {
  for (const kind of ['requests', 'limits'] as const) {
    for (const [resource, quantity] of Object.entries(resources?.[kind] ?? {})) {
      errors.check(`${field}.${kind}.${resource}`, checkQuantity(quantity));
    }
  }
}

function checkRouter(errors: ErrorList, router: SandboxRouterOptions): void {
  checkImage(errors, 'router.', router.image, router.imageDigest);
  if (router.imageDigest !== undefined && router.image === undefined) {
    errors.check('router.imageDigest', 'pins router.image, which is not set; set router.image too, or pin the operator image with imageDigest');
  }
  const replicas = router.replicas ?? 2;
  errors.check('router.replicas', Number.isInteger(replicas) && replicas >= 0 ? undefined : `${replicas} must be a whole number of at least 0`);
  if (router.serviceName !== undefined) errors.check('router.serviceName', checkDns1035Label(router.serviceName));
  checkResources(errors, 'router.resources', router.resources);
}
