/** Builders for the warm-pool tests: a pool, its template, and members in every state. */
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { buildPoolSandbox } from '../../../src/controllers/warm-pool/desired';
import { poolFlags } from '../../../src/controllers/warm-pool/types';
import { type Condition, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import { NOW, NS, condition, iso, notReady, ownerRef, ready, template } from '../template/fixtures';

export const FLAGS = poolFlags();
export const GRACE = FLAGS.readinessGraceMs;

export function pool(spec: Partial<SandboxWarmPool['spec']> = {}, meta: Partial<SandboxWarmPool['metadata']> = {}): SandboxWarmPool {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { name: 'py-pool', namespace: NS, uid: 'pool-uid', generation: 2, ...meta },
    spec: { replicas: 3, sandboxTemplateRef: { name: 'python' }, ...spec },
  };
}

export const TEMPLATE: SandboxTemplate = template();

export interface MemberOptions {
  readonly name?: string;
  readonly template?: SandboxTemplate;
  readonly pool?: SandboxWarmPool;
  /** Milliseconds before NOW. */
  readonly age?: number;
  readonly conditions?: Condition[];
  readonly owner?: 'pool' | 'none' | 'claim' | 'old-pool';
  readonly deleting?: boolean;
  readonly labels?: Record<string, string | undefined>;
  readonly podIPs?: string[];
  readonly nodeName?: string;
}

let counter = 0;

/** A pool member as the pool would have created it, then observed in the given state. */
export function member(o: MemberOptions = {}): Sandbox {
  const p = o.pool ?? pool();
  const built = buildPoolSandbox(p, o.template ?? TEMPLATE, FLAGS);
  const name = o.name ?? `py-pool-${(counter++).toString(36).padStart(5, '0')}`;
  const labels: Record<string, string> = { ...built.metadata.labels };
  for (const [k, v] of Object.entries(o.labels ?? {})) {
    if (v === undefined) delete labels[k];
    else labels[k] = v;
  }
  const owners = {
    'pool': built.metadata.ownerReferences!,
    'none': [],
    'claim': [ownerRef('SandboxClaim', 'c', 'claim-uid')],
    'old-pool': [ownerRef('SandboxWarmPool', p.metadata.name, 'old-pool-uid')],
  }[o.owner ?? 'pool'];
  return {
    ...built,
    metadata: {
      ...built.metadata,
      name,
      generateName: undefined,
      uid: `${name}-uid`,
      resourceVersion: '100',
      creationTimestamp: iso(NOW - (o.age ?? 60_000)),
      ...(o.deleting ? { deletionTimestamp: iso(NOW) } : {}),
      labels,
      ownerReferences: owners,
    },
    status: {
      conditions: o.conditions ?? [ready()],
      ...(o.podIPs ? { podIPs: o.podIPs } : {}),
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    },
  };
}

export const unschedulable = (at = iso(NOW - GRACE - 60_000)): Condition[] => [
  notReady(at),
  condition('PodScheduled', 'False', 'Unschedulable', at, '0/3 nodes are available'),
];

export { NOW, NS, iso, notReady, ready, template, condition, SandboxLabels, NameHash };
