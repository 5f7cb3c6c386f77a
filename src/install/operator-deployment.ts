import { ApiObject, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import {
  ControllerFlagValue, controllerFlag, flagPropertyName, formatLabelList, portOfBindAddress,
  renderControllerArgs, validateControllerFlagValues,
} from '../api/controller-flags';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/labels';
import { defaultRouterPodLabels } from '../api/network-policy-defaults';
import { ErrorList, checkDns1123Label } from '../api/validation';
import { ContainerResources, ImagePullPolicy, dropUndefined } from '../container';
import { ControllerOptions } from './controller-options';
import type { AgentSandboxExtensions } from './extensions';
import { CONTROLLER, CONTROLLER_LABELS, namespaced } from './manifest';
import type { AgentSandboxSystem } from './system';
import { CONTAINER_SECURITY, POD_SECURITY, checkImage, checkResources, imageRef, resourcesOf } from './workload';

/** The operator image of this library's release (`AgentSandboxSystem.DEFAULT_IMAGE`). */
export const DEFAULT_OPERATOR_IMAGE = 'ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator:v0.1.0';

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
    values[flag] = value instanceof Duration ? value.toMilliseconds({ integral: false })
      : value !== null && typeof value === 'object' && !Array.isArray(value) ? formatLabelList(value) : value as ControllerFlagValue;
  }
  if (routerPodLabels) {
    for (const field of ['routerNamespace', 'routerPodLabels'] as const) {
      if (props.controller?.[field] !== undefined) {
        errors.check(`controller.${field}`, 'is set by the install from where it deploys the router (the namespace prop and router.podLabels); remove it, or drop router and deploy the router yourself');
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
    errors.check('replicas', `${replicas} replicas would all reconcile at once without leader election; set replicas to 1 or controller.leaderElect to true`);
  }
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
  };
}

/** The operator Deployment. */
export function operatorDeployment(scope: Construct, op: OperatorSettings): ApiObject {
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
            name: CONTROLLER,
            image: op.image,
            imagePullPolicy: op.imagePullPolicy,
            args: ['controller', ...op.args],
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
        },
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
