/**
 * Claims first: while claims wait for a Sandbox, the operator's other work gives way to them.
 *
 * On a small cluster the API server is the bound, and in a burst every write that does not serve a
 * waiting claim delays the two writes it needs (its Sandbox's adoption and its status). This module
 * is the whole policy; `controllers/index.ts` creates one `ClaimsFirst` per process and hands it to
 * the three controllers that take part:
 *
 * - the claim controller feeds `pressure` (which claims wait, per pool: ./pressure.ts), sends the
 *   writes a waiting claim needs in the client's `urgent` lane (`CLAIM_PRIORITY`), and holds its
 *   observability annotations (./held-annotations.ts) and Events (./deferral.ts `DeferredSends`)
 *   while other claims wait;
 * - the Sandbox controller defers bookkeeping (a claimed member's relabel, an observedGeneration
 *   rewrite: `deferral`) and sends the writes of a member a short pool's claims wait for with the
 *   normal work (`pressure.membersWanted`);
 * - the warm-pool controller holds refill back while a pool's Ready members cover its waiting
 *   claims (./refill.ts), says when a pool is short (`pressure.poolShort`), and picks refill's lane.
 *
 * Deferred work comes back when no claim waits (`pressure.onCalm`), or after
 * `--claims-first-max-defer` at the latest (0s turns deferral off; the lanes stay). The Kubernetes
 * machinery under it (runtime/priority-gate.ts: a bound on requests in flight with weighted lanes)
 * knows nothing of claims.
 */
import { Deferral, DeferredSends } from './deferral';
import { HeldAnnotations } from './held-annotations';
import { ClaimPressure } from './pressure';
import type { Clock } from '../../runtime/clock';
import type { ControllerContext } from '../../runtime/context';
import type { RequestPriority } from '../../runtime/types';

export { ClaimPressure, PRESSURE_LINGER_MS, PRESSURE_WINDOW_MS } from './pressure';
export { Deferral, DeferredSends, MAX_HELD_SENDS } from './deferral';
export { HeldAnnotations, type AnnotationStep } from './held-annotations';
export { CATCH_UP_MIN_BACKLOG, catchUpGrant, claimsFirstHold, isPoolShort, lowWaterMark, type CatchUp, type ClaimsFirstHold, type ClaimsFirstInput } from './refill';

/** The client lane of the writes a waiting claim needs: the most urgent one. */
export const CLAIM_PRIORITY: RequestPriority = 'urgent';

export interface ClaimsFirstOptions {
  /** Measures the pressure's windows and the held sends' bound: the process gives the monotonic clock. */
  readonly clock: Clock;
  /** `--claims-first-max-defer` in ms: the longest deferred work waits; 0 defers nothing. */
  readonly maxDeferMs: number;
  /** @default - a new ClaimPressure on `clock` */
  readonly pressure?: ClaimPressure;
}

export class ClaimsFirst {
  /** The policy of a controller context: its `--claims-first-max-defer`, on its interval clock. */
  public static of(ctx: Pick<ControllerContext, 'flags' | 'clock' | 'intervalClock'>): ClaimsFirst {
    return new ClaimsFirst({ clock: ctx.intervalClock ?? ctx.clock, maxDeferMs: ctx.flags.duration('claims-first-max-defer') });
  }

  /** Which claims wait, per pool; the claim controller feeds it. */
  public readonly pressure: ClaimPressure;
  private readonly clock: Clock;
  private readonly maxDeferMs: number;

  public constructor(options: ClaimsFirstOptions) {
    this.clock = options.clock;
    this.maxDeferMs = options.maxDeferMs;
    this.pressure = options.pressure ?? new ClaimPressure(options.clock);
  }

  /** A controller's deferrable work by key, woken through `wake`; undefined when nothing is to wait (0s). */
  public deferral(wake: (key: string) => void): Deferral | undefined {
    return this.maxDeferMs > 0 ? new Deferral(this.pressure, wake, this.maxDeferMs) : undefined;
  }

  /** Events held while claims wait; undefined when nothing is to wait (0s). */
  public sends(): DeferredSends | undefined {
    return this.maxDeferMs > 0 ? new DeferredSends(this.pressure, this.clock, this.maxDeferMs) : undefined;
  }

  /** What the claim controller holds while other claims wait: its annotations (woken through `wake`), then its Events. */
  public claimWrites(wake: (key: string) => void): { readonly annotationsHeld: HeldAnnotations; readonly eventsHeld?: DeferredSends } {
    const annotationsHeld = new HeldAnnotations(this.deferral(wake));
    const eventsHeld = this.sends();
    return eventsHeld ? { annotationsHeld, eventsHeld } : { annotationsHeld };
  }
}
