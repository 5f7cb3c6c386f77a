import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import {
  AgentSandboxSystem, AgentSandboxSystemProps, EnvFrom, EnvValue, NodeSelectorOperator, ObjectRef, SandboxCrds, SandboxFlowControl,
  SandboxRuntimeClass, WhenUnsatisfiable,
} from '../src';
import { POD_SPEC_SCHEMA } from '../src/api/generated/k8s-schemas';
import { schemaValueErrors } from '../src/api/schema-values';

const CLUSTER_SCOPED = ['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'RuntimeClass', 'FlowSchema',
  'PriorityLevelConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'Namespace'];

function synth(props: ConstructorParameters<typeof AgentSandboxSystem>[2] = {}, chartNamespace?: string): any[] {
  const chart = new Chart(Testing.app(), 'test', { namespace: chartNamespace, disableResourceNameHashes: true });
  new AgentSandboxSystem(chart, 'system', props);
  return Testing.synth(chart);
}

const find = (objs: any[], kind: string, name?: string) => objs.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const operatorPod = (objs: any[]) => find(objs, 'Deployment', 'agent-sandbox-controller').spec.template;

describe('AgentSandboxSystem install knobs', () => {
  test('defaults stay as they were: no PDB, ServiceMonitor, PrometheusRule or dashboard', () => {
    const kinds = synth().map((o) => o.kind);
    for (const kind of ['PodDisruptionBudget', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap']) expect(kinds).not.toContain(kind);
    expect(kinds.filter((k) => k === 'CustomResourceDefinition')).toHaveLength(4);
  });

  test('operator Pod: pull secrets, node selector, tolerations, affinity, annotations, labels, extra args', () => {
    const chart = new Chart(Testing.app(), 'test', { disableResourceNameHashes: true });
    const pull = new ApiObject(chart, 'pull', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'regcred', namespace: 'agent-sandbox-system' } });
    new AgentSandboxSystem(chart, 'system', {
      imagePullSecrets: [ObjectRef.fromConstruct(pull), ObjectRef.fromName('mirror')],
      nodeSelector: { 'node-role.kubernetes.io/control-plane-addons': '' },
      tolerations: [{ key: 'addons', effect: 'NoSchedule' }],
      affinity: { requiredNodeTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: NodeSelectorOperator.IN, values: ['linux'] }] }] },
      podAnnotations: { 'prometheus.io/scrape': 'true' },
      podLabels: { team: 'platform' },
      extraArgs: ['--some-newer-flag=1'],
      priorityClass: ObjectRef.fromName('system-cluster-critical'),
      topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: WhenUnsatisfiable.SCHEDULE_ANYWAY }],
      env: { HTTPS_PROXY: 'http://proxy.internal:3128' },
      envValues: { PROXY_PASSWORD: EnvValue.fromSecretKey(ObjectRef.fromConstruct(pull), 'password'), POD_NAME: EnvValue.fromField('metadata.name') },
      envFrom: [EnvFrom.configMap(ObjectRef.fromName('operator-tuning'), { prefix: 'TUNE_' })],
    });
    const template = operatorPod(Testing.synth(chart));
    expect(template).toMatchSnapshot();
    expect(template.spec.priorityClassName).toBe('system-cluster-critical');
    // A constraint without matchLabels counts the operator's own Pods (the Deployment's selector).
    expect(template.spec.topologySpreadConstraints).toEqual([{
      maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: 'agent-sandbox-controller' } },
    }]);
    expect(template.spec.containers[0].env).toEqual([
      { name: 'HTTPS_PROXY', value: 'http://proxy.internal:3128' },
      { name: 'PROXY_PASSWORD', valueFrom: { secretKeyRef: { name: 'regcred', key: 'password' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    expect(template.spec.containers[0].envFrom).toEqual([{ prefix: 'TUNE_', configMapRef: { name: 'operator-tuning' } }]);
    expect(template.metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true' });
    expect(template.metadata.labels).toMatchObject({ team: 'platform', app: 'agent-sandbox-controller' });
    expect(template.spec.imagePullSecrets).toEqual([{ name: 'regcred' }, { name: 'mirror' }]);
    expect(template.spec.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane-addons': '' });
    expect(template.spec.tolerations).toEqual([{ key: 'addons', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toHaveLength(1);
    expect(template.spec.containers[0].args.at(-1)).toBe('--some-newer-flag=1');
  });

  test('router Pods share the operator\'s pull secrets, node selector and tolerations (same image, same nodes), not its affinity', () => {
    const chart = new Chart(Testing.app(), 'test', { disableResourceNameHashes: true });
    const pull = new ApiObject(chart, 'pull', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'regcred', namespace: 'agent-sandbox-system' } });
    new AgentSandboxSystem(chart, 'system', {
      router: {},
      imagePullSecrets: [ObjectRef.fromConstruct(pull)],
      nodeSelector: { pool: 'addons' },
      tolerations: [{ key: 'addons', effect: 'NoSchedule' }],
      affinity: { requiredNodeTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: NodeSelectorOperator.IN, values: ['linux'] }] }] },
    });
    const router = find(Testing.synth(chart), 'Deployment', 'sandbox-router').spec.template.spec;
    expect(router.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(router.nodeSelector).toEqual({ pool: 'addons' });
    expect(router.tolerations).toEqual([{ key: 'addons', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(router.affinity).toBeUndefined();
    const plain = find(synth({ router: {} }), 'Deployment', 'sandbox-router').spec.template.spec;
    expect([plain.imagePullSecrets, plain.nodeSelector, plain.tolerations]).toEqual([undefined, undefined, undefined]);
  });

  test('bad pod knobs fail naming the prop and the fix', () => {
    const chart = Testing.chart();
    const cm = new ApiObject(chart, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    let n = 0;
    const run = () => new AgentSandboxSystem(chart, `system${n++}`, {
      imagePullSecrets: [ObjectRef.fromConstruct(cm)],
      extraArgs: ['--log-level=debug', '--extensions=false'],
      podLabels: { app: 'mine' },
      tolerations: [{ key: 'a', effect: 'Never' }],
    });
    expect(run).toThrow(/imagePullSecrets\[0\]: construct test\/cm is a ConfigMap \(v1\) but a Secret is expected/);
    expect(run).toThrow(/extraArgs\[0\]: "--log-level=debug" is a flag ControllerOptions covers; set controller.logLevel instead/);
    expect(run).toThrow(/extraArgs\[1\]: "--extensions=false" is set by the install; use the extensions prop/);
    expect(run).toThrow(/tolerations\[0\]\.effect: "Never" must be one of/);
    expect(run).toThrow(/podLabels\["app"\]: is the Deployment's selector/);
  });

  test('podDisruptionBudget: off by default, maxUnavailable 1 with {}, minAvailable checked against replicas', () => {
    expect(find(synth({ podDisruptionBudget: {} }), 'PodDisruptionBudget').spec)
      .toEqual({ maxUnavailable: 1, selector: { matchLabels: { app: 'agent-sandbox-controller' } } });
    expect(find(synth({ replicas: 3, podDisruptionBudget: { minAvailable: 2 } }), 'PodDisruptionBudget').spec.minAvailable).toBe(2);
    expect(() => synth({ podDisruptionBudget: { minAvailable: 1 } })).toThrow(/podDisruptionBudget.minAvailable: 1 with 1 replica\(s\) would block every node drain/);
    expect(() => synth({ podDisruptionBudget: { maxUnavailable: 0 } })).toThrow(/podDisruptionBudget.maxUnavailable: 0 would block every node drain/);
    expect(() => synth({ podDisruptionBudget: { maxUnavailable: 1, minAvailable: 1 } })).toThrow(/give maxUnavailable or minAvailable, not both/);
  });

  test('ServiceMonitor scrapes the metrics Service port', () => {
    const sm = find(synth({ serviceMonitor: { interval: Duration.seconds(15), labels: { release: 'kube-prometheus' } } }), 'ServiceMonitor');
    expect(sm).toMatchSnapshot();
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(sm.metadata.labels.release).toBe('kube-prometheus');
    expect(sm.spec).toEqual({
      selector: { matchLabels: { app: 'agent-sandbox-controller' } },
      namespaceSelector: { matchNames: ['agent-sandbox-system'] },
      endpoints: [{ port: 'metrics', interval: '15s' }],
    });
  });

  test('PrometheusRule alerts on the operator metric names, thresholds as given', () => {
    const rule = find(synth({ prometheusRule: { claimNotReadyFor: Duration.minutes(3), warmPoolBelowTargetFor: Duration.minutes(15), reconcileErrorsPerSecond: 0.5, severity: 'page' } }), 'PrometheusRule');
    expect(rule).toMatchSnapshot();
    const rules = rule.spec.groups[0].rules;
    expect(rules.map((r: any) => r.alert)).toEqual(['AgentSandboxClaimNotReady', 'AgentSandboxWarmPoolBelowTarget', 'AgentSandboxReconcileErrors']);
    expect(rules[0].expr).toBe('max by (namespace) (agent_sandbox_claim_oldest_not_ready_age_seconds) > 180');
    expect(rules[1].expr).toContain('agent_sandbox_warmpool_ready_replicas');
    expect(rules[1].for).toBe('15m');
    expect(rules[2].expr).toBe('sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) > 0.5');
    expect(rules.every((r: any) => r.labels.severity === 'page')).toBe(true);
    expect(() => synth({ prometheusRule: { claimNotReadyFor: Duration.seconds(30) } })).toThrow(/prometheusRule.claimNotReadyFor: must be a whole number of seconds, at least a minute/);
  });

  test('Grafana dashboard ConfigMap: labelled for the sidecar, four panels on the operator metrics', () => {
    const cm = find(synth({ grafanaDashboard: { namespace: 'monitoring', folder: 'Agents' } }), 'ConfigMap');
    expect(cm.metadata).toMatchObject({ name: 'agent-sandbox-controller-dashboard', namespace: 'monitoring', annotations: { grafana_folder: 'Agents' } });
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    const dashboard = JSON.parse(cm.data['agent-sandbox.json']);
    expect(dashboard.panels.map((p: any) => p.title)).toEqual([
      'Claim startup latency (controller, to Ready)', 'Warm pool depth (ready / target)', 'Refill and claim rate', 'Reconcile errors',
    ]);
    const exprs = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr)).join('\n');
    for (const metric of ['agent_sandbox_claim_controller_startup_latency_ms_bucket', 'agent_sandbox_warmpool_ready_replicas',
      'agent_sandbox_warmpool_replicas', 'agent_sandbox_warmpool_sandboxes_created_total', 'controller_runtime_reconcile_errors_total']) {
      expect(exprs).toContain(metric);
    }
    expect(find(synth({ grafanaDashboard: { labels: { dashboards: 'agents' } } }), 'ConfigMap').metadata.labels).toMatchObject({ dashboards: 'agents' });
    expect(() => synth({ grafanaDashboard: { labels: {} } })).toThrow(/grafanaDashboard.labels: must not be empty/);
  });

  test('crds: false leaves the CRDs out; SandboxCrds alone gives them', () => {
    const objs = synth({ crds: false });
    expect(objs.map((o) => o.kind)).not.toContain('CustomResourceDefinition');
    expect(objs[0].kind).toBe('Namespace');
    const chart = Testing.chart();
    new SandboxCrds(chart, 'crds');
    expect(Testing.synth(chart).map((o) => o.kind)).toEqual(Array(4).fill('CustomResourceDefinition'));
  });

  test('cluster-scoped objects never carry metadata.namespace, even in a chart with a namespace', () => {
    const chart = new Chart(Testing.app(), 'test', { namespace: 'platform', disableResourceNameHashes: true });
    new AgentSandboxSystem(chart, 'system', { namespace: 'platform', router: {}, flowControl: {} });
    SandboxRuntimeClass.gvisor(chart, 'gvisor');
    new SandboxFlowControl(chart, 'apf');
    new SandboxCrds(chart, 'crds');
    const objs = Testing.synth(chart);
    const clusterScoped = objs.filter((o) => CLUSTER_SCOPED.includes(o.kind));
    expect(new Set(clusterScoped.map((o) => o.kind))).toEqual(new Set(['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding',
      'RuntimeClass', 'FlowSchema', 'PriorityLevelConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']));
    for (const o of clusterScoped) expect([o.kind, o.metadata.name, o.metadata.namespace]).toEqual([o.kind, o.metadata.name, undefined]);
    for (const o of objs.filter((x) => !CLUSTER_SCOPED.includes(x.kind))) expect(o.metadata.namespace).toBe('platform');
  });
});

describe('SandboxFlowControl serviceAccount', () => {
  test('takes the name and namespace of a ServiceAccount construct', () => {
    const chart = new Chart(Testing.app(), 'test', { namespace: 'ops', disableResourceNameHashes: true });
    const sa = new ApiObject(chart, 'sa', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'controller' } });
    new SandboxFlowControl(chart, 'apf', { serviceAccount: sa });
    const schemas = Testing.synth(chart).filter((o) => o.kind === 'FlowSchema');
    for (const fs of schemas) {
      expect(fs.spec.rules[0].subjects).toEqual([{ kind: 'ServiceAccount', serviceAccount: { name: 'controller', namespace: 'ops' } }]);
    }
  });

  test('a construct of another kind, or names given too, fail naming serviceAccount', () => {
    const chart = Testing.chart();
    const cm = new ApiObject(chart, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    expect(() => new SandboxFlowControl(chart, 'a', { serviceAccount: cm })).toThrow(/serviceAccount: construct test\/cm is a ConfigMap \(v1\) but a ServiceAccount is expected/);
    const sa = new ApiObject(chart, 'sa', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'x', namespace: 'n' } });
    expect(() => new SandboxFlowControl(chart, 'b', { serviceAccount: sa, serviceAccountName: 'y' })).toThrow(/serviceAccount: is given with serviceAccountName/);
  });
});

/**
 * What a Prometheus Operator could not scrape: for each ServiceMonitor, the Services it selects (by
 * namespace and labels) must exist, and each must have a port named as each endpoint's `port`.
 */
function scrapeProblems(objects: any[]): string[] {
  const problems: string[] = [];
  for (const monitor of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const namespaces: string[] = monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace];
    const selected = objects.filter((o) => o.kind === 'Service' && namespaces.includes(o.metadata.namespace)
      && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v));
    if (selected.length === 0) problems.push(`ServiceMonitor ${monitor.metadata.name} selects no Service`);
    for (const service of selected) {
      for (const endpoint of monitor.spec.endpoints) {
        if (!service.spec.ports.some((p: any) => p.name === endpoint.port)) {
          problems.push(`ServiceMonitor ${monitor.metadata.name} scrapes port "${endpoint.port}", which Service ${service.metadata.name} does not have`);
        }
      }
    }
  }
  return problems;
}

