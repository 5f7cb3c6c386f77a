/** Builders of Sandboxes and their children for the Sandbox controller's unit tests. */
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { sandboxOwnerRef } from '../../../src/controllers/sandbox/desired';
import type { Observed } from '../../../src/controllers/sandbox/plan';
import { type Condition, type PersistentVolumeClaim, type Pod, type Sandbox, type SandboxSpec, type Service } from '../../../src/model';
import type { OwnerReference } from '../../../src/runtime/types';

export const NOW = Date.parse('2026-09-01T12:00:00Z');
export const NS = 'team-a';
export const UID = 'uid-sandbox-1';

export interface SandboxOptions {
  readonly name?: string;
  readonly spec?: Partial<SandboxSpec>;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly ownerReferences?: OwnerReference[];
  readonly conditions?: Condition[];
  readonly status?: Sandbox['status'];
  readonly generation?: number;
}

export function sandbox(opts: SandboxOptions = {}): Sandbox {
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: {
      name: opts.name ?? 'my-sandbox',
      namespace: NS,
      uid: UID,
      generation: opts.generation ?? 1,
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(opts.ownerReferences ? { ownerReferences: opts.ownerReferences } : {}),
    },
    spec: {
      podTemplate: { spec: { containers: [{ name: 'main', image: 'busybox' }] } },
      operatingMode: 'Running',
      shutdownPolicy: 'Retain',
      ...opts.spec,
    },
    ...(opts.status || opts.conditions ? { status: { ...opts.status, ...(opts.conditions ? { conditions: opts.conditions } : {}) } } : {}),
  };
}

export interface PodOptions {
  readonly name?: string;
  readonly owner?: Sandbox | OwnerReference | null;
  readonly phase?: string;
  readonly ready?: boolean;
  readonly ips?: string[];
  readonly nodeName?: string;
  readonly scheduled?: { status: string; reason?: string; message?: string } | null;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly deleting?: boolean;
  readonly uid?: string;
}

/** A Pod; by default the running, ready, scheduled Pod of `owner` (default: the default Sandbox). */
export function pod(opts: PodOptions = {}): Pod {
  const owner = opts.owner === undefined ? sandbox() : opts.owner;
  const ownerRef = owner === null ? undefined : 'metadata' in owner ? sandboxOwnerRef(owner) : owner;
  const name = opts.name ?? (owner && 'metadata' in owner ? owner.metadata.name : 'my-sandbox');
  const phase = opts.phase ?? 'Running';
  const conditions = [];
  if (opts.scheduled !== null) conditions.push({ type: 'PodScheduled', ...(opts.scheduled ?? { status: 'True' }) });
  conditions.push({ type: 'Ready', status: opts.ready === false ? 'False' : 'True' });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      uid: opts.uid ?? `uid-pod-${name}`,
      resourceVersion: '10',
      labels: opts.labels ?? { [SandboxLabels.SANDBOX_NAME_HASH]: NameHash.of(name) },
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(ownerRef ? { ownerReferences: [ownerRef] } : {}),
      ...(opts.deleting ? { deletionTimestamp: '2026-09-01T11:59:00Z' } : {}),
    },
    spec: { containers: [{ name: 'main', image: 'busybox' }], automountServiceAccountToken: false, ...(opts.nodeName !== undefined ? { nodeName: opts.nodeName } : { nodeName: 'kwok-node-0' }) },
    status: {
      phase,
      conditions,
      ...((opts.ips ?? ['127.64.0.7']).length > 0 ? { podIPs: (opts.ips ?? ['127.64.0.7']).map((ip) => ({ ip })) } : {}),
    },
  };
}

export function foreignRef(kind = 'ReplicaSet', name = 'other'): OwnerReference {
  return { apiVersion: 'apps/v1', kind, name, uid: `uid-${name}`, controller: true, blockOwnerDeletion: true };
}

export function service(owner: Sandbox | OwnerReference | null = sandbox(), extra: Partial<Service['metadata']> = {}, spec: Service['spec'] = {}): Service {
  const ownerRef = owner === null ? undefined : 'metadata' in owner ? sandboxOwnerRef(owner) : owner;
  const name = owner && 'metadata' in owner ? owner.metadata.name : 'my-sandbox';
  const hash = NameHash.of(name);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-svc-${name}`,
      resourceVersion: '20',
      labels: { [SandboxLabels.SANDBOX_NAME_HASH]: hash },
      ...(ownerRef ? { ownerReferences: [ownerRef] } : {}),
      ...extra,
    },
    spec: { clusterIP: 'None', selector: { [SandboxLabels.SANDBOX_NAME_HASH]: hash }, ports: [], ...spec },
  };
}

export function pvc(name: string, owner: Sandbox | OwnerReference | null = sandbox(), labels?: Record<string, string>): PersistentVolumeClaim {
  const ownerRef = owner === null ? undefined : 'metadata' in owner ? sandboxOwnerRef(owner) : owner;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NS, uid: `uid-pvc-${name}`, resourceVersion: '30', ...(labels ? { labels } : {}), ...(ownerRef ? { ownerReferences: [ownerRef] } : {}) },
    spec: {},
  };
}

export function observed(sb: Sandbox, children: { pods?: Pod[]; service?: Service; pvcs?: PersistentVolumeClaim[]; nowMs?: number } = {}): Observed {
  return {
    sandbox: sb,
    pods: children.pods ?? [],
    service: children.service,
    pvcs: new Map((children.pvcs ?? []).map((p) => [p.metadata.name, p])),
    nowMs: children.nowMs ?? NOW,
    clusterDomain: 'cluster.local',
  };
}

export function condition(conds: Condition[] | undefined, type: string): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

/** A volume claim template asking for 1Gi. */
export function vct(name: string | undefined, labels?: Record<string, string>) {
  return {
    metadata: { ...(name !== undefined ? { name } : {}), ...(labels ? { labels } : {}) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  };
}
