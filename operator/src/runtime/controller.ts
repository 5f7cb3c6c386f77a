/**
 * Runs a Reconciler with N workers over a rate-limited work queue, with controller-runtime's
 * result handling: requeueAfterMs → addAfter and forget the backoff; a thrown error → log and
 * addRateLimited; success → forget. Keys come from informer events through `watch()`.
 *
 * A create refused because the namespace is being deleted ends the reconcile quietly, without a
 * retry: everything in that namespace is about to go, and its deletion events will follow.
 *
 * A successful reconcile is the authority on when its key is due next: one that does not ask to
 * come back also cancels the key's pending delayed add (an earlier deadline or error retry), so a
 * deleted object's far deadline is dropped with it instead of waiting in the queue for weeks.
 */
import { ControllerContext, RunnableController } from './context';
import { Logger } from './log';
import { ControllerMetrics } from './metrics';
import { RateLimiter } from './rate-limit';
import { Turns } from './turns';
import { ApiError, Informer, KubeObject, Reconciler, keyOf } from './types';
import { RateLimitedWorkQueue } from './workqueue';

export interface ControllerOptions {
  /** Concurrent reconciles (distinct keys only: a key is never reconciled twice at once). */
  readonly workers: number;
  /** @default client-go's default controller rate limiter (5 ms → 1000 s per key, 10 qps burst 100 overall) */
  readonly rateLimiter?: RateLimiter;
  /**
   * When workers yield to I/O between reconciles that do not wait on any. Each controller has its
   * own by default: a claim whose watch event just arrived is not charged with the slice the
   * Sandbox controller's drain has used. @default a Turns of TURN_SLICE_MS
   */
  readonly turns?: Turns;
}

/** After an optimistic-lock or cache race, look again soon; the watch event usually comes first. */
export const RACE_RETRY_MS = 250;

/** Keys to reconcile for an object: its own key by default, or e.g. its owner's key. */
export type KeyMapper<T extends KubeObject> = (obj: T) => string | string[] | undefined;

/** Which informer events enqueue (each absent filter: every event of that type). Return false to skip. */
export interface EventFilter<T extends KubeObject> {
  readonly add?: (obj: T) => boolean;
  readonly update?: (oldObj: T, newObj: T) => boolean;
  readonly delete?: (obj: T) => boolean;
}

/** An EventFilter that passes only updates accepted by `changed`. */
export const onlyUpdates = <T extends KubeObject>(changed: (oldObj: T, newObj: T) => boolean): EventFilter<T> =>
  ({ add: () => false, update: changed, delete: () => false });

export class Controller implements RunnableController {
  public readonly name: string;
  public readonly queue: RateLimitedWorkQueue;
  private readonly log: Logger;
  private readonly metrics: ControllerMetrics;
  private readonly workers: Promise<void>[] = [];
  private readonly turns: Turns;
  private started = false;
  private stopping = false;

  public constructor(private readonly ctx: Pick<ControllerContext, 'log' | 'metrics' | 'clock' | 'intervalClock'>, private readonly reconciler: Reconciler,
    private readonly options: ControllerOptions) {
    if (!(options.workers >= 1)) throw new Error(`controller ${reconciler.name}: workers must be at least 1 (got ${options.workers})`);
    this.name = reconciler.name;
    this.turns = options.turns ?? new Turns();
    this.log = ctx.log.child({ controller: this.name });
    this.metrics = ctx.metrics.controller(this.name);
    const clock = ctx.intervalClock ?? ctx.clock;
    this.queue = new RateLimitedWorkQueue({ rateLimiter: options.rateLimiter, clock, metrics: ctx.metrics.workQueue(this.name) });
  }

  /**
   * Enqueue keys for an informer's adds, updates and deletes. Call before the informers start
   * (from the controller factory): the first list then queues every existing object. `keysFor`
   * maps an object to the keys it concerns (its own by default; e.g. its owner's); `when` filters
   * events, so that e.g. status churn of a busy object does not fan out to everything it maps to.
   * On an update the old object's keys are queued too when they differ (an owner reference moved).
   */
  public watch<T extends KubeObject>(informer: Informer<T>, keysFor: KeyMapper<T> = keyOf, when: EventFilter<T> = {}): this {
    const enqueue = (obj: T) => {
      const keys = keysFor(obj);
      if (keys === undefined) return;
      for (const key of typeof keys === 'string' ? [keys] : keys) this.queue.add(key);
    };
    informer.addHandlers({
      onAdd: (obj) => {
        if (when.add?.(obj) ?? true) enqueue(obj);
      },
      onUpdate: (oldObj, newObj) => {
        if (!(when.update?.(oldObj, newObj) ?? true)) return;
        enqueue(newObj);
        if (keysFor !== keyOf) enqueue(oldObj);
      },
      onDelete: (obj) => {
        if (when.delete?.(obj) ?? true) enqueue(obj);
      },
    });
    return this;
  }

  public start(): void {
    if (this.started) return;
    this.started = true;
    this.metrics.maxWorkers(this.options.workers);
    for (let i = 0; i < this.options.workers; i++) this.workers.push(this.work());
    this.log.info({ workers: this.options.workers }, 'controller started');
  }

  public async stop(): Promise<void> {
    this.stopping = true;
    this.queue.shutDown();
    await Promise.all(this.workers);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      // A queue of keys whose reconciles write nothing would otherwise drain as one microtask chain.
      const turn = this.turns.takeTurn();
      if (turn) await turn;
      if (this.stopping) {
        // Shutting down: leave queued keys to the next leader, which lists everything anyway.
        this.queue.done(key);
        return;
      }
      await this.reconcileOne(key);
    }
  }

  private async reconcileOne(key: string): Promise<void> {
    const started = performance.now();
    this.metrics.activeWorkers(1);
    try {
      const result = await this.reconciler.reconcile(key);
      const seconds = (performance.now() - started) / 1000;
      if (result && result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, result.requeueAfterMs);
        this.metrics.reconciled('requeue_after', seconds);
      } else {
        this.queue.forget(key);
        this.queue.cancelDelayed(key);
        this.metrics.reconciled('success', seconds);
      }
    } catch (err) {
      if (err instanceof ApiError && err.namespaceTerminating) {
        this.log.debug({ key, err: err.message }, 'namespace is being deleted; not retrying');
        this.queue.forget(key);
        this.queue.cancelDelayed(key);
        this.metrics.reconciled('success', (performance.now() - started) / 1000);
        return;
      }
      this.metrics.reconciled('error', (performance.now() - started) / 1000);
      const retries = this.queue.retries(key);
      // A conflict is routine optimistic concurrency (someone wrote first); the retry sorts it out.
      if (err instanceof ApiError && err.conflict) this.log.debug({ key, retries, err }, 'reconcile conflicted; retrying');
      else this.log.error({ key, retries, err }, 'reconcile failed; retrying with backoff');
      this.queue.addRateLimited(key);
    } finally {
      this.metrics.activeWorkers(-1);
      this.queue.done(key);
    }
  }
}
