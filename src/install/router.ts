import { ApiObject } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { namespaced } from './manifest';
import {
  CONTAINER_SECURITY, InstallEnvOptions, POD_SECURITY, Placement, checkAnnotations, checkEnv, checkImage, checkPlacement, checkResources,
  envOf, imageRef, placementOf, resourcesOf,
} from './workload';
import { portOfBindAddress } from '../api/controller-flags';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { defaultRouterPodLabels } from '../api/network-policy-defaults';
import { propName } from '../api/spelling';
import { ErrorList, checkDns1035Label } from '../api/validation';
import { SandboxToleration } from '../blueprint';
import { ContainerResources } from '../container';
import { checkLabels } from '../network-policy/checks';
import { ObjectRef } from '../object-ref';
import { SchedulingAffinity, TopologySpreadConstraint } from '../scheduling';

/** The sandbox router: the HTTP/WebSocket data plane in front of sandbox pods. */
export interface SandboxRouterOptions extends InstallEnvOptions {
  /** Router image. @default - the operator image, run with the `router` command */
  readonly image?: string;
  /** Pin the router image by digest (`sha256:<64 hex>`). @default - not pinned */
  readonly imageDigest?: string;
  /** @default 2 */
  readonly replicas?: number;
  /**
   * Extra router arguments after the `router` command. A `--metrics-bind-address` here moves the
   * metrics port of the Pods and the Service (`"0"` removes it, and the router's ServiceMonitor).
   * @default - none
   */
  readonly args?: string[];
  /**
   * Service name. Upstream's SDKs port-forward to `svc/sandbox-router-svc` in the install namespace.
   * @default "sandbox-router-svc"
   */
  readonly serviceName?: string;
  /**
   * The router container's resources. One router process peaked at 137 to 188 MiB in the router
   * benchmark (bench/README.md; 20 Sandboxes, 17,000 small requests a second or 1 MiB bodies at
   * 1 GB/s); its caches grow
   * with the Sandboxes it routes to, and each `--workers` process (in `args`) is another whole
   * router.
   * @default - requests 100m CPU and 128Mi memory, limit 512Mi memory
   */
  readonly resources?: ContainerResources;
  /**
   * Labels of the router Pods: the selector of its Deployment, Service and PodDisruptionBudget, and
   * what the operator's default per-template NetworkPolicy admits (the bundle passes them as
   * `--router-pod-labels`). Changing them later replaces the Deployment (its selector is immutable).
   * @default { app: 'sandbox-router' }
   */
  readonly podLabels?: { [key: string]: string };
  /**
   * Node labels the router Pods must land on, instead of the operator's `nodeSelector`; an empty map
   * for none.
   * @default - the operator's `nodeSelector`
   */
  readonly nodeSelector?: { [key: string]: string };
  /** Tolerations of the router Pods, instead of the operator's; an empty list for none. @default - the operator's `tolerations` */
  readonly tolerations?: SandboxToleration[];
  /** Affinity of the router Pods, such as anti-affinity to keep replicas on different nodes. @default - none */
  readonly affinity?: SchedulingAffinity;
  /**
   * Spread the router Pods over zones or nodes. A constraint without `matchLabels` counts the
   * router Pods (`podLabels`).
   * @default - none
   */
  readonly topologySpreadConstraints?: TopologySpreadConstraint[];
  /**
   * PriorityClass of the router Pods: a construct that defines one (a `KubePriorityClass`), or an
   * `ObjectRef`. The router carries every request to the sandboxes, so it shares the operator's by
   * default.
   * @default - the operator's `priorityClass`
   */
  readonly priorityClass?: ObjectRef | IConstruct;
  /**
   * Annotations of the router's ServiceAccount `sandbox-router`, such as workload identity
   * (`iam.gke.io/gcp-service-account`, `eks.amazonaws.com/role-arn`).
   * @default - none
   */
  readonly serviceAccountAnnotations?: { [key: string]: string };
}

/** The router's metrics port: the default unless `args` move it; undefined when `args` turn metrics off. */
export function routerMetricsPort(router: SandboxRouterOptions): number | undefined {
  const flag = metricsFlag(router.args ?? []);
  if (!flag) return ROUTER_METRICS_PORT;
  return flag.value === '0' ? undefined : portOfBindAddress(flag.value ?? '');
}

