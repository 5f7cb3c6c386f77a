/**
 * What a controller gets from the runtime, and what it gives back. A controller module exports a
 * factory `(ctx: ControllerContext) => RunnableController` and is listed in
 * operator/src/controllers/index.ts; the runtime calls every factory at start-up (before informers
 * start, so handlers see the first list), then starts the controllers once the caches have synced
 * and this replica holds the leader Lease.
 */
import { Clock } from './clock';
import type { Flags } from './flags';
import { InformerFactory } from './informer-factory';
import { Logger } from './log';
import { OperatorMetrics } from './metrics';
import { KubeClient } from './types';

export interface ControllerContext {
  readonly client: KubeClient;
  /** Shared informers: ask for the types you read; one cache and one watch per type. */
  readonly informers: InformerFactory;
  /** Every flag of src/api/controller-flags.ts, typed, defaults filled in. */
  readonly flags: Flags;
  readonly log: Logger;
  /** controller-runtime metric hooks plus `registry` for a controller's own series. */
  readonly metrics: OperatorMetrics;
  /** The wall clock, for comparing with and writing object timestamps (shutdownTime, conditions). */
  readonly clock: Clock;
  /**
   * The clock of delays: work-queue requeues and rate limits. The process gives a monotonic one,
   * so a wall-clock step neither fires every delay at once nor postpones them. @default clock
   */
  readonly intervalClock?: Clock;
}

/** A controller as the process drives it (see controller.ts for the standard implementation). */
export interface RunnableController {
  readonly name: string;
  /** Begin reconciling; called once, after informers synced and leadership was acquired. */
  start(): void;
  /** Stop taking keys; resolves when in-flight reconciles have finished (the caller bounds the wait). */
  stop(): Promise<void>;
}

/** How a controller module registers itself. */
export type ControllerFactory = (ctx: ControllerContext) => RunnableController;
