import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { namespaced } from './manifest';
import { CONTAINER_SECURITY, POD_SECURITY, checkImage, checkResources, imageRef, resourcesOf } from './workload';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { defaultRouterPodLabels } from '../api/network-policy-defaults';
import { ErrorList, checkDns1035Label } from '../api/validation';
import { ContainerResources } from '../container';
import { checkLabels } from '../network-policy/checks';

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
  /**
   * Labels of the router Pods: the selector of its Deployment, Service and PodDisruptionBudget, and
   * what the operator's default per-template NetworkPolicy admits (the bundle passes them as
   * `--router-pod-labels`). Changing them later replaces the Deployment (its selector is immutable).
   * @default { app: 'sandbox-router' }
   */
  readonly podLabels?: { [key: string]: string };
}

/** The labels of the router Pods, as configured. */
export function routerPodLabelsOf(router: SandboxRouterOptions): { [key: string]: string } {
  return { ...(router.podLabels ?? defaultRouterPodLabels()) };
}

/** Check the router options; errors go to `errors`, each field prefixed with `router.`. */
export function checkRouter(errors: ErrorList, router: SandboxRouterOptions): void {
  checkImage(errors, 'router.', router.image, router.imageDigest);
  if (router.imageDigest !== undefined && router.image === undefined) {
    errors.check('router.imageDigest', 'pins router.image, which is not set; set router.image too, or pin the operator image with imageDigest');
  }
  const replicas = router.replicas ?? 2;
  errors.check('router.replicas', Number.isInteger(replicas) && replicas >= 0 ? undefined : `${replicas} must be a whole number of at least 0`);
  if (router.serviceName !== undefined) errors.check('router.serviceName', checkDns1035Label(router.serviceName));
  checkResources(errors, 'router.resources', router.resources);
  if (router.podLabels !== undefined) {
    checkLabels(errors, 'router.podLabels', router.podLabels);
    if (Object.keys(router.podLabels).length === 0) errors.check('router.podLabels', 'must not be empty: the selectors would match every Pod; omit it for app=sandbox-router');
  }
}

const ROUTER_NAME = 'sandbox-router';
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
function addRouterRbac(scope: Construct, namespace: string, labels: { [key: string]: string }): void {
  namespaced(scope, 'RouterServiceAccount', 'v1', 'ServiceAccount', ROUTER_NAME, namespace, {}, labels);
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

/** Scheduling and registry settings the router Pods share with the operator's (the same image, the same nodes). */
export interface RouterPodPlacement {
  readonly imagePullSecrets?: { name: string }[];
  readonly nodeSelector?: { [key: string]: string };
  readonly tolerations?: object[];
}

/** The router's RBAC, Deployment, PodDisruptionBudget and Service in `namespace`; returns the Deployment. */
export function addRouter(scope: Construct, namespace: string, router: SandboxRouterOptions, operatorImage: string,
  placement: RouterPodPlacement = {}): ApiObject {
  const image = router.image === undefined ? operatorImage : imageRef(router.image, router.imageDigest);
  const podLabels = routerPodLabelsOf(router);
  const labels = { ...podLabels, ...PART_OF_LABEL };
  addRouterRbac(scope, namespace, labels);
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
          ...(placement.imagePullSecrets?.length ? { imagePullSecrets: placement.imagePullSecrets } : {}),
          ...(placement.nodeSelector ? { nodeSelector: placement.nodeSelector } : {}),
          ...(placement.tolerations?.length ? { tolerations: placement.tolerations } : {}),
          containers: [{
            name: 'router',
            image,
            args: ['router', ...(router.args ?? [])],
            ports: [
              { name: 'http', containerPort: 8080, protocol: 'TCP' },
              { name: 'probes', containerPort: 8081, protocol: 'TCP' },
              { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
            ],
            // Ready once its Sandbox and Pod caches have synced; unready while draining.
            readinessProbe: { httpGet: { path: '/readyz', port: 'probes' }, periodSeconds: 5 },
            livenessProbe: { httpGet: { path: '/healthz', port: 'probes' }, initialDelaySeconds: 10, periodSeconds: 20 },
            resources: resourcesOf(router.resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } }),
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
      ports: [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }],
    },
  }, labels);
  return deployment;
}
