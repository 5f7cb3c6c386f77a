import { ApiObject, Duration } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import type { AgentSandboxSystem } from './system';
import {
  ControllerFlagValue, controllerFlag, flagPropertyName, formatLabelList, portOfBindAddress,
  renderControllerArgs, validateControllerFlagValues,
} from '../api/controller-flags';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/labels';
import { defaultRouterPodLabels } from '../api/network-policy-defaults';
import { REFERENCED_KINDS } from '../api/object-kinds';
import { propName } from '../api/spelling';
import { ErrorList, checkDns1123Label } from '../api/validation';
import { SandboxToleration } from '../blueprint';
import { ContainerResources, ImagePullPolicy, dropUndefined } from '../container';
import { checkLabels } from '../network-policy/checks';
import { ObjectRef, _checkRef, _resolveRef } from '../object-ref';
import { SchedulingAffinity, TopologySpreadConstraint } from '../scheduling';
import { LIBRARY_VERSION } from '../version';
import { ControllerOptions } from './controller-options';
import type { AgentSandboxExtensions } from './extensions';
import { CONTROLLER, CONTROLLER_LABELS, namespaced } from './manifest';
import {
  CONTAINER_SECURITY, InstallEnvOptions, POD_SECURITY, checkAnnotations, checkEnv, checkImage, checkPlacement, checkResources, envOf,
  imageRef, placementOf, resourcesOf,
} from './workload';

/** Where the release workflow (.github/workflows/release.yml) pushes the operator image. */
export const OPERATOR_IMAGE_REPOSITORY = 'ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator';

/**
 * The operator image of this library's release (`AgentSandboxSystem.DEFAULT_IMAGE`): tagged with the
 * release's git tag, `v` and the package version, which the release workflow pushes with the packages.
 */
export const DEFAULT_OPERATOR_IMAGE = `${OPERATOR_IMAGE_REPOSITORY}:v${LIBRARY_VERSION}`;

/** The operator Deployment's selector, which spread constraints count by default. */
const OPERATOR_SELECTOR = { app: CONTROLLER };

/** How the operator Deployment runs; shared by {@link AgentSandboxSystem} and {@link AgentSandboxExtensions}. */
export interface OperatorDeploymentOptions extends InstallEnvOptions {
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
  /**
   * Arguments appended after the typed flags, for flags of a newer operator than this library
   * knows. Flags that {@link ControllerOptions} covers must be set there.
   * @default - none
   */
  readonly extraArgs?: string[];
  /**
   * Secrets with registry credentials for the operator image: constructs that define them (a
   * cdk8s-plus `Secret`, a `KubeSecret`) or `ObjectRef`s (by name with `ObjectRef.fromName`); the
   * router Pods get them too.
   * @default - none
   */
  readonly imagePullSecrets?: Array<ObjectRef | IConstruct>;
  /**
   * Node labels the operator Pods must land on; the router Pods too unless `router.nodeSelector`
   * is given.
   * @default - none
   */
  readonly nodeSelector?: { [key: string]: string };
  /** Tolerations of the operator Pods; the router Pods' too unless `router.tolerations` is given. @default - none */
  readonly tolerations?: SandboxToleration[];
  /** Affinity of the operator Pods, such as anti-affinity to spread replicas over nodes. Not shared with the router. @default - none */
  readonly affinity?: SchedulingAffinity;
  /**
   * Spread the operator Pods over zones or nodes. A constraint without `matchLabels` counts the
   * operator's own Pods (`app: agent-sandbox-controller`). Not shared with the router.
   * @default - none
   */
  readonly topologySpreadConstraints?: TopologySpreadConstraint[];
  /**
   * PriorityClass of the operator Pods (`priorityClassName`): a construct that defines one (a
   * `KubePriorityClass`), or an `ObjectRef` such as `ObjectRef.fromName('system-cluster-critical')`,
   * so the operator is not preempted by, or left pending behind, the sandboxes it schedules. The
   * router Pods get it too unless `router.priorityClass` is given.
   * @default - the cluster's default priority
   */
  readonly priorityClass?: ObjectRef | IConstruct;
  /** Extra annotations of the operator Pods. @default - none */
  readonly podAnnotations?: { [key: string]: string };
  /** Extra labels of the operator Pods; `app` is the Deployment's selector and cannot be changed. @default - none */
  readonly podLabels?: { [key: string]: string };
}

/** The operator Deployment as rendered: validated options with defaults filled in. */
export type OperatorSettings = ReturnType<typeof resolveOperator>;

/**
 * Check the options and turn them into Deployment settings; errors go to `errors`. With
 * `routerPodLabels`, the bundle deploys the router beside the operator: the operator is told where
 * (`--router-namespace`, `--router-pod-labels`), so its default NetworkPolicy admits exactly those Pods.
 */
