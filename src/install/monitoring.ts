import { Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { CONTROLLER, CONTROLLER_LABELS, namespaced } from './manifest';
import { ErrorList, checkDns1123Label } from '../api/validation';
import { checkLabels } from '../network-policy/checks';

/**
 * Prometheus Operator `ServiceMonitor`s for the operator's metrics Service and, with the router, for
 * the router Service's `metrics` port.
 */
export interface OperatorServiceMonitorOptions {
  /** Scrape interval. @default Duration.seconds(30) */
  readonly interval?: Duration;
  /** Extra labels, such as the `release` label your Prometheus selects ServiceMonitors by. @default - none */
  readonly labels?: { [key: string]: string };
}

/**
 * Prometheus alerts (a Prometheus Operator `PrometheusRule`) on the operator's metrics:
 * `AgentSandboxClaimNotReady`, `AgentSandboxWarmPoolBelowTarget` and `AgentSandboxReconcileErrors`.
 */
export interface OperatorPrometheusRuleOptions {
  /** Alert when a claim has not been Ready for this long. @default Duration.minutes(5) */
  readonly claimNotReadyFor?: Duration;
  /** Alert when a warm pool has had fewer ready members than its target for this long. @default Duration.minutes(10) */
  readonly warmPoolBelowTargetFor?: Duration;
  /** Alert when a controller's reconcile errors exceed this many per second (5-minute rate) for 10 minutes. @default 0.1 */
  readonly reconcileErrorsPerSecond?: number;
  /** Severity label of the alerts. @default "warning" */
  readonly severity?: string;
  /** Extra labels of the PrometheusRule, such as the `release` label your Prometheus selects rules by. @default - none */
  readonly labels?: { [key: string]: string };
}

/** A Grafana dashboard as a ConfigMap, for the Grafana sidecar that loads labelled ConfigMaps. */
export interface OperatorGrafanaDashboardOptions {
  /** Namespace of the ConfigMap, where your Grafana sidecar looks. @default - the install namespace */
  readonly namespace?: string;
  /** Label the sidecar selects dashboards by, and its value. @default { grafana_dashboard: '1' } */
  readonly labels?: { [key: string]: string };
  /** Grafana folder, set as the `grafana_folder` annotation the sidecar reads. @default - the sidecar's default folder */
  readonly folder?: string;
}

/** Check the monitoring options; errors go to `errors`. */
export function checkMonitoring(errors: ErrorList, sm?: OperatorServiceMonitorOptions, rule?: OperatorPrometheusRuleOptions,
  dashboard?: OperatorGrafanaDashboardOptions): void {
  if (sm?.interval && !(sm.interval.toSeconds({ integral: false }) >= 1)) errors.check('serviceMonitor.interval', 'must be at least 1 second');
  if (sm?.labels) checkLabels(errors, 'serviceMonitor.labels', sm.labels);
  for (const [field, d] of [['claimNotReadyFor', rule?.claimNotReadyFor], ['warmPoolBelowTargetFor', rule?.warmPoolBelowTargetFor]] as const) {
    if (d && !(d.toSeconds({ integral: false }) >= 60 && Number.isInteger(d.toSeconds({ integral: false })))) {
      errors.check(`prometheusRule.${field}`, 'must be a whole number of seconds, at least a minute');
    }
  }
  const rate = rule?.reconcileErrorsPerSecond;
  if (rate !== undefined && !(Number.isFinite(rate) && rate >= 0)) errors.check('prometheusRule.reconcileErrorsPerSecond', `${rate} must be a number of at least 0`);
  if (rule?.labels) checkLabels(errors, 'prometheusRule.labels', rule.labels);
  if (dashboard?.namespace !== undefined) errors.check('grafanaDashboard.namespace', checkDns1123Label(dashboard.namespace));
  if (dashboard?.labels) {
    checkLabels(errors, 'grafanaDashboard.labels', dashboard.labels);
    if (Object.keys(dashboard.labels).length === 0) errors.check('grafanaDashboard.labels', 'must not be empty: the Grafana sidecar finds dashboards by label; omit it for grafana_dashboard=1');
  }
}

function promDuration(d: Duration): string {
  const s = d.toSeconds({ integral: false });
  return s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`;
}

/** The ServiceMonitor of the operator's metrics Service (port `metrics`). */
export function addServiceMonitor(scope: Construct, namespace: string, options: OperatorServiceMonitorOptions): void {
  serviceMonitor(scope, 'ServiceMonitor', CONTROLLER, namespace, options, { app: CONTROLLER }, CONTROLLER_LABELS);
}

/**
 * The ServiceMonitor of the router's Service (its port `metrics`), named `sandbox-router`, selecting
 * the Service by `serviceLabels`, the labels it carries.
 */
export function addRouterServiceMonitor(scope: Construct, namespace: string, options: OperatorServiceMonitorOptions,
  serviceLabels: { [key: string]: string }): void {
  serviceMonitor(scope, 'RouterServiceMonitor', 'sandbox-router', namespace, options, serviceLabels, serviceLabels);
}

/** A ServiceMonitor, labelled `labels`, that scrapes port `metrics` of the Services in `namespace` labelled `selected`. */
function serviceMonitor(scope: Construct, id: string, name: string, namespace: string, options: OperatorServiceMonitorOptions,
  selected: { [key: string]: string }, labels: { [key: string]: string }): void {
  namespaced(scope, id, 'monitoring.coreos.com/v1', 'ServiceMonitor', name, namespace, {
    spec: {
      selector: { matchLabels: { ...selected } },
      namespaceSelector: { matchNames: [namespace] },
      endpoints: [{ port: 'metrics', interval: promDuration(options.interval ?? Duration.seconds(30)) }],
    },
  }, { ...options.labels, ...labels });
}

/** The alerts, on the metric names the operator exports. */
export function addPrometheusRule(scope: Construct, namespace: string, options: OperatorPrometheusRuleOptions): void {
  const severity = options.severity ?? 'warning';
  const notReady = options.claimNotReadyFor ?? Duration.minutes(5);
  const belowFor = options.warmPoolBelowTargetFor ?? Duration.minutes(10);
  const errorRate = options.reconcileErrorsPerSecond ?? 0.1;
  namespaced(scope, 'PrometheusRule', 'monitoring.coreos.com/v1', 'PrometheusRule', CONTROLLER, namespace, {
    spec: {
      groups: [{
        name: 'agent-sandbox',
        rules: [
          {
            alert: 'AgentSandboxClaimNotReady',
            expr: `max by (namespace) (agent_sandbox_claim_oldest_not_ready_age_seconds) > ${notReady.toSeconds()}`,
            labels: { severity },
            annotations: {
              summary: `A SandboxClaim has not been Ready for more than ${promDuration(notReady)}`,
              description: 'The oldest claim in namespace {{ $labels.namespace }} that is not Ready is {{ $value | humanizeDuration }} old; `kubectl get sandboxclaims -n {{ $labels.namespace }}` shows its Ready reason.',
            },
          },
          {
            alert: 'AgentSandboxWarmPoolBelowTarget',
            expr: 'max by (namespace, warmpool) (agent_sandbox_warmpool_ready_replicas) < max by (namespace, warmpool) (agent_sandbox_warmpool_replicas)',
            for: promDuration(belowFor),
            labels: { severity },
            annotations: {
              summary: `A warm pool has been below its target for ${promDuration(belowFor)}`,
              description: 'Warm pool {{ $labels.namespace }}/{{ $labels.warmpool }} has {{ $value }} ready sandboxes, fewer than its replicas; claims fall back to cold starts. Check node capacity and the pool\'s events.',
            },
          },
          {
            alert: 'AgentSandboxReconcileErrors',
            expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) > ${errorRate}`,
            for: '10m',
            labels: { severity },
            annotations: {
              summary: 'The agent-sandbox operator keeps failing to reconcile',
              description: 'Controller {{ $labels.controller }} fails {{ $value | humanize }} reconciles per second; the operator logs say why.',
            },
          },
        ],
      }],
    },
  }, { ...options.labels, ...CONTROLLER_LABELS });
}