/** The last `--metrics-bind-address` of the router args (as `--name=value` or `--name value`) and where it is. */
function metricsFlag(args: readonly string[]): { index: number; value: string | undefined } | undefined {
  let found: { index: number; value: string | undefined } | undefined;
  args.forEach((arg, index) => {
    const match = /^--?metrics-bind-address(?:=(.*))?$/.exec(arg);
    if (match) found = { index, value: match[1] ?? args[index + 1] };
  });
  return found;
}

/** The labels of the router Pods, as configured. */
export function routerPodLabelsOf(router: SandboxRouterOptions): { [key: string]: string } {
  return { ...(router.podLabels ?? defaultRouterPodLabels()) };
}

/** Check the router options; errors go to `errors`, each field prefixed with `router.`. */
export function checkRouter(errors: ErrorList, router: SandboxRouterOptions, namespace: string): void {
  checkImage(errors, 'router.', router.image, router.imageDigest);
  if (router.imageDigest !== undefined && router.image === undefined) {
    errors.check('router.imageDigest', `pins ${propName('router.image')}, which is not set; set ${propName('router.image')} too, or pin the operator image with ${propName('imageDigest')}`);
  }
  const replicas = router.replicas ?? 2;
  errors.check('router.replicas', Number.isInteger(replicas) && replicas >= 0 ? undefined : `${replicas} must be a whole number of at least 0`);
  if (router.serviceName !== undefined) errors.check('router.serviceName', checkDns1035Label(router.serviceName));
  checkResources(errors, 'router.resources', router.resources);
  if (router.podLabels !== undefined) {
    checkLabels(errors, 'router.podLabels', router.podLabels);
    if (Object.keys(router.podLabels).length === 0) errors.check('router.podLabels', 'must not be empty: the selectors would match every Pod; omit it for app=sandbox-router');
  }
  if (!Array.isArray(router.args ?? [])) {errors.check('router.args', 'must be a list of strings');} else {
    const flag = metricsFlag(router.args ?? []);
    if (flag && flag.value !== '0' && portOfBindAddress(flag.value ?? '') === undefined) {
      errors.check(`router.args[${flag.index}]`, `--metrics-bind-address needs [host]:port with a port from 1 to 65535, such as ":9090", or "0" to turn metrics off; got ${JSON.stringify(flag.value ?? null)}`);
    }
  }
  checkPlacement(errors, 'router.', router, routerPodLabelsOf(router));
  checkEnv(errors, 'router.', router, namespace);
  checkAnnotations(errors, 'router.serviceAccountAnnotations', router.serviceAccountAnnotations);
}

const ROUTER_NAME = 'sandbox-router';
/** The router's default `--metrics-bind-address` port (operator/src/router/flags.ts). */
const ROUTER_METRICS_PORT = 9090;
/** The name of the metrics port on the router's Pods and Service, which its ServiceMonitor scrapes. */
export const ROUTER_METRICS_PORT_NAME = 'metrics';
const RBAC_API = 'rbac.authorization.k8s.io/v1';

/** The user name the router's ServiceAccount in `namespace` authenticates as. */
export const routerUsername = (namespace: string) => `system:serviceaccount:${namespace}:${ROUTER_NAME}`;

/**
 * What the router reads, asks and writes: Sandboxes and their Pods (its routing caches),
 * TokenReviews and SubjectAccessReviews (its default `--auth=kubernetes` mode), and patches of
 * Sandboxes with an idle policy (last-activity stamps, and the resume a request for a suspended one
 * asks for, only once the caller is authorized for it). RBAC cannot narrow `patch` to those: the
 * `agent-sandbox-router` ValidatingAdmissionPolicy (admission-policy.ts, shipped with the router
 * unless admissionPolicy is false) enforces the limit, refusing any other change to a Sandbox by
 * this ServiceAccount.
 */
