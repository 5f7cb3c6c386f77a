/**
 * Warm pool and claim state as metrics, read from the informer caches on scrape (no bookkeeping on
 * the event path), so dashboards and alerts need no kube-state-metrics configuration:
 * - `agent_sandbox_warmpool_replicas` / `agent_sandbox_warmpool_ready_replicas`: each pool's target
 *   and its ready members (`spec.replicas`, `status.readyReplicas`);
 * - `agent_sandbox_warmpool_sandboxes_created_total`: members created, the refill rate;
 * - `agent_sandbox_claim_oldest_not_ready_age_seconds`: per namespace, the age of the oldest claim
 *   that is not Ready (0 when all are).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { isReady, type SandboxClaim, type SandboxWarmPool } from '../model';
import type { Store } from '../runtime/types';

const CREATED = 'agent_sandbox_warmpool_sandboxes_created_total';

/** The pool gauges, registered once per registry. */
export function registerPoolGauges(registry: Registry, pools: Pick<Store<SandboxWarmPool>, 'list'>): void {
  if (registry.getSingleMetric('agent_sandbox_warmpool_replicas')) return;
  const labelNames = ['namespace', 'warmpool'] as const;
  const perPool = (name: string, help: string, value: (pool: SandboxWarmPool) => number) => new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const pool of pools.list()) this.set({ namespace: pool.metadata.namespace ?? '', warmpool: pool.metadata.name }, value(pool));
    },
  });
  perPool('agent_sandbox_warmpool_replicas', 'Target size of a warm pool (spec.replicas)', (p) => p.spec?.replicas ?? 0);
  perPool('agent_sandbox_warmpool_ready_replicas', 'Ready members of a warm pool (status.readyReplicas)', (p) => p.status?.readyReplicas ?? 0);
}

/** The counter of pool members created; one per registry. */
export function poolCreationsCounter(registry: Registry): Counter<'namespace' | 'warmpool'> {
  const existing = registry.getSingleMetric(CREATED);
  if (existing) return existing as Counter<'namespace' | 'warmpool'>;
  return new Counter({ name: CREATED, help: 'Sandboxes created by warm pools to reach their target', labelNames: ['namespace', 'warmpool'], registers: [registry] });
}

/** The claim gauge, registered once per registry; `now` in milliseconds. */
export function registerClaimGauges(registry: Registry, claims: Pick<Store<SandboxClaim>, 'list'>, now: () => number): void {
  if (registry.getSingleMetric('agent_sandbox_claim_oldest_not_ready_age_seconds')) return;
  new Gauge({
    name: 'agent_sandbox_claim_oldest_not_ready_age_seconds',
    help: 'Age of the oldest SandboxClaim that is not Ready, per namespace (0 when every claim is Ready)',
    labelNames: ['namespace'],
    registers: [registry],
    collect() {
      this.reset();
      const oldest = new Map<string, number>();
      for (const claim of claims.list()) {
        const namespace = claim.metadata.namespace ?? '';
        const created = Date.parse(claim.metadata.creationTimestamp ?? '');
        const age = isReady(claim) || claim.metadata.deletionTimestamp || Number.isNaN(created) ? 0 : Math.max(0, (now() - created) / 1000);
        oldest.set(namespace, Math.max(oldest.get(namespace) ?? 0, age));
      }
      for (const [namespace, age] of oldest) this.set({ namespace }, age);
    },
  });
}
