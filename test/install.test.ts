import { Chart, Duration, Testing } from 'cdk8s';
import { CONTROLLER_FLAGS, CONTROLLER_LOG_LEVELS, controllerFlag, parseControllerFlagValue, parseLabelList } from '../src/api/controller-flags';
import { defaultSandboxNetworkPolicySpec } from '../src/api/network-policy-defaults';
import { ImagePullPolicy } from '../src/container';
import { AgentSandboxExtensions, AgentSandboxSystem, AgentSandboxSystemProps, ControllerLogLevel, ControllerOptions } from '../src/install';
import { OPERATOR_SANDBOX_LABELS, OWNERSHIP_POLICY_NAME, ROUTER_POLICY_NAME } from '../src/install/admission-policy';
import { AllowRouterIngress, DnsAccess } from '../src/network-policy';
import { SandboxTemplate } from '../src/template';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

function synth(props: AgentSandboxSystemProps = {}): any[] {
  const chart = Testing.chart();
  new AgentSandboxSystem(chart, 'system', props);
  return Testing.synth(chart);
}

// CRD bodies are snapshotted by crds.test.ts; here only their place in the install matters.
const forSnapshot = (objects: any[]) =>
  objects.map((o) => (o.kind === 'CustomResourceDefinition' ? { kind: o.kind, name: o.metadata.name } : o));

