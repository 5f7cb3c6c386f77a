/**
 * The floor: the least a controller can do for a warm claim, through the same API server. No
 * controller runs; the harness pre-creates Ready Sandboxes itself, and a minimal in-process adopter
 * watches claims and performs exactly the two writes of a warm adoption:
 *   1. a conditional merge patch on a Ready Sandbox (metadata.resourceVersion as the precondition)
 *      that makes the claim its controller owner, and
 *   2. a merge patch of the claim's status with Ready=True and the Sandbox's name.
 * Claim latency measured against it is the lowest this machine allows for the scenario's arrival
 * pattern; each controller is reported as a ratio to it.
 *
 * The refilling floor (`--floor-refills`) adds, after each claim is served, the two creates every
 * refill makes: the replacement Sandbox's and its Pod's (the Pod then goes through the scheduler
 * and kwok like any member's). Not the member's status write, which a controller makes too. A controller that refills its pool as claims drain it
 * (paced, sustained) compares with this one like with like. The replacements are load only: they
 * never become Ready and serve no claim (the set-up already made one Ready Sandbox per claim).
 */
import { BenchClient, Watch } from './client';
import { CLAIMS } from './measure';
import { WarmSetup } from './scenarios/burst';
import { CORE, EXT, ScenarioContext } from './scenarios/common';

export class FloorAdopter {
  public conflicts = 0;
  /** Replacements created (the refilling floor). */
  public refilled = 0;
  private next = 0;
  private readonly free: Array<{ name: string; rv: string }> = [];
  private readonly seen = new Set<string>();
  private watch?: Watch;

  public constructor(private readonly client: BenchClient, private readonly ns: string, private readonly refills = false) {}

  /** The set-up for warm scenarios: `n` Ready Sandboxes, created and marked Ready by the harness. */
  public readonly setup: WarmSetup = async (ctx: ScenarioContext, _pool: number, n: number) => {
    const t0 = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const name = `floor-${next++}`;
        await this.client.call('POST', `${CORE}/namespaces/${this.ns}/sandboxes`, {
          apiVersion: 'agents.x-k8s.io/v1beta1',
          kind: 'Sandbox',
          metadata: { name, labels: { 'bench/floor': 'free' } },
          spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } },
        });
        const s = await this.client.call('PATCH', `${CORE}/namespaces/${this.ns}/sandboxes/${name}/status`, {
          status: { conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'floor', lastTransitionTime: new Date().toISOString(), observedGeneration: 1 }] },
        });
        this.free.push({ name, rv: s.metadata.resourceVersion });
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await this.start();
    ctx.log(`floor: ${n} Ready Sandboxes in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return (Date.now() - t0) / 1000;
  };

  public async start(): Promise<void> {
    await this.client.warm(32);
    this.watch = this.client.stream(CLAIMS, this.ns, (type, claim) => {
      if (type !== 'ADDED' || this.seen.has(claim.metadata.uid)) return;
      this.seen.add(claim.metadata.uid);
      this.adopt(claim).catch((e) => process.stderr.write(`[floor] ${claim.metadata.name}: ${(e as Error).message}\n`));
    });
    await this.watch.ready;
  }

  public stop(): void {
    this.watch?.close();
  }

  private async adopt(claim: any): Promise<void> {
    for (;;) {
      const sb = this.free.shift();
      if (!sb) throw new Error('no free Sandbox left');
      const res = await this.client.request('PATCH', `${CORE}/namespaces/${this.ns}/sandboxes/${sb.name}`, {
        metadata: {
          resourceVersion: sb.rv,
          labels: { 'bench/floor': 'claimed' },
          ownerReferences: [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', name: claim.metadata.name, uid: claim.metadata.uid, controller: true, blockOwnerDeletion: true }],
        },
      });
      if (res.status === 409) { this.conflicts++; continue; }
      if (res.status >= 300) throw new Error(`adopt ${sb.name}: HTTP ${res.status}`);
      await this.client.call('PATCH', `${EXT}/namespaces/${this.ns}/sandboxclaims/${claim.metadata.name}/status`, {
        status: {
          conditions: [{ type: 'Ready', status: 'True', reason: 'SandboxReady', message: 'floor', lastTransitionTime: new Date().toISOString(), observedGeneration: claim.metadata.generation ?? 1 }],
          sandbox: { name: sb.name },
        },
      });
      // The claim is served; a failed refill is the floor's own error, not the claim's.
      if (this.refills) await this.refill().catch((e) => process.stderr.write(`[floor] refill: ${(e as Error).message}\n`));
      return;
    }
  }

  /** A pool's refill, its two creates: the replacement Sandbox, then its Pod. */
  private async refill(): Promise<void> {
    const name = `floor-refill-${this.next++}`;
    const labels = { 'bench/floor': 'refill' };
    await this.client.call('POST', `${CORE}/namespaces/${this.ns}/sandboxes`, {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name, labels },
      spec: { podTemplate: { metadata: { labels: { app: 'bench' } }, spec: { containers: [{ name: 'main', image: 'busybox' }] } } },
    });
    await this.client.call('POST', `/api/v1/namespaces/${this.ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { ...labels, app: 'bench' } },
      spec: { containers: [{ name: 'main', image: 'busybox' }] },
    });
    this.refilled++;
  }
}
