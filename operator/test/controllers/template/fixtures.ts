/** Builders of the objects the extension-controller tests feed to the pure decisions. */
import { type Condition, type Sandbox, type SandboxTemplate, type SandboxTemplateSpec } from '../../../src/model';
import type { OwnerReference } from '../../../src/runtime/types';

export const NS = 'team-a';
export const NOW = Date.parse('2026-09-01T12:00:00Z');
export const iso = (ms: number) => new Date(ms).toISOString();

export function template(spec: Partial<SandboxTemplateSpec> = {}, meta: Partial<SandboxTemplate['metadata']> = {}): SandboxTemplate {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: 'python', namespace: NS, uid: 'tpl-uid', resourceVersion: '10', ...meta },
    spec: {
      podTemplate: { metadata: { labels: { team: 'a' } }, spec: { containers: [{ name: 'main', image: 'python:3.12' }] } },
      ...spec,
    },
  };
}

export function condition(type: string, status: Condition['status'], reason: string, at = iso(NOW - 60_000), message = ''): Condition {
  return { type, status, reason, message, lastTransitionTime: at };
}

export const ready = (at?: string) => condition('Ready', 'True', 'DependenciesReady', at, 'Pod is Ready');
export const notReady = (at?: string) => condition('Ready', 'False', 'DependenciesNotReady', at, 'Pod exists with phase: Pending');

export function ownerRef(kind: string, name: string, uid: string, controller = true): OwnerReference {
  return { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind, name, uid, controller, blockOwnerDeletion: controller };
}

export interface SandboxOptions {
  readonly name?: string;
  readonly uid?: string;
  readonly rv?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly owners?: OwnerReference[];
  readonly created?: number;
  readonly deleting?: boolean;
  readonly conditions?: Condition[];
  readonly podIPs?: string[];
  readonly nodeName?: string;
  readonly spec?: Partial<Sandbox['spec']>;
}

export function sandbox(o: SandboxOptions = {}): Sandbox {
  const name = o.name ?? 'sbx';
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: {
      name,
      namespace: NS,
      uid: o.uid ?? `${name}-uid`,
      resourceVersion: o.rv ?? '100',
      creationTimestamp: iso(o.created ?? NOW - 3_600_000),
      ...(o.deleting ? { deletionTimestamp: iso(NOW - 1000) } : {}),
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.owners ? { ownerReferences: o.owners } : {}),
    },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.12' }] } }, ...o.spec },
    status: {
      ...(o.conditions ? { conditions: o.conditions } : {}),
      ...(o.podIPs ? { podIPs: o.podIPs } : {}),
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    },
  };
}