/** The dashboard JSON: claim latency, pool depth, refill rate, reconcile errors. */
export function dashboardJson(): string {
  const panel = (id: number, title: string, unit: string, x: number, y: number, targets: Array<[string, string]>) => ({
    id,
    title,
    type: 'timeseries',
    datasource: { type: 'prometheus', uid: '${datasource}' },
    gridPos: { h: 8, w: 12, x, y },
    fieldConfig: { defaults: { unit }, overrides: [] },
    targets: targets.map(([expr, legendFormat], i) => ({ refId: String.fromCharCode(65 + i), expr, legendFormat })),
  });
  return JSON.stringify({
    title: 'Agent Sandbox',
    uid: 'agent-sandbox',
    tags: ['agent-sandbox'],
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    templating: { list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Data source' }] },
    panels: [
      panel(1, 'Claim startup latency (controller, to Ready)', 'ms', 0, 0, [
        ['histogram_quantile(0.5, sum by (le, launch_type) (rate(agent_sandbox_claim_controller_startup_latency_ms_bucket[5m])))', 'p50 {{launch_type}}'],
        ['histogram_quantile(0.99, sum by (le, launch_type) (rate(agent_sandbox_claim_controller_startup_latency_ms_bucket[5m])))', 'p99 {{launch_type}}'],
      ]),
      panel(2, 'Warm pool depth (ready / target)', 'short', 12, 0, [
        ['max by (namespace, warmpool) (agent_sandbox_warmpool_ready_replicas)', 'ready {{namespace}}/{{warmpool}}'],
        ['max by (namespace, warmpool) (agent_sandbox_warmpool_replicas)', 'target {{namespace}}/{{warmpool}}'],
      ]),
      panel(3, 'Refill and claim rate', 'ops', 0, 8, [
        ['sum by (namespace, warmpool) (rate(agent_sandbox_warmpool_sandboxes_created_total[5m]))', 'refill {{namespace}}/{{warmpool}}'],
        ['sum by (launch_type) (rate(agent_sandbox_claim_creation_total[5m]))', 'claims {{launch_type}}'],
      ]),
      panel(4, 'Reconcile errors', 'ops', 12, 8, [
        ['sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m]))', '{{controller}}'],
      ]),
    ],
  }, undefined, 2);
}

/** The dashboard ConfigMap. */
export function addGrafanaDashboard(scope: Construct, namespace: string, options: OperatorGrafanaDashboardOptions): void {
  const labels = { ...CONTROLLER_LABELS, ...(options.labels ?? { grafana_dashboard: '1' }) };
  namespaced(scope, 'GrafanaDashboard', 'v1', 'ConfigMap', `${CONTROLLER}-dashboard`, options.namespace ?? namespace, {
    ...(options.folder ? { metadata: { name: `${CONTROLLER}-dashboard`, namespace: options.namespace ?? namespace, labels, annotations: { grafana_folder: options.folder } } } : {}),
    data: { 'agent-sandbox.json': dashboardJson() },
  }, labels);
}