export function resolveOperator(
  errors: ErrorList, props: OperatorDeploymentOptions, extensions: boolean, routerPodLabels?: { readonly [key: string]: string },
) {
  const namespace = props.namespace ?? DEFAULT_SYSTEM_NAMESPACE;
  errors.check('namespace', checkDns1123Label(namespace));
  checkImage(errors, '', props.image, props.imageDigest);
  if (props.imagePullPolicy !== undefined && !Object.values(ImagePullPolicy).includes(props.imagePullPolicy)) {
    errors.check('imagePullPolicy', `${JSON.stringify(props.imagePullPolicy)} is not allowed; use one of ${Object.values(ImagePullPolicy).join(', ')}`);
  }
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
    if (controllerFlag(flag)!.type === 'duration' && !(value instanceof Duration)) {
      // A bare number would otherwise pass as milliseconds: seconds or milliseconds is the caller's guess.
      errors.check(`controller.${field}`, `must be a Duration (it is ${typeof value} ${JSON.stringify(value)}); use Duration.seconds(n) or Duration.millis(n)`);
      continue;
    }
    values[flag] = value instanceof Duration ? value.toMilliseconds({ integral: false })
      : Array.isArray(value) ? value.join(',')
        : value !== null && typeof value === 'object' && !Array.isArray(value) ? formatLabelList(value) : value as ControllerFlagValue;
  }
  if (routerPodLabels) {
    for (const field of ['routerNamespace', 'routerPodLabels'] as const) {
      if (props.controller?.[field] !== undefined) {
        errors.check(`controller.${field}`, `is set by the install from where it deploys the router (the ${propName('namespace')} prop and ${propName('router.podLabels')}); remove it, or drop ${propName('router')} and deploy the router yourself`);
      }
    }
    values['router-namespace'] = namespace;
    const labels = formatLabelList(routerPodLabels);
    if (labels !== formatLabelList(defaultRouterPodLabels())) values['router-pod-labels'] = labels;
  }
  const problems = validateControllerFlagValues(values);
  for (const p of problems) errors.check(`controller.${flagPropertyName(p.flag)}`, p.message);

  const leaderElect = values['leader-elect'] !== false;
  if (replicas > 1 && !leaderElect) {
    errors.check('replicas', `${replicas} replicas would all reconcile at once without leader election; set ${propName('replicas')} to 1 or ${propName('controller.leaderElect')} to true`);
  }
  for (const [i, arg] of (props.extraArgs ?? []).entries()) {
    const flag = /^--?([a-z0-9-]+)/.exec(arg)?.[1];
    if (flag && controllerFlag(flag)) {
      errors.check(`extraArgs[${i}]`, flag === 'extensions'
        ? `"${arg}" is set by the install; use the extensions prop`
        : `"${arg}" is a flag ControllerOptions covers; set ${propName(`controller.${flagPropertyName(flag)}`)} instead, so it is validated and not given twice`);
    }
  }
  (props.imagePullSecrets ?? []).forEach((r, i) => _checkRef(errors, `imagePullSecrets[${i}]`, r, REFERENCED_KINDS.secret, namespace));
  checkPlacement(errors, '', props, OPERATOR_SELECTOR);
  checkEnv(errors, '', props, namespace);
  if (props.podLabels) {
    checkLabels(errors, 'podLabels', props.podLabels);
    if ('app' in props.podLabels) errors.check('podLabels["app"]', 'is the Deployment\'s selector (app: agent-sandbox-controller); drop it');
  }
  checkAnnotations(errors, 'podAnnotations', props.podAnnotations);
  const valid = problems.length === 0;
  return {
    namespace,
    image: imageRef(props.image ?? DEFAULT_OPERATOR_IMAGE, props.imageDigest),
    imagePullPolicy: props.imagePullPolicy,
    replicas,
    leaderElect,
    leaderElectionNamespace: (values['leader-election-namespace'] as string | undefined) || undefined,
    args: valid ? renderControllerArgs(values) : [],
    metricsPort: portOfBindAddress(String(values['metrics-bind-address'] ?? ':8080')) ?? 8080,
    healthPort: portOfBindAddress(String(values['health-probe-bind-address'] ?? ':8081')) ?? 8081,
    resources: resourcesOf(props.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '1Gi' } }),
    extraArgs: props.extraArgs ?? [],
    imagePullSecrets: props.imagePullSecrets ?? [],
    // What the router inherits unless its own props say otherwise.
    nodeSelector: props.nodeSelector,
    tolerations: props.tolerations,
    priorityClass: props.priorityClass,
    placement: () => placementOf('', props, OPERATOR_SELECTOR),
    env: () => envOf('', props, namespace),
    podAnnotations: props.podAnnotations,
    podLabels: props.podLabels,
  };
}