/** `Service name ← ServiceMonitor name` for every Service a ServiceMonitor selects. */
const scraped = (objects: any[]) => objects.filter((o) => o.kind === 'ServiceMonitor').flatMap((monitor) => objects
  .filter((o) => o.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v))
  .map((service) => `${service.metadata.name} <- ${monitor.metadata.name}`)).sort();

describe('ServiceMonitors scrape ports that exist', () => {
  test.each([
    ['the defaults', {}],
    ['another namespace, router labels and interval', { namespace: 'ops', router: { podLabels: { 'app.kubernetes.io/name': 'router' } }, serviceMonitor: { interval: Duration.seconds(10), labels: { release: 'prom' } } }],
  ] as Array<[string, AgentSandboxSystemProps]>)('%s: the operator\'s and the router\'s metrics are scraped by port name', (_, props) => {
    const objects = synth({ router: {}, serviceMonitor: {}, ...props });
    expect(scrapeProblems(objects)).toEqual([]);
    const routerService = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'sandbox-router-svc');
    expect(scraped(objects)).toEqual(['agent-sandbox-controller <- agent-sandbox-controller', 'sandbox-router-svc <- sandbox-router']);
    expect(routerService.spec.ports.find((p: any) => p.name === 'metrics')).toEqual({ name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' });
    const routerMonitor = find(objects, 'ServiceMonitor', 'sandbox-router');
    expect(routerMonitor.metadata.namespace).toBe(routerService.metadata.namespace);
    expect(routerMonitor.spec.endpoints).toEqual([{ port: 'metrics', interval: props.serviceMonitor?.interval ? '10s' : '30s' }]);
    if (props.serviceMonitor?.labels) expect(routerMonitor.metadata.labels).toMatchObject(props.serviceMonitor.labels);
  });

  test('negative controls: a Service without the port, or a selector that matches no Service, is reported', () => {
    const objects = synth({ router: {}, serviceMonitor: {} });
    const withoutPort = objects.map((o) => (o.kind === 'Service' && o.metadata.name === 'sandbox-router-svc'
      ? { ...o, spec: { ...o.spec, ports: o.spec.ports.filter((p: any) => p.name !== 'metrics') } } : o));
    expect(scrapeProblems(withoutPort)).toEqual(['ServiceMonitor sandbox-router scrapes port "metrics", which Service sandbox-router-svc does not have']);
    const elsewhere = objects.map((o) => (o.kind === 'ServiceMonitor' && o.metadata.name === 'agent-sandbox-controller'
      ? { ...o, spec: { ...o.spec, namespaceSelector: { matchNames: ['monitoring'] } } } : o));
    expect(scrapeProblems(elsewhere)).toEqual(['ServiceMonitor agent-sandbox-controller selects no Service']);
  });

  test('no router, no router ServiceMonitor; router without serviceMonitor, none at all', () => {
    expect(synth({ serviceMonitor: {} }).filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name)).toEqual(['agent-sandbox-controller']);
    expect(synth({ router: {} }).filter((o) => o.kind === 'ServiceMonitor')).toEqual([]);
  });

  test('--metrics-bind-address in router.args moves the metrics port, "0" removes it and the router ServiceMonitor', () => {
    const moved = synth({ router: { args: ['--metrics-bind-address=:9191'] }, serviceMonitor: {} });
    expect(scrapeProblems(moved)).toEqual([]);
    const movedPod = find(moved, 'Deployment', 'sandbox-router').spec.template.spec.containers[0];
    expect(movedPod.ports.find((p: any) => p.name === 'metrics').containerPort).toBe(9191);
    expect(find(moved, 'Service', 'sandbox-router-svc').spec.ports.find((p: any) => p.name === 'metrics').port).toBe(9191);
    const off = synth({ router: { args: ['--metrics-bind-address', '0'] }, serviceMonitor: {} });
    expect(scrapeProblems(off)).toEqual([]);
    expect(off.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name)).toEqual(['agent-sandbox-controller']);
    expect(find(off, 'Service', 'sandbox-router-svc').spec.ports.map((p: any) => p.name)).toEqual(['http']);
    expect(find(off, 'Deployment', 'sandbox-router').spec.template.spec.containers[0].ports.map((p: any) => p.name)).toEqual(['http', 'probes']);
    expect(() => synth({ router: { args: ['--auth=none', '--metrics-bind-address=9090'] } }))
      .toThrow(/router\.args\[1\]: --metrics-bind-address needs \[host\]:port with a port from 1 to 65535, such as ":9090", or "0" to turn metrics off; got "9090"/);
  });
});

