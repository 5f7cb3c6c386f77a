/**
 * Heap per 1,000 cached Sandboxes: pool members and their Pods, built by the operator's own code
 * (buildPoolSandbox, buildPod) and dressed as the API server serves them (server metadata,
 * managedFields, a Ready status, a kubelet-style Pod status), parsed from JSON one by one as the
 * informer parses them, then put through the informer's transforms into indexed stores.
 *
 * Bundled by ./run.ts with esbuild (the operator's sources are ESM) and run under --expose-gc.
 * Prints one JSON line: heap MiB per 1,000 Sandboxes (with their Pods) for each template and each
 * cache shape ("raw": as served; "managedFields dropped": before this round; "now": the operator's
 * transforms).
 */
import { buildPod } from '../../operator/src/controllers/sandbox/desired';
import { buildPoolSandbox, withMemberName } from '../../operator/src/controllers/warm-pool/desired';
import type { PoolFlags } from '../../operator/src/controllers/warm-pool/types';
import { PodSpecSharing, slimPod, type Pod, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../operator/src/model';
import { stripManagedFields } from '../../operator/src/runtime/informer-factory';
import { IndexedStore } from '../../operator/src/runtime/store';
import type { KubeObject } from '../../operator/src/runtime/types';

declare const gc: () => void;

const NS = 'bench';
const POOLS = 10;

/** The bench scenarios' template: one busybox container. */
const MINIMAL: SandboxTemplate['spec'] = { podTemplate: { metadata: { labels: { app: 'bench' } }, spec: { containers: [{ name: 'main', image: 'busybox' }] } } };

/** A template as a platform team writes one: the runtime in an init container, env, resources, probes, volumes. */
const TYPICAL: SandboxTemplate['spec'] = {
  podTemplate: {
    metadata: { labels: { app: 'python-sandbox', team: 'agents' }, annotations: { 'example.com/owner': 'platform' } },
    spec: {
      runtimeClassName: 'gvisor',
      initContainers: [{
        name: 'install-runtime',
        image: 'ghcr.io/example/agent-sandbox-operator:v0.9.0',
        args: ['install-runtime', '/opt/agent-sandbox'],
        volumeMounts: [{ name: 'agent-sandbox-runtime', mountPath: '/opt/agent-sandbox' }],
        resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
      }],
      containers: [{
        name: 'sandbox',
        image: 'python:3.12-slim',
        command: ['/opt/agent-sandbox/bin/node', '/opt/agent-sandbox/agent-sandbox-operator.mjs', 'runtime'],
        env: [
          { name: 'PYTHONUNBUFFERED', value: '1' }, { name: 'HOME', value: '/workspace' }, { name: 'PIP_NO_CACHE_DIR', value: '1' },
          { name: 'AGENT_SANDBOX_WORKSPACE', value: '/workspace' }, { name: 'TZ', value: 'UTC' },
        ],
        ports: [{ name: 'runtime', containerPort: 8888 }, { name: 'files', containerPort: 8080 }, { name: 'grpc', containerPort: 9090 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 8888 }, periodSeconds: 2, failureThreshold: 3 },
        resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { 'cpu': '1', 'memory': '1Gi', 'ephemeral-storage': '2Gi' } },
        volumeMounts: [{ name: 'agent-sandbox-runtime', mountPath: '/opt/agent-sandbox', readOnly: true }, { name: 'workspace', mountPath: '/workspace' }],
      }],
      volumes: [{ name: 'agent-sandbox-runtime', emptyDir: {} }, { name: 'workspace', emptyDir: { sizeLimit: '2Gi' } }],
      tolerations: [{ key: 'sandbox.example.com/dedicated', operator: 'Exists', effect: 'NoSchedule' }],
    },
  },
} as SandboxTemplate['spec'];

function managedFields(manager: string, subresource?: string): object {
  return {
    manager,
    operation: 'Update',
    apiVersion: 'agents.x-k8s.io/v1beta1',
    time: '2026-12-02T08:00:00Z',
    fieldsType: 'FieldsV1',
    ...(subresource ? { subresource } : {}),
    fieldsV1: subresource
      ? { 'f:status': { '.': {}, 'f:conditions': { '.': {}, 'k:{"type":"Ready"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:observedGeneration': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} } }, 'f:nodeName': {}, 'f:podIPs': {}, 'f:selector': {} } }
      : { 'f:metadata': { 'f:annotations': { '.': {}, 'f:agents.x-k8s.io/pod-name': {} }, 'f:labels': { '.': {}, 'f:agents.x-k8s.io/pool': {} }, 'f:ownerReferences': { '.': {}, 'k:{"uid":"x"}': {} } }, 'f:spec': { '.': {}, 'f:podTemplate': { '.': {}, 'f:metadata': {}, 'f:spec': {} } } },
  };
}

function served<T extends KubeObject>(obj: T, i: number, managers: object[]): T {
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      uid: `0b6c5f1e-${String(i).padStart(4, '0')}-4a7e-9d1c-${String(i).padStart(12, '0')}`,
      resourceVersion: String(100_000 + i),
      generation: 1,
      creationTimestamp: '2026-12-02T08:00:00Z',
      managedFields: managers,
    },
  };
}

/** The i-th address in 10.0.0.0/8. */
function ipOf(i: number): string {
  return `10.${Math.floor(i / 65_536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`;
}

