import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import { AgentSandboxSystem, NodeSelectorOperator, ObjectRef, SandboxCrds, SandboxFlowControl, SandboxRuntimeClass } from '../src';

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
    });
    const template = operatorPod(Testing.synth(chart));
    expect(template).toMatchSnapshot();
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
    expect(run).toThrow(/podLabels\.app: is the Deployment's selector/);
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