describe('priority, env, ServiceAccount annotations and the router\'s own placement', () => {
  test('the router takes the operator\'s priority class unless it names its own; a construct counts as a reference', () => {
    const inherited = synth({ router: {}, priorityClass: ObjectRef.fromName('system-cluster-critical') });
    expect(operatorPod(inherited).spec.priorityClassName).toBe('system-cluster-critical');
    expect(find(inherited, 'Deployment', 'sandbox-router').spec.template.spec.priorityClassName).toBe('system-cluster-critical');
    const chart = new Chart(Testing.app(), 'test', { disableResourceNameHashes: true });
    const pc = new ApiObject(chart, 'pc', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'data-plane' }, value: 100000 });
    new AgentSandboxSystem(chart, 'system', { router: { priorityClass: pc }, priorityClass: ObjectRef.fromName('system-cluster-critical') });
    const own = Testing.synth(chart);
    expect(find(own, 'Deployment', 'sandbox-router').spec.template.spec.priorityClassName).toBe('data-plane');
    expect(operatorPod(own).spec.priorityClassName).toBe('system-cluster-critical');
    const none = synth({ router: {} });
    expect([operatorPod(none).spec.priorityClassName, find(none, 'Deployment', 'sandbox-router').spec.template.spec.priorityClassName]).toEqual([undefined, undefined]);
  });

  test('router placement: its own node selector, tolerations, affinity and spread; {} and [] for none', () => {
    const chart = new Chart(Testing.app(), 'test', { disableResourceNameHashes: true });
    new AgentSandboxSystem(chart, 'system', {
      nodeSelector: { pool: 'addons' },
      tolerations: [{ key: 'addons', effect: 'NoSchedule' }],
      affinity: { requiredNodeTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: NodeSelectorOperator.IN, values: ['linux'] }] }] },
      router: {
        podLabels: { 'app.kubernetes.io/name': 'router' },
        nodeSelector: { pool: 'edge' },
        tolerations: [{ key: 'edge', value: 'true', effect: 'NoExecute', tolerationSeconds: 60 }],
        affinity: { podAntiAffinity: [{ matchLabels: { 'app.kubernetes.io/name': 'router' }, topologyKey: 'kubernetes.io/hostname', weight: 100 }] },
        topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone' }],
        env: { NODE_OPTIONS: '--max-old-space-size=192' },
        envValues: { ROUTER_TOKEN: EnvValue.fromSecretKey(ObjectRef.fromName('router-token'), 'token', { optional: true }) },
        serviceAccountAnnotations: { 'iam.gke.io/gcp-service-account': 'router@project.iam.gserviceaccount.com' },
      },
      serviceAccountAnnotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/agent-sandbox' },
    });
    const objects = Testing.synth(chart);
    const router = find(objects, 'Deployment', 'sandbox-router').spec.template;
    expect(router).toMatchSnapshot();
    expect(router.spec.nodeSelector).toEqual({ pool: 'edge' });
    expect(router.spec.tolerations).toEqual([{ key: 'edge', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 60 }]);
    expect(router.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
    expect(router.spec.affinity.nodeAffinity).toBeUndefined();
    // A constraint without matchLabels counts the router Pods.
    expect(router.spec.topologySpreadConstraints[0].labelSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'router' } });
    expect(router.spec.containers[0].env).toEqual([
      { name: 'NODE_OPTIONS', value: '--max-old-space-size=192' },
      { name: 'ROUTER_TOKEN', valueFrom: { secretKeyRef: { name: 'router-token', key: 'token', optional: true } } },
    ]);
    // The operator keeps its own placement and environment.
    expect(operatorPod(objects).spec.nodeSelector).toEqual({ pool: 'addons' });
    expect(operatorPod(objects).spec.topologySpreadConstraints).toBeUndefined();
    expect(operatorPod(objects).spec.containers[0].env).toBeUndefined();
    expect(find(objects, 'ServiceAccount', 'sandbox-router').metadata.annotations).toEqual({ 'iam.gke.io/gcp-service-account': 'router@project.iam.gserviceaccount.com' });
    expect(find(objects, 'ServiceAccount', 'agent-sandbox-controller').metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/agent-sandbox' });

    const cleared = find(synth({ nodeSelector: { pool: 'addons' }, tolerations: [{ key: 'addons' }], router: { nodeSelector: {}, tolerations: [] } }), 'Deployment', 'sandbox-router');
    expect([cleared.spec.template.spec.nodeSelector, cleared.spec.template.spec.tolerations]).toEqual([undefined, undefined]);
    const plain = synth({ router: {} });
    for (const name of ['agent-sandbox-controller', 'sandbox-router']) expect(find(plain, 'ServiceAccount', name).metadata.annotations).toBeUndefined();
  });

  test('with every knob set, the operator and router Pod specs are what the Kubernetes Pod schema accepts, nothing pruned', () => {
    const objects = synth({
      priorityClass: ObjectRef.fromName('system-cluster-critical'),
      topologySpreadConstraints: [{ topologyKey: 'kubernetes.io/hostname', maxSkew: 2, minDomains: 2 }],
      affinity: { podAntiAffinity: [{ matchLabels: { app: 'agent-sandbox-controller' }, topologyKey: 'kubernetes.io/hostname' }] },
      nodeSelector: { pool: 'addons' },
      tolerations: [{ key: 'addons', effect: 'NoSchedule' }],
      env: { HTTPS_PROXY: 'http://proxy:3128' },
      envValues: { POD_IP: EnvValue.fromField('status.podIP'), TOKEN: EnvValue.fromConfigMapKey(ObjectRef.fromName('cfg'), 'token') },
      envFrom: [EnvFrom.secret(ObjectRef.fromName('creds'), { optional: true })],
      router: {
        priorityClass: ObjectRef.fromName('data-plane'),
        nodeSelector: {},
        affinity: { preferredNodeTerms: [{ weight: 50, matchExpressions: [{ key: 'pool', operator: NodeSelectorOperator.IN, values: ['edge'] }] }] },
        topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: WhenUnsatisfiable.SCHEDULE_ANYWAY }],
        env: { LOG: 'debug' },
        envFrom: [EnvFrom.configMap(ObjectRef.fromName('router-env'))],
      },
    });
    for (const name of ['agent-sandbox-controller', 'sandbox-router']) {
      expect(schemaValueErrors(POD_SPEC_SCHEMA, find(objects, 'Deployment', name).spec.template.spec, 'spec')).toEqual([]);
    }
    // Control: the check sees a misspelled field.
    const misspelled = { ...operatorPod(objects).spec, priorityClassname: 'x' };
    expect(schemaValueErrors(POD_SPEC_SCHEMA, misspelled, 'spec').join('\n')).toMatch(/priorityClassname/);
  });

  test('bad knobs fail naming the prop (router ones prefixed router.) and the fix', () => {
    const chart = Testing.chart();
    const cm = new ApiObject(chart, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'agent-sandbox-system' } });
    const elsewhere = new ApiObject(chart, 'secret', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'other' } });
    let n = 0;
    const run = () => new AgentSandboxSystem(chart, `system${n++}`, {
      priorityClass: cm,
      env: { '1PROXY': 'x', 'DUP': 'a' },
      envValues: { DUP: EnvValue.fromField('metadata.name'), FROM_ELSEWHERE: EnvValue.fromSecretKey(ObjectRef.fromConstruct(elsewhere), 'k'), PLAIN: 'text' as any },
      envFrom: ['all' as any],
      serviceAccountAnnotations: { 'bad key': 'x' },
      topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone', maxSkew: 0 }],
      router: {
        priorityClass: ObjectRef.fromName('Not_A_Name'),
        env: { 'A=B': 'x' },
        nodeSelector: { 'bad key': 'x' },
        tolerations: [{ key: 'edge', effect: 'Sometimes' }],
        topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone', minDomains: 0 }],
        serviceAccountAnnotations: { '-bad': 'x' },
      },
    });
    expect(run).toThrow(/\n {2}- priorityClass: construct test\/cm is a ConfigMap \(v1\) but a PriorityClass \(scheduling.k8s.io\) is expected/);
    expect(run).toThrow(/- env\["1PROXY"\]: "1PROXY" is not an environment variable name; use letters, digits, '_', '-' or '.', not starting with a digit/);
    expect(run).toThrow(/- envValues\["DUP"\]: is also set in env; give each variable once, in env or in envValues/);
    expect(run).toThrow(/- envValues\["FROM_ELSEWHERE"\]: Secret "s" is in namespace "other" but it is used from namespace "agent-sandbox-system"/);
    expect(run).toThrow(/- envValues\["PLAIN"\]: must be an EnvValue, made from a Secret key, a ConfigMap key or a Pod field/);
    expect(run).toThrow(/- envFrom\[0\]: must be an EnvFrom, made from a Secret or a ConfigMap/);
    expect(run).toThrow(/- serviceAccountAnnotations\["bad key"\]: /);
    expect(run).toThrow(/- topologySpreadConstraints\[0\]\.maxSkew: 0 must be a whole number of at least 1/);
    expect(run).toThrow(/- router\.priorityClass: /);
    expect(run).toThrow(/- router\.env\["A=B"\]: "A=B" is not an environment variable name/);
    expect(run).toThrow(/- router\.nodeSelector\["bad key"\]: /);
    expect(run).toThrow(/- router\.tolerations\[0\]\.effect: "Sometimes" must be one of NoSchedule, PreferNoSchedule, NoExecute/);
    expect(run).toThrow(/- router\.topologySpreadConstraints\[0\]\.minDomains: 0 must be a whole number of at least 1/);
    expect(run).toThrow(/- router\.serviceAccountAnnotations\["-bad"\]: /);
    // Control: the same install with good values builds.
    expect(() => new AgentSandboxSystem(chart, 'good', {
      priorityClass: ObjectRef.fromName('system-cluster-critical'),
      env: { PROXY: 'x' },
      envValues: { POD: EnvValue.fromField('metadata.name') },
      serviceAccountAnnotations: { 'iam.gke.io/gcp-service-account': 'x' },
      router: { priorityClass: ObjectRef.fromName('data-plane'), env: { A_B: 'x' }, nodeSelector: { pool: 'edge' } },
    })).not.toThrow();
  });
});