function podStatus(i: number): Pod['status'] {
  const ip = ipOf(i);
  const t = '2026-12-02T08:00:01Z';
  return {
    phase: 'Running',
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled']
      .map((type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: t })) as any,
    podIP: ip,
    podIPs: [{ ip }],
    ...({
      hostIP: '172.18.0.3',
      hostIPs: [{ ip: '172.18.0.3' }],
      startTime: t,
      qosClass: 'Burstable',
      containerStatuses: [{
        name: 'sandbox',
        ready: true,
        started: true,
        restartCount: 0,
        image: 'docker.io/library/python:3.12-slim',
        imageID: 'docker.io/library/python@sha256:2b0079146a74e23bb4ae8f6a5b9f8f8d8a5e0a1b2c3d4e5f60718293a4b5c6d7',
        containerID: `containerd://${'f'.repeat(48)}${String(i).padStart(16, '0')}`,
        state: { running: { startedAt: t } },
        lastState: {},
        volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
      }],
    } as object),
  };
}

/** JSON text of the Sandboxes and Pods of `n` members over POOLS pools, as the API server would send them. */
function wire(templateSpec: SandboxTemplate['spec'], n: number): { sandboxes: string[]; pods: string[] } {
  const sandboxes: string[] = [];
  const pods: string[] = [];
  const flags = { enableWarmPoolEviction: true } as PoolFlags;
  for (let p = 0; p < POOLS; p++) {
    const template = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxTemplate', metadata: { name: `tpl-${p}`, namespace: NS, uid: `t-${p}` }, spec: templateSpec } as SandboxTemplate;
    const pool = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', metadata: { name: `pool-${p}`, namespace: NS, uid: `p-${p}` }, spec: { replicas: n / POOLS, sandboxTemplateRef: { name: template.metadata.name } } } as SandboxWarmPool;
    for (let m = 0; m < n / POOLS; m++) {
      const i = p * (n / POOLS) + m;
      const sandbox = served(withMemberName(buildPoolSandbox(pool, template, flags), `pool-${p}-${String(m).padStart(5, '0')}`), i, [managedFields('agent-sandbox-operator'), managedFields('agent-sandbox-operator', 'status')]);
      sandbox.status = {
        conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready; Service Exists', observedGeneration: 1, lastTransitionTime: '2026-12-02T08:00:02Z' }],
        selector: `agents.x-k8s.io/sandbox-name-hash=${i.toString(16).padStart(8, '0')}`,
        podIPs: [ipOf(i)],
        nodeName: `kwok-node-${i % 100}`,
      };
      sandboxes.push(JSON.stringify(sandbox));
      const pod = served(buildPod(sandbox), i, [managedFields('agent-sandbox-operator'), managedFields('kubelet', 'status')]);
      pod.spec = { ...pod.spec!, nodeName: `kwok-node-${i % 100}`, ...({ dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30, enableServiceLinks: true, preemptionPolicy: 'PreemptLowerPriority', priority: 0 } as object) };
      pod.status = podStatus(i);
      pods.push(JSON.stringify(pod));
    }
  }
  return { sandboxes, pods };
}

interface Shape {
  readonly name: string;
  readonly sandbox: (s: Sandbox) => Sandbox;
  readonly pod: (p: Pod) => Pod;
}

function heapMiB(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Heap of `n` members cached in `shape`, minus the empty heap, per 1,000. */
function measure(templateSpec: SandboxTemplate['spec'], n: number, shape: Shape): number {
  const { sandboxes, pods } = wire(templateSpec, n);
  const before = heapMiB();
  const sandboxStore = new IndexedStore<Sandbox>();
  const podStore = new IndexedStore<Pod>();
  sandboxStore.addIndex('pool', (s) => [`${s.metadata.namespace}/${s.metadata.labels?.['agents.x-k8s.io/pool'] ?? ''}`]);
  podStore.addIndex('owner-uid', (p) => (p.metadata.ownerReferences ?? []).map((r) => r.uid));
  for (const text of sandboxes) sandboxStore.put(shape.sandbox(JSON.parse(text)));
  for (const text of pods) podStore.put(shape.pod(JSON.parse(text)));
  const after = heapMiB();
  // Read after the measurement, so the JSON texts (in `before`) are still alive in `after`.
  if (sandboxStore.size !== sandboxes.length || podStore.size !== pods.length) throw new Error('the stores lost objects');
  return ((after - before) / n) * 1000;
}

/** Each cache shape, with fresh state (the spec sharing) per measurement. */
function shapes(): Shape[] {
  const sharing = new PodSpecSharing();
  return [
    { name: 'raw', sandbox: (s) => s, pod: (p) => p },
    { name: 'managedFields dropped', sandbox: stripManagedFields, pod: stripManagedFields },
    { name: 'managedFields and Pod spec dropped (before)', sandbox: stripManagedFields, pod: (p) => ({ ...stripManagedFields(p), spec: { nodeName: p.spec?.nodeName } as Pod['spec'] }) },
    { name: 'now', sandbox: (s) => sharing.transform(stripManagedFields(s)), pod: (p) => slimPod(stripManagedFields(p)) },
  ];
}

const n = Number(process.argv[2] ?? 5000);
const results: Record<string, Record<string, number>> = {};
for (const [label, spec] of [['minimal (bench) template', MINIMAL], ['typical template', TYPICAL]] as const) {
  results[label] = {};
  for (const shape of shapes()) results[label][shape.name] = Math.round(measure(spec, n, shape) * 100) / 100;
}
process.stdout.write(`${JSON.stringify({ sandboxes: n, pools: POOLS, mibPer1000: results })}\n`);