const ROUTER_RULES = [
  { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/** The router's ServiceAccount, ClusterRole and binding. */
function addRouterRbac(scope: Construct, namespace: string, labels: { [key: string]: string },
  annotations: { [key: string]: string } | undefined): void {
  const account = namespaced(scope, 'RouterServiceAccount', 'v1', 'ServiceAccount', ROUTER_NAME, namespace, {}, labels);
  for (const [key, value] of Object.entries(annotations ?? {})) account.metadata.addAnnotation(key, value);
  new ApiObject(scope, 'RouterClusterRole', {
    apiVersion: RBAC_API, kind: 'ClusterRole', metadata: { name: ROUTER_NAME, labels: { ...labels } }, rules: ROUTER_RULES,
  });
  new ApiObject(scope, 'RouterClusterRoleBinding', {
    apiVersion: RBAC_API,
    kind: 'ClusterRoleBinding',
    metadata: { name: ROUTER_NAME, labels: { ...labels } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ROUTER_NAME },
    subjects: [{ kind: 'ServiceAccount', name: ROUTER_NAME, namespace }],
  });
}

/**
 * What the router Pods take from the operator's: its image and pull secrets always (the same image);
 * its node selector, tolerations and priority class unless the router sets its own.
 */
export interface RouterInheritance extends Pick<Placement, 'nodeSelector' | 'tolerations' | 'priorityClass'> {
  readonly image: string;
  readonly imagePullSecrets: { name: string }[];
}

/** The router's RBAC, Deployment, PodDisruptionBudget and Service in `namespace`; returns the Deployment. */
export function addRouter(scope: Construct, namespace: string, router: SandboxRouterOptions, operator: RouterInheritance): ApiObject {
  const image = router.image === undefined ? operator.image : imageRef(router.image, router.imageDigest);
  const podLabels = routerPodLabelsOf(router);
  const labels = { ...podLabels, ...PART_OF_LABEL };
  const metricsPort = routerMetricsPort(router);
  const placement = placementOf('router.', {
    ...router,
    nodeSelector: router.nodeSelector ?? operator.nodeSelector,
    tolerations: router.tolerations ?? operator.tolerations,
    priorityClass: router.priorityClass ?? operator.priorityClass,
  }, podLabels);
  addRouterRbac(scope, namespace, labels, router.serviceAccountAnnotations);
  const deployment = namespaced(scope, 'RouterDeployment', 'apps/v1', 'Deployment', 'sandbox-router', namespace, {
    spec: {
      replicas: router.replicas ?? 2,
      selector: { matchLabels: { ...podLabels } },
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          // The router watches Sandboxes and Pods and reviews callers' tokens.
          serviceAccountName: ROUTER_NAME,
          securityContext: POD_SECURITY,
          ...(operator.imagePullSecrets.length ? { imagePullSecrets: operator.imagePullSecrets } : {}),
          ...placement,
          containers: [{
            name: 'router',
            image,
            args: ['router', ...(router.args ?? [])],
            ...envOf('router.', router, namespace),
            ports: [
              { name: 'http', containerPort: 8080, protocol: 'TCP' },
              { name: 'probes', containerPort: 8081, protocol: 'TCP' },
              ...(metricsPort ? [{ name: ROUTER_METRICS_PORT_NAME, containerPort: metricsPort, protocol: 'TCP' }] : []),
            ],
            // Ready once its Sandbox and Pod caches have synced; unready while draining.
            readinessProbe: { httpGet: { path: '/readyz', port: 'probes' }, periodSeconds: 5 },
            livenessProbe: { httpGet: { path: '/healthz', port: 'probes' }, initialDelaySeconds: 10, periodSeconds: 20 },
            resources: resourcesOf(router.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } }),
            securityContext: CONTAINER_SECURITY,
          }],
        },
      },
    },
  }, labels);
  // Voluntary evictions (node drains) take router pods one at a time.
  namespaced(scope, 'RouterPodDisruptionBudget', 'policy/v1', 'PodDisruptionBudget', ROUTER_NAME, namespace, {
    spec: { maxUnavailable: 1, selector: { matchLabels: { ...podLabels } } },
  }, labels);
  namespaced(scope, 'RouterService', 'v1', 'Service', router.serviceName ?? 'sandbox-router-svc', namespace, {
    spec: {
      selector: { ...podLabels },
      // Clients use http; Prometheus scrapes metrics (the router's ServiceMonitor selects this Service).
      ports: [
        { name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' },
        ...(metricsPort ? [{ name: ROUTER_METRICS_PORT_NAME, port: metricsPort, targetPort: ROUTER_METRICS_PORT_NAME, protocol: 'TCP' }] : []),
      ],
    },
  }, labels);
  return deployment;
}