/** The operator Deployment. */
export function operatorDeployment(scope: Construct, op: OperatorSettings): ApiObject {
  return namespaced(scope, 'Deployment', 'apps/v1', 'Deployment', CONTROLLER, op.namespace, {
    spec: {
      replicas: op.replicas,
      selector: { matchLabels: { ...OPERATOR_SELECTOR } },
      // With leader election the new pod waits for the Lease, which the old one releases on shutdown:
      // surge first for a near-instant handover. Without it two pods must never overlap.
      strategy: op.leaderElect
        ? { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } }
        : { type: 'Recreate' },
      template: {
        metadata: dropUndefined({ labels: { ...op.podLabels, ...CONTROLLER_LABELS }, annotations: op.podAnnotations }),
        spec: dropUndefined({
          serviceAccountName: CONTROLLER,
          // The operator talks to the API server with its service-account token.
          automountServiceAccountToken: true,
          securityContext: POD_SECURITY,
          imagePullSecrets: op.imagePullSecrets.length
            ? op.imagePullSecrets.map((r, i) => ({ name: _resolveRef(`imagePullSecrets[${i}]`, r, REFERENCED_KINDS.secret, op.namespace) })) : undefined,
          ...op.placement(),
          containers: [dropUndefined({
            name: CONTROLLER,
            image: op.image,
            imagePullPolicy: op.imagePullPolicy,
            args: ['controller', ...op.args, ...op.extraArgs],
            ...op.env(),
            ports: [
              { name: 'metrics', containerPort: op.metricsPort, protocol: 'TCP' },
              { name: 'healthz', containerPort: op.healthPort, protocol: 'TCP' },
            ],
            livenessProbe: { httpGet: { path: '/healthz', port: 'healthz' }, initialDelaySeconds: 15, periodSeconds: 20 },
            readinessProbe: { httpGet: { path: '/readyz', port: 'healthz' }, initialDelaySeconds: 5, periodSeconds: 10 },
            resources: op.resources,
            securityContext: CONTAINER_SECURITY,
            // A read-only root filesystem still needs somewhere for temporary files.
            volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
          })],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        }),
      },
    },
  });
}

/** The Service in front of the operator's metrics port, named `agent-sandbox-controller` as in upstream's release manifests. */
export function metricsService(scope: Construct, op: OperatorSettings): ApiObject {
  return namespaced(scope, 'MetricsService', 'v1', 'Service', CONTROLLER, op.namespace, {
    spec: {
      selector: { app: CONTROLLER },
      ports: [{ name: 'metrics', port: op.metricsPort, targetPort: 'metrics', protocol: 'TCP' }],
    },
  });
}

/** A PodDisruptionBudget for the operator: how many of its Pods a node drain may evict at once. */
export interface OperatorDisruptionBudgetOptions {
  /** Pods that may be unavailable; give this or `minAvailable`. @default 1 */
  readonly maxUnavailable?: number;
  /** Pods that must stay available; give this or `maxUnavailable`. @default - `maxUnavailable` */
  readonly minAvailable?: number;
}

/** Check the budget against the replicas; errors go to `errors`. */
export function checkDisruptionBudget(errors: ErrorList, pdb: OperatorDisruptionBudgetOptions, replicas: number): void {
  if (pdb.maxUnavailable !== undefined && pdb.minAvailable !== undefined) {
    errors.check('podDisruptionBudget', `give ${propName('maxUnavailable')} or ${propName('minAvailable')}, not both`);
  }
  for (const [field, n] of [['maxUnavailable', pdb.maxUnavailable], ['minAvailable', pdb.minAvailable]] as const) {
    if (n !== undefined && !(Number.isInteger(n) && n >= 0)) errors.check(`podDisruptionBudget.${field}`, `${n} must be a whole number of at least 0`);
  }
  if (pdb.minAvailable !== undefined && pdb.minAvailable >= replicas) {
    errors.check('podDisruptionBudget.minAvailable', `${pdb.minAvailable} with ${replicas} replica(s) would block every node drain; raise ${propName('replicas')} or lower ${propName('podDisruptionBudget.minAvailable')} (or use ${propName('podDisruptionBudget.maxUnavailable')} 1)`);
  }
  if (pdb.maxUnavailable === 0) {
    errors.check('podDisruptionBudget.maxUnavailable', '0 would block every node drain; use at least 1');
  }
}

/** The operator's PodDisruptionBudget. */
export function operatorDisruptionBudget(scope: Construct, op: OperatorSettings, pdb: OperatorDisruptionBudgetOptions): ApiObject {
  const budget = pdb.minAvailable !== undefined ? { minAvailable: pdb.minAvailable } : { maxUnavailable: pdb.maxUnavailable ?? 1 };
  return namespaced(scope, 'PodDisruptionBudget', 'policy/v1', 'PodDisruptionBudget', CONTROLLER, op.namespace, {
    spec: { ...budget, selector: { matchLabels: { app: CONTROLLER } } },
  });
}
