import { Registry } from 'prom-client';
import { poolCreationsCounter, registerClaimGauges, registerPoolGauges } from '../../src/controllers/pool-metrics';
import type { SandboxClaim, SandboxWarmPool } from '../../src/model';

const NOW = Date.parse('2026-09-01T12:00:00Z');

const pool = (namespace: string, name: string, replicas: number, ready?: number) =>
  ({ metadata: { namespace, name }, spec: { replicas }, status: ready === undefined ? undefined : { readyReplicas: ready } }) as unknown as
    SandboxWarmPool;

const claim = (namespace: string, createdSecondsAgo: number, ready: boolean) => ({
  metadata: { namespace, name: `c${createdSecondsAgo}`, creationTimestamp: new Date(NOW - createdSecondsAgo * 1000).toISOString() },
  spec: { warmPoolRef: { name: 'p' } },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
}) as unknown as SandboxClaim;

async function text(registry: Registry): Promise<string> {
  return registry.metrics();
}

describe('pool and claim metrics', () => {
  test('pool gauges read target and ready members from the cache on scrape', async () => {
    const registry = new Registry();
    const pools = [pool('a', 'python', 5, 3), pool('b', 'browser', 2)];
    registerPoolGauges(registry, { list: () => pools });
    registerPoolGauges(registry, { list: () => [] }); // a second controller on the same registry is a no-op
    let out = await text(registry);
    expect(out).toContain('agent_sandbox_warmpool_replicas{namespace="a",warmpool="python"} 5');
    expect(out).toContain('agent_sandbox_warmpool_ready_replicas{namespace="a",warmpool="python"} 3');
    expect(out).toContain('agent_sandbox_warmpool_ready_replicas{namespace="b",warmpool="browser"} 0');
    pools.pop();
    out = await text(registry);
    expect(out).not.toContain('warmpool="browser"');
  });

  test('the creations counter is one per registry', async () => {
    const registry = new Registry();
    poolCreationsCounter(registry).inc({ namespace: 'a', warmpool: 'python' });
    poolCreationsCounter(registry).inc({ namespace: 'a', warmpool: 'python' });
    expect(await text(registry)).toContain('agent_sandbox_warmpool_sandboxes_created_total{namespace="a",warmpool="python"} 2');
  });

  test('the oldest not-Ready claim age is per namespace, 0 when all are Ready', async () => {
    const registry = new Registry();
    registerClaimGauges(registry, { list: () => [claim('a', 30, false), claim('a', 400, false), claim('a', 900, true), claim('b', 50, true)] }, () => NOW);
    const out = await text(registry);
    expect(out).toContain('agent_sandbox_claim_oldest_not_ready_age_seconds{namespace="a"} 400');
    expect(out).toContain('agent_sandbox_claim_oldest_not_ready_age_seconds{namespace="b"} 0');
  });
});
