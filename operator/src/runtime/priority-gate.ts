/**
 * A bound on the requests the operator has in flight, with the waiting line ordered by priority.
 *
 * Without it every worker's request goes straight to the API server, whose queue is first come,
 * first served: in a burst the claim path's two writes wait behind hundreds of pool refills and
 * status updates. Holding the excess here instead lets claims overtake: the server sees at most
 * `limit` requests from us, and the next slot goes to the most urgent lane.
 *
 * Lanes share slots by stride scheduling (weights 16:4:1), not strict priority, so background work
 * (pool refill, Events) still moves under a steady claim load: a pool starved of refills would
 * turn every later claim into a cold start.
 */
import type { RequestPriority } from './types';

export type { RequestPriority };

const LANES: readonly RequestPriority[] = ['claim', 'normal', 'background'];
const WEIGHTS: Readonly<Record<RequestPriority, number>> = { claim: 16, normal: 4, background: 1 };

/** The default bound: enough to keep a small API server busy, few enough that claims overtake. */
export const DEFAULT_MAX_IN_FLIGHT = 32;

export class PriorityGate {
  private inFlight = 0;
  private readonly waiting: Record<RequestPriority, Array<() => void>> = { claim: [], normal: [], background: [] };
  /** Stride scheduling: each lane's virtual time advances by 1/weight per slot it is given. */
  private readonly pass: Record<RequestPriority, number> = { claim: 0, normal: 0, background: 0 };

  public constructor(public readonly limit: number = DEFAULT_MAX_IN_FLIGHT) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`PriorityGate: limit must be a whole number of at least 1 (it is ${limit})`);
  }

  /** Requests holding a slot. */
  public get active(): number {
    return this.inFlight;
  }

  /** Requests waiting for a slot, per lane. */
  public queued(lane?: RequestPriority): number {
    return lane ? this.waiting[lane].length : LANES.reduce((n, l) => n + this.waiting[l].length, 0);
  }

  /** Run `fn` once a slot is free; the slot is held until its promise settles. */
  public async run<T>(priority: RequestPriority, fn: () => Promise<T>): Promise<T> {
    await this.acquire(priority);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private acquire(priority: RequestPriority): Promise<void> {
    const queued = this.queued();
    // No contention, no order to keep: straight through, and nothing charged.
    if (this.inFlight < this.limit && queued === 0) {
      this.inFlight++;
      return Promise.resolve();
    }
    if (queued === 0) {
      // A new period of contention starts even: no lane carries credit or debt from the last one.
      for (const lane of LANES) this.pass[lane] = 0;
    } else if (this.waiting[priority].length === 0) {
      // A lane that joins a busy period starts at the busy lanes' virtual time: no credit for idling.
      const busy = LANES.filter((l) => this.waiting[l].length > 0).map((l) => this.pass[l]);
      this.pass[priority] = Math.max(this.pass[priority], Math.min(...busy));
    }
    return new Promise((resolve) => this.waiting[priority].push(resolve));
  }

  private release(): void {
    this.inFlight--;
    const lane = this.nextLane();
    if (!lane) return;
    this.inFlight++;
    this.charge(lane);
    this.waiting[lane].shift()!();
  }

  private nextLane(): RequestPriority | undefined {
    let best: RequestPriority | undefined;
    for (const lane of LANES) {
      if (this.waiting[lane].length > 0 && (best === undefined || this.pass[lane] < this.pass[best])) best = lane;
    }
    return best;
  }

  private charge(lane: RequestPriority): void {
    this.pass[lane] += 1 / WEIGHTS[lane];
  }
}
