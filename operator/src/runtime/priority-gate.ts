/**
 * A bound on the requests the operator has in flight, with the waiting line ordered by priority.
 *
 * Without it every worker's request goes straight to the API server, whose queue is first come,
 * first served: in a burst the few writes someone waits on wait behind hundreds of bulk writes.
 * Holding the excess here instead lets urgent work overtake: the server sees at most `limit`
 * requests from us, and the next slot goes to the most urgent lane.
 *
 * Lanes share slots by stride scheduling (weights 16:4:1 for urgent:normal:background), not strict
 * priority, so background work still moves under a steady urgent load. Which requests go in which
 * lane is the callers' choice.
 *
 * The order only helps once requests wait here; under a steady load below `limit`, every request
 * goes straight out, and the server works through our background writes beside the urgent ones.
 * So the background lane has a second, adaptive bound (BackgroundCap): it follows the write
 * latency the server answers with, shrinking the background share when the server slows and
 * growing it back when it recovers. At least one background request may always be in flight, so
 * background work slows but never stops.
 */
import type { RequestPriority } from './types';

export type { RequestPriority };

const LANES: readonly RequestPriority[] = ['urgent', 'normal', 'background'];
const WEIGHTS: Readonly<Record<RequestPriority, number>> = { urgent: 16, normal: 4, background: 1 };

/** The default bound: enough to keep a small API server busy, few enough that urgent work overtakes. */
export const DEFAULT_MAX_IN_FLIGHT = 32;

/**
 * The background lane's bound, from the latency of the writes the server answers (a gradient
 * limiter): `baseline` is the lowest latency seen lately (the server unloaded), `smoothed` an
 * average of the latest; while `smoothed` stays within `tolerance` × baseline the cap grows towards
 * the gate's limit, and beyond it shrinks in proportion. Latencies are taken in whole windows, so a
 * baseline from a quiet minute does not hold the cap down forever.
 */
export class BackgroundCap {
  /** Latency at or under which the server counts as unloaded whatever the baseline (loopback writes take a few ms). */
  public static readonly FLOOR_MS = 5;
  public static readonly TOLERANCE = 2;
  public static readonly WINDOW_MS = 10_000;
  private cap: number;
  private smoothed?: number;
  private baseline?: number;
  private windowMin = Infinity;
  private windowStart?: number;

  public constructor(private readonly max: number, private readonly min = 1) {
    this.cap = max;
  }

  /** How many background requests may be in flight now. */
  public get current(): number {
    return Math.max(this.min, Math.floor(this.cap));
  }

  /** One write's latency, answered by the server at `nowMs`. */
  public sample(latencyMs: number, nowMs: number): void {
    if (!(latencyMs >= 0)) return;
    if (this.windowStart === undefined || nowMs - this.windowStart >= BackgroundCap.WINDOW_MS) {
      // The baseline is the lowest of the last whole window (and of this one, as it goes).
      if (this.windowStart !== undefined && Number.isFinite(this.windowMin)) this.baseline = this.windowMin;
      this.windowStart = nowMs;
      this.windowMin = Infinity;
    }
    this.windowMin = Math.min(this.windowMin, latencyMs);
    this.smoothed = this.smoothed === undefined ? latencyMs : this.smoothed * 0.9 + latencyMs * 0.1;
    const baseline = Math.max(BackgroundCap.FLOOR_MS, Math.min(this.baseline ?? Infinity, this.windowMin));
    const gradient = Math.min(1, Math.max(0.5, (baseline * BackgroundCap.TOLERANCE) / this.smoothed));
    // At gradient 1 the cap grows by its square root per sample; beyond the tolerance it shrinks.
    const next = this.cap * gradient + (gradient >= 1 ? Math.sqrt(this.cap) : 0);
    this.cap = Math.min(this.max, Math.max(this.min, this.cap * 0.8 + next * 0.2));
  }
}

export class PriorityGate {
  private inFlight = 0;
  private backgroundInFlight = 0;
  /** The background lane's adaptive bound (see BackgroundCap); feed it with sample(). */
  public readonly backgroundCap: BackgroundCap;
  private readonly waiting: Record<RequestPriority, Array<() => void>> = { urgent: [], normal: [], background: [] };
  /** Stride scheduling: each lane's virtual time advances by 1/weight per slot it is given. */
  private readonly pass: Record<RequestPriority, number> = { urgent: 0, normal: 0, background: 0 };

  public constructor(public readonly limit: number = DEFAULT_MAX_IN_FLIGHT) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`PriorityGate: limit must be a whole number of at least 1 (it is ${limit})`);
    this.backgroundCap = new BackgroundCap(limit);
  }

  /** Background requests holding a slot. */
  public get backgroundActive(): number {
    return this.backgroundInFlight;
  }

  /** A write's latency as the server answered it: the background lane's bound follows it. */
  public sample(latencyMs: number, nowMs: number): void {
    this.backgroundCap.sample(latencyMs, nowMs);
    // A cap that grew may let waiting background work through.
    this.fill();
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
      this.release(priority);
    }
  }

  private backgroundMayStart(): boolean {
    return this.backgroundInFlight === 0 || this.backgroundInFlight < this.backgroundCap.current;
  }

  private acquire(priority: RequestPriority): Promise<void> {
    const queued = this.queued();
    // No contention, no order to keep: straight through, and nothing charged.
    if (this.inFlight < this.limit && queued === 0 && (priority !== 'background' || this.backgroundMayStart())) {
      this.inFlight++;
      if (priority === 'background') this.backgroundInFlight++;
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
    const waited = new Promise<void>((resolve) => this.waiting[priority].push(resolve));
    // A slot may be free while only capped background work waits: this request may take it.
    this.fill();
    return waited;
  }

  private release(priority: RequestPriority): void {
    this.inFlight--;
    if (priority === 'background') this.backgroundInFlight--;
    this.fill();
  }

  /** Give every free slot to the next lane in line (a slot the background cap kept empty too). */
  private fill(): void {
    while (this.inFlight < this.limit) {
      const lane = this.nextLane();
      if (!lane) return;
      this.start(lane);
    }
  }

  private start(lane: RequestPriority): void {
    this.inFlight++;
    if (lane === 'background') this.backgroundInFlight++;
    this.charge(lane);
    this.waiting[lane].shift()!();
  }

  /** The waiting lane with the least virtual time, skipping background while its cap is full. */
  private nextLane(): RequestPriority | undefined {
    let best: RequestPriority | undefined;
    for (const lane of LANES) {
      if (this.waiting[lane].length === 0 || (lane === 'background' && !this.backgroundMayStart())) continue;
      if (best === undefined || this.pass[lane] < this.pass[best]) best = lane;
    }
    return best;
  }

  private charge(lane: RequestPriority): void {
    this.pass[lane] += 1 / WEIGHTS[lane];
  }
}