function find(objects: any[], kind: string, name: string): any {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

const controllerContainer = (objects: any[]) => find(objects, 'Deployment', 'agent-sandbox-controller').spec.template.spec.containers[0];
const argsOf = (props: AgentSandboxSystemProps) => controllerContainer(synth(props)).args;
const verbsOf = (role: any, group: string, resource: string): string[] =>
  role.rules.filter((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r: any) => r.verbs).sort();

const ofKind = (objects: any[], ...kinds: string[]) => objects.filter((o) => kinds.includes(o.kind));

function layer(props: AgentSandboxSystemProps = {}): any[] {
  const chart = Testing.chart();
  new AgentSandboxExtensions(chart, 'ext', props);
  return Testing.synth(chart);
}

const SANDBOXES = 'agents.x-k8s.io';
const EXTENSIONS = 'extensions.agents.x-k8s.io';

/** `[apiGroup, resource, verbs]`: requests the operator makes, as an RBAC authorizer sees them. */
type Requests = Array<[string, string, string[]]>;

// What operator/src asks the API server for. Informers list and watch; reconcilers get, create,
// patch and delete; status goes through the status subresource; and every controller reference it
// writes sets blockOwnerDeletion, which needs update on the owner's finalizers.
const SANDBOX_CONTROLLER: Requests = [
  [SANDBOXES, 'sandboxes', ['list', 'watch', 'patch', 'delete']],
  [SANDBOXES, 'sandboxes/status', ['patch']],
  [SANDBOXES, 'sandboxes/finalizers', ['update']],
  ['', 'pods', ['list', 'watch', 'get', 'create', 'patch', 'delete']],
  ['', 'services', ['list', 'watch', 'get', 'create', 'patch', 'delete']],
  ['', 'persistentvolumeclaims', ['list', 'watch', 'get', 'create', 'patch']],
  ['events.k8s.io', 'events', ['create']],
];
const EXTENSION_CONTROLLERS: Requests = [
  [SANDBOXES, 'sandboxes', ['list', 'watch', 'create', 'patch', 'delete']],
  [EXTENSIONS, 'sandboxclaims', ['list', 'watch', 'patch', 'delete']],
  [EXTENSIONS, 'sandboxclaims/status', ['patch']],
  [EXTENSIONS, 'sandboxclaims/finalizers', ['update']],
  [EXTENSIONS, 'sandboxtemplates', ['list', 'watch', 'patch']],
  [EXTENSIONS, 'sandboxtemplates/status', ['patch']],
  [EXTENSIONS, 'sandboxtemplates/finalizers', ['update']],
  [EXTENSIONS, 'sandboxwarmpools', ['list', 'watch']],
  [EXTENSIONS, 'sandboxwarmpools/status', ['patch']],
  [EXTENSIONS, 'sandboxwarmpools/finalizers', ['update']],
  ['networking.k8s.io', 'networkpolicies', ['list', 'watch', 'create', 'update', 'delete']],
];
const LEADER_ELECTION: Requests = [['coordination.k8s.io', 'leases', ['get', 'create', 'update', 'watch']]];
const EXTENSION_ONLY: Requests = EXTENSION_CONTROLLERS.map(([group, resource, verbs]) => [group, resource, verbs.filter((verb) =>
  !SANDBOX_CONTROLLER.some(([g, r, v]) => g === group && r === resource && v.includes(verb)))]);

/** Each request as `verb group/resource`, the form the assertions print. */
const requestKeys = (requests: Requests) => requests.flatMap(([group, resource, verbs]) => verbs.map((verb) => `${verb} ${group}/${resource}`));

/** Whether a rule of `roles` allows the request, read the way the RBAC authorizer reads rules. */
function allows(roles: any[], group: string, resource: string, verb: string): boolean {
  const has = (list: string[] | undefined, value: string) => (list ?? []).some((v) => v === '*' || v === value);
  return roles.some((role) => role.rules.some((r: any) => has(r.apiGroups, group) && has(r.resources, resource) && has(r.verbs, verb)));
}

/** The requests `roles` would refuse, as `verb group/resource`, so a failure names them. */
function refused(roles: any[], requests: Requests): string[] {
  return requests.flatMap(([group, resource, verbs]) =>
    verbs.filter((verb) => !allows(roles, group, resource, verb)).map((verb) => `${verb} ${group}/${resource}`));
}

/** The requests `roles` would allow. */
function allowed(roles: any[], requests: Requests): string[] {
  return requests.flatMap(([group, resource, verbs]) =>
    verbs.filter((verb) => allows(roles, group, resource, verb)).map((verb) => `${verb} ${group}/${resource}`));
}

/** Every `verb group/resource` the rules of `roles` name. */
function grants(roles: any[]): string[] {
  const all = roles.flatMap((role) => role.rules.flatMap((r: any) =>
    r.apiGroups.flatMap((g: string) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${v} ${g}/${res}`)))));
  return [...new Set(all)].sort();
}

/** Pods of `workload` have every label of `selector` (a Deployment or Service selector). */
const selects = (selector: { [key: string]: string }, workload: any) =>
  Object.entries(selector).every(([k, v]) => workload.spec.template.metadata.labels[k] === v);

function errorOf(build: (chart: Chart) => void): string {
  try {
    build(Testing.chart());
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('AgentSandboxSystem', () => {
  test('the default install (core + extensions)', () => {
    expect(forSnapshot(synth())).toMatchSnapshot();
  });

  test('core only, with router and API Priority and Fairness', () => {
    expect(forSnapshot(synth({ extensions: false, router: {}, flowControl: {} }))).toMatchSnapshot();
  });

  test('the Namespace comes first, then the CRDs, then everything else', () => {
    const kinds = synth({ router: {}, flowControl: {} }).map((o) => o.kind);
    expect(kinds.slice(0, 5)).toEqual(['Namespace', ...Array(4).fill('CustomResourceDefinition')]);
    expect(kinds.slice(5)).not.toContain('Namespace');
    expect(kinds.slice(5)).not.toContain('CustomResourceDefinition');
  });

  test('without creating the Namespace the CRDs come first', () => {
    const objects = synth({ createNamespace: false, extensions: false });
    expect(objects.map((o) => o.kind).slice(0, 2)).toEqual(['CustomResourceDefinition', 'ServiceAccount']);
    expect(objects.find((o) => o.kind === 'Namespace')).toBeUndefined();
  });

  test('the Namespace enforces the restricted Pod Security Standard', () => {
    expect(find(synth(), 'Namespace', 'agent-sandbox-system').metadata.labels).toEqual({
      'app.kubernetes.io/part-of': 'agent-sandbox',
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
  });

  test('core RBAC: what the Sandbox controller writes, nothing for webhooks, CRDs or Secrets', () => {
    const objects = synth({ extensions: false });
    const role = find(objects, 'ClusterRole', 'agent-sandbox-controller');
    expect(verbsOf(role, '', 'pods')).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    expect(verbsOf(role, '', 'persistentvolumeclaims')).toEqual(['create', 'get', 'list', 'patch', 'watch']);
    expect(verbsOf(role, 'events.k8s.io', 'events')).toEqual(['create', 'patch']);
    expect(verbsOf(role, 'agents.x-k8s.io', 'sandboxes')).toEqual(['delete', 'get', 'list', 'patch', 'update', 'watch']);
    expect(verbsOf(role, 'agents.x-k8s.io', 'sandboxes/finalizers')).toEqual(['update']);
    const resources = role.rules.flatMap((r: any) => r.resources);
    for (const absent of ['secrets', 'customresourcedefinitions', 'leases', 'sandboxclaims', 'networkpolicies']) {
      expect(resources).not.toContain(absent);
    }
    expect(objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'agent-sandbox-controller-extensions')).toBeUndefined();
    expect(find(objects, 'ClusterRoleBinding', 'agent-sandbox-controller')).toMatchObject({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'agent-sandbox-controller' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent-sandbox-controller', namespace: 'agent-sandbox-system' }],
    });
  });

  test('extension RBAC adds Sandbox creation, the extension kinds and NetworkPolicies', () => {
    const objects = synth();
    const role = find(objects, 'ClusterRole', 'agent-sandbox-controller-extensions');
    expect(verbsOf(role, 'agents.x-k8s.io', 'sandboxes')).toEqual(['create']);
    expect(verbsOf(role, 'extensions.agents.x-k8s.io', 'sandboxclaims')).toEqual(['delete', 'get', 'list', 'patch', 'update', 'watch']);
    expect(verbsOf(role, 'extensions.agents.x-k8s.io', 'sandboxwarmpools')).toEqual(['get', 'list', 'watch']);
    expect(verbsOf(role, 'extensions.agents.x-k8s.io', 'sandboxclaims/status')).toEqual(['get', 'patch', 'update']);
    expect(verbsOf(role, 'extensions.agents.x-k8s.io', 'sandboxtemplates/finalizers')).toEqual(['update']);
    expect(verbsOf(role, 'networking.k8s.io', 'networkpolicies')).toEqual(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']);
    expect(find(objects, 'ClusterRoleBinding', 'agent-sandbox-controller-extensions').roleRef.name).toBe('agent-sandbox-controller-extensions');
  });

  test('leader election gets a namespaced Role: leases and events only', () => {
    const objects = synth();
    const role = find(objects, 'Role', 'agent-sandbox-controller');
    expect(role.metadata.namespace).toBe('agent-sandbox-system');
    expect(verbsOf(role, 'coordination.k8s.io', 'leases')).toEqual(['create', 'get', 'update', 'watch']);
    expect(verbsOf(role, '', 'events')).toEqual(['create', 'patch']);
    expect(role.rules).toHaveLength(2);
    expect(find(objects, 'RoleBinding', 'agent-sandbox-controller')).toMatchObject({
      roleRef: { kind: 'Role', name: 'agent-sandbox-controller' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent-sandbox-controller', namespace: 'agent-sandbox-system' }],
    });
  });

  test('the leader-election Role follows controller.leaderElectionNamespace', () => {
    const objects = synth({ controller: { leaderElectionNamespace: 'kube-system' } });
    expect(find(objects, 'Role', 'agent-sandbox-controller').metadata.namespace).toBe('kube-system');
    const binding = find(objects, 'RoleBinding', 'agent-sandbox-controller');
    expect(binding.metadata.namespace).toBe('kube-system');
    expect(binding.subjects[0].namespace).toBe('agent-sandbox-system');
  });

  test('the operator Deployment is hardened, probed and uses its token', () => {
    const deployment = find(synth(), 'Deployment', 'agent-sandbox-controller');
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(pod.serviceAccountName).toBe('agent-sandbox-controller');
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const container = pod.containers[0];
    expect(container.image).toBe(AgentSandboxSystem.DEFAULT_IMAGE);
    expect(container.args).toEqual(['controller', '--extensions=true']);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] },
    });
    expect(container.ports).toEqual([
      { name: 'metrics', containerPort: 8080, protocol: 'TCP' },
      { name: 'healthz', containerPort: 8081, protocol: 'TCP' },
    ]);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'healthz' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'healthz' });
    expect(container.resources).toEqual({ requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '1Gi' } });
  });

  test('the metrics Service exposes port 8080 of the operator pods', () => {
    const service = find(synth(), 'Service', 'agent-sandbox-controller');
    expect(service.metadata.namespace).toBe('agent-sandbox-system');
    expect(service.spec).toEqual({ selector: { app: 'agent-sandbox-controller' }, ports: [{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }] });
  });

  test('every ControllerOptions field renders its flag, in table order', () => {
    const controller: Required<ControllerOptions> = {
      metricsBindAddress: ':9090',
      healthProbeBindAddress: '127.0.0.1:9091',
      leaderElect: true,
      leaderElectionNamespace: 'kube-system',
      clusterDomain: 'corp.internal',
      kubeApiQps: 200,
      kubeApiBurst: 400,
      kubeApiMaxInFlight: 64,
      sandboxConcurrentWorkers: 200,
      sandboxClaimConcurrentWorkers: 150,
      sandboxWarmPoolConcurrentWorkers: 2,
      sandboxTemplateConcurrentWorkers: 3,
      sandboxProgressStatusWindow: Duration.millis(250),
      sandboxWarmMemberProgressWindow: Duration.seconds(20),
      claimsFirstMaxDefer: Duration.millis(1500),
      sandboxWarmPoolMaxBatchSize: 500,
      sandboxWarmPoolReplenishDelay: Duration.seconds(2),
      sandboxWarmPoolMaxRefillRate: 100,
      sandboxWarmPoolStatusWindow: Duration.millis(500),
      sandboxWarmPoolReadinessGracePeriod: Duration.minutes(10),
      sandboxWarmPoolUnschedulableRecheckInterval: Duration.seconds(90),
      enableWarmPoolEviction: false,
      cacheLabelSelectors: true,
      disableClaimEvents: true,
      disableClaimObservabilityAnnotations: true,
      routerNamespace: 'edge',
      routerPodLabels: { app: 'edge-router' },
      clusterCidrs: ['198.18.0.0/15', 'fd00:10::/56'],
      logLevel: ControllerLogLevel.DEBUG,
      kubeconfig: '/etc/kube/config',
    };
    const objects = synth({ replicas: 2, controller });
    const container = controllerContainer(objects);
    expect(container.args).toEqual([
      'controller',
      '--metrics-bind-address=:9090',
      '--health-probe-bind-address=127.0.0.1:9091',
      '--leader-election-namespace=kube-system',
      '--extensions=true',
      '--cluster-domain=corp.internal',
      '--kube-api-qps=200',
      '--kube-api-burst=400',
      '--kube-api-max-in-flight=64',
      '--sandbox-concurrent-workers=200',
      '--sandbox-claim-concurrent-workers=150',
      '--sandbox-warm-pool-concurrent-workers=2',
      '--sandbox-template-concurrent-workers=3',
      '--sandbox-progress-status-window=250ms',
      '--sandbox-warm-member-progress-window=20s',
      '--claims-first-max-defer=1s500ms',
      '--sandbox-warm-pool-max-batch-size=500',
      '--sandbox-warm-pool-replenish-delay=2s',
      '--sandbox-warm-pool-max-refill-rate=100',
      '--sandbox-warm-pool-status-window=500ms',
      '--sandbox-warm-pool-readiness-grace-period=10m',
      '--sandbox-warm-pool-unschedulable-recheck-interval=1m30s',
      '--enable-warm-pool-eviction=false',
      '--cache-label-selectors=true',
      '--disable-claim-events=true',
      '--disable-claim-observability-annotations=true',
      '--router-namespace=edge',
      '--router-pod-labels=app=edge-router',
      '--cluster-cidrs=198.18.0.0/15,fd00:10::/56',
      '--log-level=debug',
      '--kubeconfig=/etc/kube/config',
    ]);
    // Every flag of the table except --leader-elect (left at its default) and --extensions (from the extensions prop).
    expect(container.args).toHaveLength(CONTROLLER_FLAGS.length - 1 + 1);
    expect(container.ports.map((p: any) => p.containerPort)).toEqual([9090, 9091]);
    expect(find(objects, 'Service', 'agent-sandbox-controller').spec.ports[0].port).toBe(9090);
  });

  test('default values render no args; core-only renders none at all', () => {
    expect(argsOf({ extensions: false, controller: { sandboxConcurrentWorkers: 100, leaderElect: true } })).toEqual(['controller']);
  });

  test('ControllerLogLevel and the flag table agree', () => {
    expect(Object.values(ControllerLogLevel)).toEqual(CONTROLLER_LOG_LEVELS);
  });

  test('without leader election a single replica is replaced with Recreate, never overlapping', () => {
    const deployment = find(synth({ controller: { leaderElect: false } }), 'Deployment', 'agent-sandbox-controller');
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    expect(deployment.spec.template.spec.containers[0].args).toContain('--leader-elect=false');
  });

  test('image, digest, pull policy, replicas and resources are configurable', () => {
    const objects = synth({
      namespace: 'sandboxes',
      image: 'registry.example.com/op:v2',
      imageDigest: DIGEST,
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      replicas: 3,
      resources: { requests: { cpu: '1', memory: '1Gi' } },
    });
    const deployment = find(objects, 'Deployment', 'agent-sandbox-controller');
    expect(deployment.metadata.namespace).toBe('sandboxes');
    expect(deployment.spec.replicas).toBe(3);
    const container = deployment.spec.template.spec.containers[0];
    expect(container.image).toBe(`registry.example.com/op:v2@${DIGEST}`);
    expect(container.imagePullPolicy).toBe('Always');
    expect(container.resources).toEqual({ requests: { cpu: '1', memory: '1Gi' } });
    expect(find(objects, 'Namespace', 'sandboxes')).toBeDefined();
    expect(find(objects, 'ClusterRoleBinding', 'agent-sandbox-controller').subjects[0].namespace).toBe('sandboxes');
  });

  test('the router: app=sandbox-router pods behind sandbox-router-svc, with their own read-only RBAC and a PDB', () => {
    const objects = synth({ router: { image: 'registry.example.com/router:v1', imageDigest: DIGEST, replicas: 3, args: ['--auth=token', '--auth-token-file=/etc/router/token'] } });
    const deployment = find(objects, 'Deployment', 'sandbox-router');
    expect(deployment.metadata.namespace).toBe('agent-sandbox-system');
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.selector.matchLabels).toEqual({ app: 'sandbox-router' });
    expect(deployment.spec.template.metadata.labels.app).toBe('sandbox-router');
    const pod = deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBeUndefined();
    expect(pod.serviceAccountName).toBe('sandbox-router');
    expect(pod.containers[0].image).toBe(`registry.example.com/router:v1@${DIGEST}`);
    expect(pod.containers[0].args).toEqual(['router', '--auth=token', '--auth-token-file=/etc/router/token']);
    expect(pod.containers[0].ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'probes', containerPort: 8081, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ]);
    expect(pod.containers[0].readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'probes' });
    expect(pod.containers[0].livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'probes' });
    expect(find(objects, 'ServiceAccount', 'sandbox-router').metadata.namespace).toBe('agent-sandbox-system');
    expect(find(objects, 'ClusterRole', 'sandbox-router').rules).toEqual([
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    expect(find(objects, 'ClusterRoleBinding', 'sandbox-router').subjects).toEqual([{ kind: 'ServiceAccount', name: 'sandbox-router', namespace: 'agent-sandbox-system' }]);
    expect(find(objects, 'PodDisruptionBudget', 'sandbox-router').spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: { app: 'sandbox-router' } } });
    const service = find(objects, 'Service', 'sandbox-router-svc');
    expect(service.spec).toEqual({
      selector: { app: 'sandbox-router' },
      ports: [
        { name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' },
        { name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' },
      ],
    });
  });

  test('the router defaults to the operator image and can rename its Service', () => {
    const objects = synth({ imageDigest: DIGEST, router: { serviceName: 'sandbox-router' } });
    expect(find(objects, 'Deployment', 'sandbox-router').spec.template.spec.containers[0].image).toBe(`${AgentSandboxSystem.DEFAULT_IMAGE}@${DIGEST}`);
    expect(find(objects, 'Service', 'sandbox-router').spec.ports[0].port).toBe(8080);
  });

  test('flow control matches the controller ServiceAccount in the install namespace', () => {
    const objects = synth({ namespace: 'ops', flowControl: { criticalShares: 60 } });
    for (const schema of objects.filter((o) => o.kind === 'FlowSchema')) {
      expect(schema.spec.rules[0].subjects).toEqual([{ kind: 'ServiceAccount', serviceAccount: { name: 'agent-sandbox-controller', namespace: 'ops' } }]);
    }
    expect(find(objects, 'PriorityLevelConfiguration', 'agent-sandbox-critical').spec.limited.nominalConcurrencyShares).toBe(60);
  });

  describe('validation names the construct, the field and the fix', () => {
    test.each([
      [{ namespace: 'Agent_Sandbox' }, 'namespace: "Agent_Sandbox" must consist of lowercase letters'],
      [{ image: 'my image' }, 'image: "my image" must be a non-empty image reference without spaces'],
      [{ image: '' }, 'image: "" must be a non-empty image reference'],
      [{ imageDigest: 'abc' }, 'imageDigest: "abc" must be "sha256:" followed by 64 lowercase hex digits'],
      [{ image: `op@${DIGEST}`, imageDigest: DIGEST }, 'already pins a digest; drop the "@..." part or the imageDigest prop'],
      [{ replicas: -1 }, 'replicas: -1 must be a whole number of at least 0'],
      [{ replicas: 2, controller: { leaderElect: false } }, 'replicas: 2 replicas would all reconcile at once without leader election; set replicas to 1 or controller.leaderElect to true'],
      [{ resources: { limits: { memory: '1 GB' } } }, 'resources.limits["memory"]: "1 GB" is not a Kubernetes quantity'],
      [{ controller: { sandboxConcurrentWorkers: 0 } }, 'controller.sandboxConcurrentWorkers: must be greater than 0 (it is 0); use at least 1 worker'],
      [{ controller: { sandboxClaimConcurrentWorkers: 0 } }, 'controller.sandboxClaimConcurrentWorkers: must be greater than 0'],
      [{ controller: { sandboxWarmPoolConcurrentWorkers: 0 } }, 'controller.sandboxWarmPoolConcurrentWorkers: must be greater than 0'],
      [{ controller: { sandboxTemplateConcurrentWorkers: 1.5 } }, 'controller.sandboxTemplateConcurrentWorkers: must be a whole number'],
      [{ controller: { sandboxWarmPoolMaxBatchSize: 0 } }, 'controller.sandboxWarmPoolMaxBatchSize: must be greater than 0 (it is 0); use a batch of at least 1'],
      [{ controller: { kubeApiBurst: 0 } }, 'controller.kubeApiBurst: must be greater than 0 (it is 0); use a burst of at least 1'],
      [{ controller: { kubeApiQps: NaN } }, 'controller.kubeApiQps: must be a finite number'],
      [{ controller: { sandboxWarmPoolMaxRefillRate: -5 } }, 'controller.sandboxWarmPoolMaxRefillRate: must be 0 (unpaced) or a positive rate'],
      [{ controller: { sandboxWarmPoolMaxRefillRate: Infinity } }, 'controller.sandboxWarmPoolMaxRefillRate: must be a finite number'],
      [{ controller: { sandboxWarmPoolReadinessGracePeriod: Duration.seconds(0) } }, 'controller.sandboxWarmPoolReadinessGracePeriod: must be greater than 0s (it is 0s)'],
      [{ controller: { sandboxWarmPoolUnschedulableRecheckInterval: Duration.millis(0.5) } }, 'controller.sandboxWarmPoolUnschedulableRecheckInterval: must be a whole number of milliseconds'],
      [{ controller: { sandboxWarmPoolReplenishDelay: 30 as unknown as Duration } }, 'controller.sandboxWarmPoolReplenishDelay: must be a Duration (it is number 30); use Duration.seconds(n) or Duration.millis(n)'],
      [{ controller: { metricsBindAddress: '8080' } }, 'controller.metricsBindAddress: "8080" must be [host]:port'],
      [{ controller: { healthProbeBindAddress: 'localhost' } }, 'controller.healthProbeBindAddress: "localhost" must be [host]:port'],
      [{ controller: { leaderElectionNamespace: 'Kube' } }, 'controller.leaderElectionNamespace: "Kube" must consist of lowercase letters'],
      [{ controller: { clusterDomain: 'corp internal' } }, 'controller.clusterDomain: "corp internal" must consist of lowercase letters'],
      [{ controller: { logLevel: 'verbose' } }, 'controller.logLevel: "verbose" is not a log level; use one of debug, info, warn, error'],
      [{ controller: { extensions: true } }, 'controller.extensions: is set by the install; use the extensions prop'],
      [{ controller: { sandboxWorkers: 3 } }, 'controller.sandboxWorkers: is not a ControllerOptions field'],
      [{ router: { image: 'a b' } }, 'router.image: "a b" must be a non-empty image reference'],
      [{ router: { imageDigest: DIGEST } }, 'router.imageDigest: pins router.image, which is not set; set router.image too'],
      [{ router: { image: 'r', imageDigest: 'sha256:XYZ' } }, 'router.imageDigest: "sha256:XYZ" must be "sha256:" followed by 64 lowercase hex digits'],
      [{ router: { replicas: 1.5 } }, 'router.replicas: 1.5 must be a whole number of at least 0'],
      [{ router: { serviceName: '1router' } }, 'router.serviceName: "1router" must consist of lowercase letters, digits and \'-\', start with a letter'],
      [{ router: { resources: { requests: { cpu: 'lots' } } } }, 'router.resources.requests["cpu"]: "lots" is not a Kubernetes quantity'],
      [{ router: { podLabels: {} } }, 'router.podLabels: must not be empty: the selectors would match every Pod; omit it for app=sandbox-router'],
      [{ router: { podLabels: { 'bad key': 'x' } } }, 'router.podLabels'],
      [{ router: {}, controller: { routerNamespace: 'edge' } }, 'controller.routerNamespace: is set by the install from where it deploys the router'],
      [{ controller: { routerPodLabels: { app: 'a b' } } }, 'controller.routerPodLabels: "app=a b" value "a b" must be at most 63 characters'],
    ] as Array<[AgentSandboxSystemProps, string]>)('%j', (props, expected) => {
      const message = errorOf((chart) => new AgentSandboxSystem(chart, 'system', props));
      expect(message).toContain('AgentSandboxSystem test/system: invalid props');
      expect(message).toContain(expected);
    });

    test('all problems are reported at once', () => {
      const message = errorOf((chart) => new AgentSandboxSystem(chart, 'system', { replicas: -1, controller: { kubeApiBurst: 0 } }));
      expect(message).toContain('replicas: -1');
      expect(message).toContain('controller.kubeApiBurst');
    });

    test('flow control errors name the SandboxFlowControl inside the install', () => {
      const message = errorOf((chart) => new AgentSandboxSystem(chart, 'system', { flowControl: { bulkShares: 0 } }));
      expect(message).toContain('SandboxFlowControl test/system/FlowControl: invalid props');
      expect(message).toContain('bulkShares: 0 must be a whole number of at least 1');
    });

    test('AgentSandboxExtensions validates the same options', () => {
      const message = errorOf((chart) => new AgentSandboxExtensions(chart, 'ext', { controller: { sandboxClaimConcurrentWorkers: 0 } }));
      expect(message).toContain('AgentSandboxExtensions test/ext: invalid props');
      expect(message).toContain('controller.sandboxClaimConcurrentWorkers: must be greater than 0');
    });
  });
});

describe('the admission policy', () => {
  const POLICY = 'agent-sandbox-pod-hardening';
  const CLAIM_POLICY = 'agent-sandbox-claim-pod-labels';
  const validations = (objects: any[], name = POLICY): any[] => find(objects, 'ValidatingAdmissionPolicy', name).spec.validations;
  const messageOf = (v: any): string => v.message ?? v.messageExpression;

  test('shipped by default: three policies with Deny bindings, and the opt-out ClusterRole, unbound', () => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system');
    const objects = Testing.synth(chart);
    expect(system.admissionPolicy?.name).toBe(POLICY);
    for (const name of [POLICY, CLAIM_POLICY, OWNERSHIP_POLICY_NAME]) {
      expect(find(objects, 'ValidatingAdmissionPolicy', name).spec.failurePolicy).toBe('Fail');
      expect(find(objects, 'ValidatingAdmissionPolicyBinding', name).spec).toEqual({ policyName: name, validationActions: ['Deny'] });
    }
    const role = find(objects, 'ClusterRole', AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE);
    expect(role.rules).toEqual([
      { apiGroups: [SANDBOXES], resources: ['sandboxes'], verbs: [AgentSandboxSystem.ALLOW_PRIVILEGED_VERB] },
      { apiGroups: [EXTENSIONS], resources: ['sandboxtemplates'], verbs: [AgentSandboxSystem.ALLOW_PRIVILEGED_VERB] },
    ]);
    expect(ofKind(objects, 'ClusterRoleBinding', 'RoleBinding').filter((b) => b.roleRef.name === role.metadata.name)).toEqual([]);
    expect([AgentSandboxSystem.ALLOW_PRIVILEGED_ANNOTATION, AgentSandboxSystem.ALLOW_PRIVILEGED_VERB]).toEqual(['agents.x-k8s.io/allow-privileged', 'allow-privileged']);
  });

  test('the ownership policy: Sandboxes, Deny-bound, exempting the ServiceAccount the operator Deployment runs as and nobody else', () => {
    const chart = Testing.chart();
    new AgentSandboxSystem(chart, 'system', { namespace: 'ops' });
    const objects = Testing.synth(chart);
    const spec = find(objects, 'ValidatingAdmissionPolicy', OWNERSHIP_POLICY_NAME).spec;
    expect(find(objects, 'ValidatingAdmissionPolicyBinding', OWNERSHIP_POLICY_NAME).spec).toEqual({ policyName: OWNERSHIP_POLICY_NAME, validationActions: ['Deny'] });
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules).toEqual([{ apiGroups: [SANDBOXES], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['sandboxes'] }]);
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'agent-sandbox-controller');
    const exempt = `system:serviceaccount:${deployment.metadata.namespace}:${deployment.spec.template.spec.serviceAccountName}`;
    expect(exempt).toBe('system:serviceaccount:ops:agent-sandbox-controller');
    expect(spec.matchConditions[0]).toEqual({ name: 'not-the-operator', expression: `request.userInfo.username != "${exempt}"` });
    // The garbage collector is not exempt: it is a variable, only allowed to remove references.
    expect(spec.matchConditions.map((c: any) => c.expression).join(' ')).not.toContain('kube-system');
    expect(spec.variables.find((v: any) => v.name === 'garbageCollector').expression)
      .toBe('request.userInfo.username in ["system:serviceaccount:kube-system:generic-garbage-collector", "system:kube-controller-manager"]');
    const messages = spec.validations.map(messageOf).join('\n');
    for (const label of OPERATOR_SANDBOX_LABELS) expect(spec.validations[1].expression).toContain(`"${label}"`);
    expect(messages).toContain('only the agent-sandbox operator sets them');
    expect(messages).toContain('metadata.ownerReferences');
    expect(spec.validations[0].expression).toContain('["SandboxClaim", "SandboxWarmPool"]');
  });

  test('the ownership policy names every label the claim and warm pool controllers read, and no label a user sets', () => {
    expect([...OPERATOR_SANDBOX_LABELS].sort()).toEqual([
      'agents.x-k8s.io/claim-uid', 'agents.x-k8s.io/launch-type', 'agents.x-k8s.io/sandbox-pod-template-hash',
      'agents.x-k8s.io/sandbox-template-hash', 'agents.x-k8s.io/sandbox-template-ref-hash', 'agents.x-k8s.io/warm-pool-sandbox',
    ]);
    expect(OPERATOR_SANDBOX_LABELS).not.toContain('agents.x-k8s.io/created-by');
  });

  test('the router policy: with the router, Deny-bound, on updates of Sandboxes by the ServiceAccount its ClusterRole is bound to', () => {
    const objects = synth({ namespace: 'edge', router: {} });
    const spec = find(objects, 'ValidatingAdmissionPolicy', ROUTER_POLICY_NAME).spec;
    expect(find(objects, 'ValidatingAdmissionPolicyBinding', ROUTER_POLICY_NAME).spec).toEqual({ policyName: ROUTER_POLICY_NAME, validationActions: ['Deny'] });
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules).toEqual([{ apiGroups: [SANDBOXES], apiVersions: ['*'], operations: ['UPDATE'], resources: ['sandboxes'] }]);
    const patcher = find(objects, 'ClusterRole', 'sandbox-router').rules.find((r: any) => r.verbs.includes('patch'));
    expect(patcher.resources).toEqual(['sandboxes']);
    const subject = find(objects, 'ClusterRoleBinding', 'sandbox-router').subjects[0];
    expect(spec.matchConditions).toEqual([{ name: 'the-router', expression: `request.userInfo.username == "system:serviceaccount:${subject.namespace}:${subject.name}"` }]);
    expect(subject).toEqual({ kind: 'ServiceAccount', name: 'sandbox-router', namespace: 'edge' });
    // Every spec field the CRD declares but operatingMode is compared; the two annotations are exempt.
    const specChanged = spec.variables.find((v: any) => v.name === 'specChanged').expression;
    for (const f of ['podTemplate', 'volumeClaimTemplates', 'service', 'shutdownTime', 'shutdownPolicy', 'idlePolicy']) expect(specChanged).toContain(`"spec.${f}"`);
    expect(specChanged).not.toContain('operatingMode');
    expect(spec.variables.find((v: any) => v.name === 'annotationsChanged').expression)
      .toContain('!(k in ["agents.x-k8s.io/last-activity", "agents.x-k8s.io/idle-suspended-at"])');
    expect(spec.validations[1].expression).toBe('variables.mode == variables.oldMode || (variables.oldMode == "Suspended" && variables.mode == "Running" && variables.resumable)');
    const messages = spec.validations.map(messageOf).join('\n');
    for (const field of ['metadata.labels', 'metadata.annotations', 'metadata.ownerReferences', 'metadata.finalizers', 'spec.operatingMode from']) expect(messages).toContain(field);
    expect(messages).toContain('the sandbox router may only stamp agents.x-k8s.io/last-activity and resume a Sandbox whose idlePolicy allows it; it changed ');
  });

  test('the router policy ships only with the router and the admission policies', () => {
    const names = (objects: any[]) => ofKind(objects, 'ValidatingAdmissionPolicy').map((o) => o.metadata.name);
    expect(names(synth())).not.toContain(ROUTER_POLICY_NAME);
    expect(names(synth({ router: {}, admissionPolicy: false }))).toEqual([]);
  });

  test('admissionPolicy: false ships none of it', () => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system', { admissionPolicy: false });
    const objects = Testing.synth(chart);
    expect(system.admissionPolicy).toBeUndefined();
    expect(ofKind(objects, 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding')).toEqual([]);
    expect(objects.filter((o) => o.metadata.name === AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE)).toEqual([]);
  });

  test('Sandboxes and SandboxTemplates are checked on create and update; claims by their own policy; the operator is exempt', () => {
    const objects = synth({ namespace: 'ops' });
    const policy = find(objects, 'ValidatingAdmissionPolicy', POLICY).spec;
    expect(policy.matchConstraints.resourceRules).toEqual([
      { apiGroups: [SANDBOXES], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['sandboxes'] },
      { apiGroups: [EXTENSIONS], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['sandboxtemplates'] },
    ]);
    const claims = find(objects, 'ValidatingAdmissionPolicy', CLAIM_POLICY).spec;
    expect(claims.matchConstraints.resourceRules.map((r: any) => r.resources)).toEqual([['sandboxclaims']]);
    for (const spec of [policy, claims]) {
      expect(spec.matchConditions[0]).toEqual({
        name: 'not-the-operator', expression: 'request.userInfo.username != "system:serviceaccount:ops:agent-sandbox-controller"',
      });
    }
  });

  test('every container rule covers containers, init containers and ephemeral containers, and names the field in its message', () => {
    const all = validations(synth());
    const containerFields = ['securityContext.privileged', 'securityContext.allowPrivilegeEscalation', 'ports[*].hostPort',
      'securityContext.windowsOptions.hostProcess', 'securityContext.seccompProfile.type', 'securityContext.appArmorProfile.type',
      'securityContext.seLinuxOptions', 'securityContext.procMount', 'securityContext.runAsNonRoot', 'securityContext.runAsUser',
      'securityContext.capabilities.drop'];
    const listsNaming = (field: string) => all.filter((v) => messageOf(v).includes(`].${field} (container`))
      .map((v) => /spec\.podTemplate\.spec\.(\w+)\[/.exec(messageOf(v))?.[1]);
    for (const field of containerFields) expect(listsNaming(field)).toEqual(['containers', 'initContainers', 'ephemeralContainers']);
    // Two rules each: capabilities beyond the allowed set (baseline) and beyond NET_BIND_SERVICE (restricted).
    expect(listsNaming('securityContext.capabilities.add')).toEqual(['containers', 'containers', 'initContainers', 'initContainers', 'ephemeralContainers', 'ephemeralContainers']);
    // The probe and lifecycle host rule names the handler it found.
    expect(all.filter((v) => messageOf(v).includes('"livenessProbe.httpGet.host"') && messageOf(v).includes('"lifecycle.preStop.tcpSocket.host"'))
      .map((v) => /spec\.podTemplate\.spec\.(\w+)\[/.exec(messageOf(v))?.[1])).toEqual(['containers', 'initContainers', 'ephemeralContainers']);
    for (const field of ['hostNetwork', 'hostPID', 'hostIPC', 'securityContext.windowsOptions.hostProcess', 'securityContext.seccompProfile.type',
      'securityContext.appArmorProfile.type', 'securityContext.seLinuxOptions', 'securityContext.runAsNonRoot', 'securityContext.runAsUser']) {
      expect(all.filter((v) => messageOf(v).includes(`spec.podTemplate.spec.${field}`))).toHaveLength(1);
    }
    expect(all.filter((v) => messageOf(v).includes('].hostPath (volume'))).toHaveLength(1);
    expect(all.filter((v) => messageOf(v).includes('spec.podTemplate.spec.securityContext.sysctls['))).toHaveLength(1);
    expect(all.filter((v) => messageOf(v).includes('is a volume type the restricted profile forbids'))).toHaveLength(1);
    expect(all.filter((v) => messageOf(v).includes('spec.podTemplate.metadata.annotations['))).toHaveLength(1);
    for (const v of all) expect(messageOf(v)).toMatch(/remove|list any of|instead|add "ALL"/);
  });

  test('the baseline lists are the Pod Security Standards\' own', () => {
    const all = validations(synth()).map((v) => v.expression).join('\n');
    expect(all).toContain('in ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", '
      + '"net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", '
      + '"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]');
    expect(all).toContain('in ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]');
    expect(all).toContain('in ["RuntimeDefault", "Localhost"]');
    expect(all).toContain("startsWith(\"container.apparmor.security.beta.kubernetes.io/\") && !(variables.podAnnotations[k] in ['', 'runtime/default'] || variables.podAnnotations[k].startsWith('localhost/'))");
    for (const type of ['nfs', 'iscsi', 'gitRepo', 'rbd', 'cephfs', 'flexVolume', 'awsElasticBlockStore', 'photonPersistentDisk']) expect(all).toContain(`has(v.${type})`);
    for (const type of ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret']) expect(all).not.toContain(`has(v.${type})`);
  });

  test('restricted rules the operator\'s secure defaults cover are waived by their opt-out entry; baseline rules only by allow-privileged', () => {
    const all = validations(synth());
    const waivedBy = (entry: string) => all.filter((v) => v.expression.startsWith(`variables.optedOut || "${entry}" in variables.hardeningOptOuts || `));
    const fields = (vs: any[]) => [...new Set(vs.map((v) => /\]?\.(securityContext\.[\w.]+)/.exec(messageOf(v))?.[1]))].sort();
    expect(fields(waivedBy('runAsNonRoot'))).toEqual(['securityContext.runAsNonRoot', 'securityContext.runAsUser']);
    expect(waivedBy('runAsNonRoot')).toHaveLength(2 + 2 * 3);
    expect(fields(waivedBy('dropCapabilities'))).toEqual(['securityContext.capabilities.add', 'securityContext.capabilities.drop']);
    expect(waivedBy('dropCapabilities')).toHaveLength(2 * 3);
    for (const v of [...waivedBy('runAsNonRoot'), ...waivedBy('dropCapabilities')]) expect(messageOf(v)).toContain('in its agents.x-k8s.io/secure-defaults-opt-out annotation');
    // Root is allowed in a user namespace, as the standard says.
    expect(waivedBy('runAsNonRoot').every((v) => v.expression.includes('!variables.userNamespace && '))).toBe(true);
    const baseline = all.filter((v) => v.expression.startsWith('variables.optedOut || !('));
    expect(baseline).toHaveLength(all.length - 2 - 14);
    for (const v of baseline) expect(messageOf(v)).toMatch(/\+ variables\.optOutHint$/);
  });

  test('the annotation waives the host-access rules only when the authorizer allows the verb; never the router labels or the opt-out list', () => {
    const spec = find(synth(), 'ValidatingAdmissionPolicy', POLICY).spec;
    const variable = (name: string) => spec.variables.find((v: any) => v.name === name).expression;
    expect(variable('askedOptOut')).toBe('object.metadata.?annotations[?"agents.x-k8s.io/allow-privileged"].orValue(\'\') == \'true\'');
    const optedOut = variable('optedOut');
    expect(optedOut).toMatch(/^variables\.askedOptOut && /);
    expect(optedOut).toContain('authorizer.group(request.resource.group).resource(request.resource.resource).namespace(request.namespace).check("allow-privileged").allowed()');
    const waivable = spec.validations.filter((v: any) => v.expression.startsWith('variables.optedOut || '));
    expect(waivable).toHaveLength(spec.validations.length - 2);
    expect(spec.validations.filter((v: any) => !waivable.includes(v)).map(messageOf)).toEqual([
      expect.stringContaining('spec.podTemplate.metadata.labels carry a label of the sandbox router\'s Pods'),
      expect.stringContaining('agents.x-k8s.io/secure-defaults-opt-out'),
    ]);
  });

  test.each<[string, AgentSandboxSystemProps, string]>([
    ['the default router labels', {}, '("app" in variables.podLabels && variables.podLabels["app"] == "sandbox-router")'],
    // Any one pair: a template with one and a claim with the other must not add up to the router.
    ['the bundle router\'s labels', { router: { podLabels: { tier: 'edge', name: 'r' } } },
      '("name" in variables.podLabels && variables.podLabels["name"] == "r") || ("tier" in variables.podLabels && variables.podLabels["tier"] == "edge")'],
    ['controller.routerPodLabels for a router deployed elsewhere', { controller: { routerPodLabels: { role: 'router' } } }, '("role" in variables.podLabels && variables.podLabels["role"] == "router")'],
  ])('the refused router labels follow %s, in both policies', (_, props, expression) => {
    const objects = synth(props);
    for (const name of [POLICY, CLAIM_POLICY]) {
      expect(validations(objects, name).filter((v) => v.expression === `!(${expression})`)).toHaveLength(1);
    }
  });

  test('allowed capabilities: the runtime default set unless given', () => {
    const capsRule = (objects: any[]) => validations(objects).find((v) => messageOf(v).includes('containers[')
      && messageOf(v).includes('capabilities.add')).expression;
    expect(capsRule(synth())).toContain('["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"]');
    expect(capsRule(synth({ admissionPolicyAllowedCapabilities: ['NET_BIND_SERVICE'] }))).toContain('in ["NET_BIND_SERVICE"]');
    expect(capsRule(synth({ admissionPolicyAllowedCapabilities: [] }))).toContain('in []');
  });

  test('the claim policy refuses an unconfined AppArmor annotation, for everyone', () => {
    const claims = find(synth(), 'ValidatingAdmissionPolicy', CLAIM_POLICY).spec;
    expect(claims.matchConditions[1].expression).toContain('object.spec.?additionalPodMetadata.?annotations.orValue({}) != oldObject.spec.?additionalPodMetadata.?annotations.orValue({})');
    const rule = claims.validations.find((v: any) => messageOf(v).includes('spec.additionalPodMetadata.annotations['));
    expect(rule.expression).toMatch(/^!\(variables\.podAnnotations\.exists\(k, k\.startsWith\("container\.apparmor\.security\.beta\.kubernetes\.io\/"\)/);
    expect(messageOf(rule)).toContain('does not waive this');
  });

  test.each<[AgentSandboxSystemProps, string]>([
    [{ admissionPolicyAllowedCapabilities: ['net_admin'] }, 'admissionPolicyAllowedCapabilities[0]: "net_admin" is not a capability name; write it in upper case without the CAP_ prefix, e.g. "NET_BIND_SERVICE"'],
    [{ admissionPolicyAllowedCapabilities: ['CHOWN', 'CAP_SETUID'] }, 'admissionPolicyAllowedCapabilities[1]: "CAP_SETUID" is not a capability name'],
    [{ admissionPolicyAllowedCapabilities: ['ALL'] }, '("ALL" is not allowed)'],
    [{ admissionPolicy: false, admissionPolicyAllowedCapabilities: ['CHOWN'] }, 'admissionPolicyAllowedCapabilities: is set but admissionPolicy is false; drop one of them'],
    [{ admissionPolicy: 'yes' as unknown as boolean }, 'admissionPolicy: "yes" must be true or false'],
  ])('bad props: %j', (props, expected) => {
    const message = errorOf((chart) => new AgentSandboxSystem(chart, 'system', props));
    expect(message).toContain('AgentSandboxSystem test/system: invalid props');
    expect(message).toContain(expected);
  });
});

describe('the opt-in credentials policy', () => {
  const NAME = 'agent-sandbox-credentials';
  const policyOf = (objects: any[]) => objects.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === NAME);

  test('off by default: no policy, binding or ClusterRole', () => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system');
    const objects = Testing.synth(chart);
    expect(system.credentialsPolicy).toBeUndefined();
    expect(objects.filter((o) => o.metadata.name === NAME || o.metadata.name === AgentSandboxSystem.ALLOW_CREDENTIALS_CLUSTER_ROLE)).toEqual([]);
  });

  test('on: a Deny-bound policy on Sandboxes and SandboxTemplates, the operator exempt, and its waiver ClusterRole unbound', () => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system', { namespace: 'ops', credentialsPolicy: true, admissionPolicy: false });
    const objects = Testing.synth(chart);
    expect(system.credentialsPolicy?.name).toBe(NAME);
    const spec = policyOf(objects).spec;
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules.map((r: any) => r.resources)).toEqual([['sandboxes'], ['sandboxtemplates']]);
    expect(spec.matchConditions[0]).toEqual({ name: 'not-the-operator', expression: 'request.userInfo.username != "system:serviceaccount:ops:agent-sandbox-controller"' });
    expect(spec.matchConditions[1].expression).toContain('object.metadata.?annotations[?"agents.x-k8s.io/allow-credentials"]');
    expect(find(objects, 'ValidatingAdmissionPolicyBinding', NAME).spec).toEqual({ policyName: NAME, validationActions: ['Deny'] });
    const role = find(objects, 'ClusterRole', AgentSandboxSystem.ALLOW_CREDENTIALS_CLUSTER_ROLE);
    expect(role.rules).toEqual([
      { apiGroups: [SANDBOXES], resources: ['sandboxes'], verbs: ['allow-credentials'] },
      { apiGroups: [EXTENSIONS], resources: ['sandboxtemplates'], verbs: ['allow-credentials'] },
    ]);
    expect(ofKind(objects, 'ClusterRoleBinding', 'RoleBinding').filter((b) => b.roleRef.name === role.metadata.name)).toEqual([]);
    const granted = spec.variables.find((v: any) => v.name === 'waived').expression;
    expect(granted).toBe('variables.askedWaiver && authorizer.group(request.resource.group).resource(request.resource.resource).namespace(request.namespace).check("allow-credentials").allowed()');
    for (const v of spec.validations) {
      expect(v.expression).toMatch(/^variables\.waived \|\| !\(/);
      expect(v.messageExpression).toMatch(/\+ variables\.waiverHint$/);
    }
  });

  test('the allow-lists: only default and the given ServiceAccounts and Secrets; tokens refused unless allowed', () => {
    const expressions = (props: AgentSandboxSystemProps) => policyOf(synth({ credentialsPolicy: true, ...props })).spec.validations.map((v: any) => v.expression).join('\n');
    const plain = expressions({});
    expect(plain).toContain('!(variables.pod.?serviceAccountName.orValue(\'default\') in ["default"])');
    expect(plain).toContain('in [])');
    expect(plain).toContain('variables.pod.?automountServiceAccountToken.orValue(false)');
    expect(plain).toContain('has(s.serviceAccountToken)');
    for (const field of ['v.secret.?secretName', 's.secret.?name', 'v.csi.nodePublishSecretRef.?name', 'e.valueFrom.secretKeyRef.?name', 'f.secretRef.?name']) expect(plain).toContain(`!(${field}.orValue('') in [])`);
    for (const list of ['containers', 'initContainers', 'ephemeralContainers']) expect(plain).toContain(`variables.pod.?${list}.orValue([]).exists(c, c.?env`);
    const given = expressions({ credentialsPolicyServiceAccounts: ['runner'], credentialsPolicySecrets: ['shared', 'ca'], credentialsPolicyServiceAccountTokens: true });
    expect(given).toContain('in ["default", "runner"])');
    expect(given).toContain('in ["shared", "ca"])');
    expect(given).not.toContain('automountServiceAccountToken');
    expect(given).not.toContain('serviceAccountToken');
  });

  test.each<[AgentSandboxSystemProps, string]>([
    [{ credentialsPolicySecrets: ['a'] }, 'credentialsPolicySecrets: is set but credentialsPolicy is not true; set credentialsPolicy to true or drop it'],
    [{ credentialsPolicy: false, credentialsPolicyServiceAccountTokens: true }, 'credentialsPolicyServiceAccountTokens: is set but credentialsPolicy is not true'],
    [{ credentialsPolicy: true, credentialsPolicyServiceAccounts: ['ok', 'Not_A_Name'] }, 'credentialsPolicyServiceAccounts[1]: "Not_A_Name" is not a ServiceAccount name:'],
    [{ credentialsPolicy: true, credentialsPolicySecrets: [''] }, 'credentialsPolicySecrets[0]: "" is not a Secret name:'],
    [{ credentialsPolicy: 'yes' as unknown as boolean }, 'credentialsPolicy: "yes" must be true or false'],
    [{ credentialsPolicy: true, credentialsPolicyServiceAccountTokens: 1 as unknown as boolean }, 'credentialsPolicyServiceAccountTokens: 1 must be true or false'],
  ])('bad props: %j', (props, expected) => {
    const message = errorOf((chart) => new AgentSandboxSystem(chart, 'system', props));
    expect(message).toContain('AgentSandboxSystem test/system: invalid props');
    expect(message).toContain(expected);
  });
});

describe('AgentSandboxExtensions', () => {
  test('only the extension layer', () => {
    expect(forSnapshot(layer())).toMatchSnapshot();
  });

  test('extension CRDs first, then the extension RBAC and the Deployment with --extensions=true', () => {
    const objects = layer();
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'CustomResourceDefinition/sandboxtemplates.extensions.agents.x-k8s.io',
      'CustomResourceDefinition/sandboxwarmpools.extensions.agents.x-k8s.io',
      'CustomResourceDefinition/sandboxclaims.extensions.agents.x-k8s.io',
      'ClusterRole/agent-sandbox-controller-extensions',
      'ClusterRoleBinding/agent-sandbox-controller-extensions',
      'Deployment/agent-sandbox-controller',
    ]);
    expect(controllerContainer(objects).args).toEqual(['controller', '--extensions=true']);
  });

  test('core + extensions layer = the all-in-one install', () => {
    const key = (o: any) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const core = synth({ extensions: false });
    const ext = layer();
    const merged = new Map(core.map((o) => [key(o), o]));
    for (const o of ext) merged.set(key(o), o); // kubectl apply of the layer replaces the Deployment
    const all = new Map(synth().map((o) => [key(o), o]));
    expect([...merged.keys()].sort()).toEqual([...all.keys()].sort());
    for (const [k, o] of all) expect(merged.get(k)).toEqual(o);
  });
});

describe('operator RBAC against the requests the operator makes', () => {
  // The unbound opt-out role is for people, not the operator; its own tests are below.
  const clusterRoles = (objects: any[]) => ofKind(objects, 'ClusterRole').filter((r) => r.metadata.name !== AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE);

  test('core only: the Sandbox controller is refused nothing, and gets nothing only the extension controllers use', () => {
    const roles = clusterRoles(synth({ extensions: false }));
    expect(refused(roles, SANDBOX_CONTROLLER)).toEqual([]);
    expect(requestKeys(EXTENSION_ONLY)).toContain('create agents.x-k8s.io/sandboxes');
    expect(allowed(roles, EXTENSION_ONLY)).toEqual([]);
  });

  test('with extensions every controller is refused nothing', () => {
    expect(refused(clusterRoles(synth()), [...SANDBOX_CONTROLLER, ...EXTENSION_CONTROLLERS])).toEqual([]);
  });

  test('a core-only install plus the AgentSandboxExtensions layer grants what the all-in-one install does', () => {
    const roles = [...clusterRoles(synth({ extensions: false })), ...clusterRoles(layer())];
    expect(refused(roles, [...SANDBOX_CONTROLLER, ...EXTENSION_CONTROLLERS])).toEqual([]);
    expect(grants(roles)).toEqual(grants(clusterRoles(synth())));
  });

  test('leases only through the leader-election Role, never cluster-wide', () => {
    const objects = synth();
    expect(refused(ofKind(objects, 'Role'), LEADER_ELECTION)).toEqual([]);
    expect(allowed(clusterRoles(objects), LEADER_ELECTION)).toEqual([]);
  });

  test('no wildcards, non-resource URLs, Secrets or privilege-escalation verbs in any role', () => {
    const roles = [...ofKind(synth({ router: {}, flowControl: {} }), 'ClusterRole', 'Role'), ...clusterRoles(layer())];
    expect(roles.length).toBeGreaterThanOrEqual(4);
    for (const rule of roles.flatMap((role) => role.rules)) {
      expect(rule.nonResourceURLs).toBeUndefined();
      expect(rule.resourceNames).toBeUndefined();
      for (const list of [rule.apiGroups, rule.resources, rule.verbs]) expect(list).not.toContain('*');
      expect(rule.resources).not.toContain('secrets');
      for (const verb of ['escalate', 'bind', 'impersonate', 'deletecollection']) expect(rule.verbs).not.toContain(verb);
    }
  });

  test('grants beyond the operator\'s own requests are exactly these', () => {
    const roles = clusterRoles(synth());
    const needed = new Set(requestKeys([...SANDBOX_CONTROLLER, ...EXTENSION_CONTROLLERS]));
    // Reads and full updates the operator does not make today, and core-group Events, which it
    // writes only through events.k8s.io; kept so the role stays a superset of upstream's.
    expect(grants(roles).filter((g) => !needed.has(g))).toEqual([
      'create /events',
      'get agents.x-k8s.io/sandboxes',
      'get agents.x-k8s.io/sandboxes/status',
      'get extensions.agents.x-k8s.io/sandboxclaims',
      'get extensions.agents.x-k8s.io/sandboxclaims/status',
      'get extensions.agents.x-k8s.io/sandboxtemplates',
      'get extensions.agents.x-k8s.io/sandboxtemplates/status',
      'get extensions.agents.x-k8s.io/sandboxwarmpools',
      'get extensions.agents.x-k8s.io/sandboxwarmpools/status',
      'get networking.k8s.io/networkpolicies',
      'patch /events',
      'patch events.k8s.io/events',
      'patch networking.k8s.io/networkpolicies',
      'update /services',
      'update agents.x-k8s.io/sandboxes',
      'update agents.x-k8s.io/sandboxes/status',
      'update extensions.agents.x-k8s.io/sandboxclaims',
      'update extensions.agents.x-k8s.io/sandboxclaims/status',
      'update extensions.agents.x-k8s.io/sandboxtemplates/status',
      'update extensions.agents.x-k8s.io/sandboxwarmpools/status',
    ]);
  });
});

describe('how the install\'s objects fit together', () => {
  test('every binding names the ServiceAccount the operator runs as, and a role the install emits', () => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system', { namespace: 'ops', controller: { leaderElectionNamespace: 'kube-system' } });
    const objects = Testing.synth(chart);
    const accounts = ofKind(objects, 'ServiceAccount');
    expect(accounts).toHaveLength(1);
    const account = accounts[0].metadata;
    expect(account).toMatchObject({ name: system.serviceAccountName, namespace: 'ops' });
    const deployment = find(objects, 'Deployment', 'agent-sandbox-controller');
    expect(deployment.metadata.namespace).toBe(account.namespace);
    expect(deployment.spec.template.spec.serviceAccountName).toBe(account.name);

    const bindings = ofKind(objects, 'ClusterRoleBinding', 'RoleBinding');
    expect(bindings.map((b) => b.kind).sort()).toEqual(['ClusterRoleBinding', 'ClusterRoleBinding', 'RoleBinding']);
    for (const binding of bindings) {
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.name, namespace: account.namespace }]);
      const role = find(objects, binding.roleRef.kind, binding.roleRef.name);
      expect(role.metadata.namespace).toBe(binding.metadata.namespace);
    }
  });

  test('the operator looks for its Lease where the leader-election Role grants leases', () => {
    const roleNamespace = (objects: any[]) => find(objects, 'Role', 'agent-sandbox-controller').metadata.namespace;
    // Without the flag the operator uses the namespace its pod runs in.
    const defaults = synth({ namespace: 'ops' });
    expect(controllerContainer(defaults).args.some((a: string) => a.startsWith('--leader-election-namespace'))).toBe(false);
    expect(roleNamespace(defaults)).toBe(find(defaults, 'Deployment', 'agent-sandbox-controller').metadata.namespace);
    const moved = synth({ namespace: 'ops', controller: { leaderElectionNamespace: 'kube-system' } });
    expect(controllerContainer(moved).args).toContain('--leader-election-namespace=kube-system');
    expect(roleNamespace(moved)).toBe('kube-system');
  });

  test('Deployments select their own pods; Services select them and target ports they declare', () => {
    const objects = synth({ router: {} });
    const deployments = ofKind(objects, 'Deployment');
    expect(deployments).toHaveLength(2);
    for (const deployment of deployments) {
      expect(selects(deployment.spec.selector.matchLabels, deployment)).toBe(true);
      for (const container of deployment.spec.template.spec.containers) {
        const names = container.ports.map((p: any) => p.name);
        for (const probe of [container.livenessProbe, container.readinessProbe]) expect(names).toContain(probe.httpGet.port);
      }
    }
    for (const service of ofKind(objects, 'Service')) {
      const backends = deployments.filter((d) => d.metadata.namespace === service.metadata.namespace && selects(service.spec.selector, d));
      expect(backends).toHaveLength(1);
      const names = backends[0].spec.template.spec.containers.flatMap((c: any) => c.ports.map((p: any) => p.name));
      for (const port of service.spec.ports) expect(names).toContain(port.targetPort);
    }
  });

  test('cluster-scoped objects carry no namespace; everything else is in the install namespace', () => {
    const objects = synth({ namespace: 'ops', router: {}, flowControl: {} });
    const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'PriorityLevelConfiguration', 'FlowSchema',
      'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
    expect(new Set(objects.map((o) => o.kind))).toEqual(new Set([...clusterScoped, 'ServiceAccount', 'Role', 'RoleBinding', 'Deployment', 'PodDisruptionBudget', 'Service']));
    const namespaceOf = (expected: (o: any) => string | undefined) =>
      Object.fromEntries(objects.map((o) => [`${o.kind}/${o.metadata.name}`, expected(o)]));
    expect(namespaceOf((o) => o.metadata.namespace)).toEqual(namespaceOf((o) => (clusterScoped.includes(o.kind) ? undefined : 'ops')));
  });

  test('the router and flow control appear only when asked for', () => {
    const build = (props: AgentSandboxSystemProps) => {
      const chart = Testing.chart();
      return { system: new AgentSandboxSystem(chart, 'system', props), objects: Testing.synth(chart) };
    };
    const plain = build({});
    expect(plain.system.routerDeployment).toBeUndefined();
    expect(plain.system.flowControl).toBeUndefined();
    expect(plain.objects.filter((o) => o.metadata.name.startsWith('sandbox-router'))).toEqual([]);
    expect(ofKind(plain.objects, 'FlowSchema', 'PriorityLevelConfiguration')).toEqual([]);
    expect(ofKind(plain.objects, 'Deployment').map((d) => d.metadata.name)).toEqual(['agent-sandbox-controller']);

    const full = build({ router: {}, flowControl: {} });
    expect(full.system.routerDeployment?.name).toBe('sandbox-router');
    expect(full.system.routerDeployment?.kind).toBe('Deployment');
    expect(full.objects.filter((o) => o.metadata.name.startsWith('sandbox-router')).map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    expect(full.system.flowControl?.flowSchemas).toHaveLength(3);
    expect(ofKind(full.objects, 'FlowSchema', 'PriorityLevelConfiguration')).toHaveLength(5);
  });

  /** A flag's value in the operator's args, parsed with the table the operator parses them with. */
  function flagValue(args: string[], name: string): string {
    const arg = args.find((a) => a.startsWith(`--${name}=`));
    const flag = controllerFlag(name)!;
    const parsed = parseControllerFlagValue(flag, arg === undefined ? String(flag.default) : arg.slice(name.length + 3));
    if (parsed.error !== undefined) throw new Error(parsed.error);
    return String(parsed.value);
  }

  /** Whether a NetworkPolicy peer admits the Pods of `deployment` (namespaces carry their kubernetes.io/metadata.name label). */
  const admits = (peer: any, deployment: any) =>
    Object.keys(peer).sort().join() === 'namespaceSelector,podSelector'
    && JSON.stringify(peer.namespaceSelector) === JSON.stringify({ matchLabels: { 'kubernetes.io/metadata.name': deployment.metadata.namespace } })
    && selects(peer.podSelector.matchLabels, deployment);

  test.each([
    ['the defaults', {}],
    ['another namespace', { namespace: 'ops' }],
    ['another namespace and router labels', { namespace: 'edge', router: { podLabels: { 'app.kubernetes.io/name': 'router', 'tier': 'edge' } } }],
  ] as Array<[string, AgentSandboxSystemProps]>)('%s: the router Pods are what the operator\'s policy, AllowRouterIngress and template rules admit', (_, props) => {
    const chart = Testing.chart();
    const system = new AgentSandboxSystem(chart, 'system', { router: {}, ...props });
    new AllowRouterIngress(chart, 'allow', { routerNamespace: system.namespace, routerPodLabels: system.routerPodLabels });
    new SandboxTemplate(chart, 'tpl', {
      metadata: { name: 'custom' },
      containers: [{ image: 'python:3.12-slim' }],
      network: { routerNamespace: system.namespace, routerPodLabels: system.routerPodLabels, egress: [], dns: DnsAccess.none() },
    });
    const objects = Testing.synth(chart);
    const router = find(objects, 'Deployment', 'sandbox-router');
    const args = controllerContainer(objects).args;
    expect(args).toContain(`--router-namespace=${system.namespace}`);
    // The operator builds its default per-template policy from these two flags (operator/src/controllers/template/controller.ts).
    const labels = parseLabelList(flagValue(args, 'router-pod-labels'));
    if (typeof labels === 'string') throw new Error(labels);
    const operatorPolicy = defaultSandboxNetworkPolicySpec('python', flagValue(args, 'router-namespace'), Object.keys(labels).length ? labels : undefined);
    expect(admits(operatorPolicy.ingress![0].from![0], router)).toBe(true);
    expect(admits(ofKind(objects, 'NetworkPolicy')[0].spec.ingress[0].from[0], router)).toBe(true);
    expect(admits(ofKind(objects, 'SandboxTemplate')[0].spec.networkPolicy.ingress[0].from[0], router)).toBe(true);
    for (const kind of ['Service', 'PodDisruptionBudget']) {
      const selector = ofKind(objects, kind).find((o) => o.metadata.name.startsWith('sandbox-router')).spec.selector;
      expect(selects(selector.matchLabels ?? selector, router)).toBe(true);
    }
  });

  test('the router labels are passed to the operator only when they differ from app=sandbox-router', () => {
    expect(argsOf({ router: {} }).filter((a: string) => a.startsWith('--router-'))).toEqual(['--router-namespace=agent-sandbox-system']);
    expect(argsOf({ router: { podLabels: { b: '2', a: '1' } } })).toContain('--router-pod-labels=a=1,b=2');
    expect(argsOf({}).filter((a: string) => a.startsWith('--router-'))).toEqual([]);
    expect(argsOf({ controller: { routerNamespace: 'edge', routerPodLabels: { app: 'edge-router' } } }))
      .toEqual(expect.arrayContaining(['--router-namespace=edge', '--router-pod-labels=app=edge-router']));
  });

  test('flow control matches the ServiceAccount the install emits', () => {
    const objects = synth({ namespace: 'ops', flowControl: {} });
    const account = ofKind(objects, 'ServiceAccount')[0].metadata;
    for (const schema of ofKind(objects, 'FlowSchema')) {
      for (const rule of schema.spec.rules) {
        expect(rule.subjects).toEqual([{ kind: 'ServiceAccount', serviceAccount: { name: account.name, namespace: account.namespace } }]);
      }
    }
  });
});
