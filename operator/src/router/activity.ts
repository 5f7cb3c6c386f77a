/**
 * The router's half of the idle clock (ours): it is where a Sandbox's use shows, so it writes the
 * last-activity annotation that the operator's idle suspension reads (`../model/idle`).
 *
 * - Every admitted request, upgraded connection and HTTP/2 stream is counted while open. On a
 *   Sandbox with an idle policy, a new one stamps last activity when the newest stamp (the cache's,
 *   or the last this router wrote) is older than the stamp interval, and while any stays open the
 *   stamp is renewed every interval, so a long command, a WebSocket or a gRPC stream is never
 *   suspended. A busy Sandbox thus costs a few writes a period, not one per request.
 * - A Sandbox with no connection open through this router may still be busy: its runtime may run a
 *   background process. Shortly before its deadline (within one interval), the runtime is asked
 *   (`./process-probe`) at most once an interval; a running process stamps.
 *
 * Stamps are merge patches of the annotation alone, with no resourceVersion: they must land even
 * as the Sandbox changes, and they are what makes the operator's suspension (which carries one)
 * fail when it raced a use. They are never on the request path: one write per Sandbox in flight,
 * failures logged at debug and tried again soon (a quarter interval, at most a second: one lost
 * write must not let an open WebSocket reach its deadline). One timer per Sandbox with a policy,
 * set for its next stamp (while in use) or probe (while not), moved by the Sandbox's events.
 */
import { SandboxAnnotations } from '#api/labels';
import type { RouterMetrics, StampSource } from './metrics';
import {
  activityStamp, activityStampIntervalMs, idleDeadlineMs, type IdlePolicy, idlePolicyOf, lastActivityMs, RESOURCES, type Sandbox,
} from '../model';
import { type Clock, SYSTEM_CLOCK, type TimerHandle } from '../runtime/clock';
import type { Logger } from '../runtime/log';
import type { Informer, KubeClient } from '../runtime/types';

/** Timers may fire a millisecond early; a stamp due then would wait a whole interval more. */
const TIMER_SLACK_MS = 5;
/** A failed stamp is tried again after a quarter of the interval, but no later than this. */
const RETRY_MS = 1000;

export interface ActivityOptions {
  readonly sandboxes: Informer<Sandbox>;
  readonly client: Pick<KubeClient, 'patch'>;
  readonly log: Logger;
  readonly metrics?: RouterMetrics;
  /** The wall clock (stamps are compared with the API server's times); SYSTEM_CLOCK by default. */
  readonly clock?: Clock;
  /** Whether the Sandbox's runtime runs a process now (never rejects); no probing without it. */
  readonly probe?: (sandbox: Sandbox) => Promise<boolean>;
}

interface Tracked {
  /** Requests, upgraded connections and streams open through this router. */
  open: number;
  /** When this router last wrote a stamp (or is writing one): a failed write leaves the one before. */
  stamped: number;
  /** After a failed write: no new one before this (RETRY_MS). */
  retryAt: number;
  writing: boolean;
  /** When this router last probed the runtime. */
  probed: number;
  probing: boolean;
  timer?: TimerHandle;
  timerAt?: number;
}

export class ActivityTracker {
  private readonly tracked = new Map<string, Tracked>();
  private readonly clock: Clock;
  private stopped = false;

  public constructor(private readonly opts: ActivityOptions) {
    this.clock = opts.clock ?? SYSTEM_CLOCK;
    const changed = (s: Sandbox) => this.schedule(keyOf(s.metadata.namespace, s.metadata.name));
    const gone = (s: Sandbox) => this.drop(keyOf(s.metadata.namespace, s.metadata.name));
    opts.sandboxes.addHandlers({ onAdd: changed, onUpdate: (_, s) => changed(s), onDelete: gone });
  }

  /**
   * Counts one admitted request, connection or stream for the Sandbox until the returned function
   * is called, which also calls `release` (once: later calls do nothing).
   */
  public track(namespace: string, name: string, release: () => void): () => void {
    const key = keyOf(namespace, name);
    const state = this.state(key);
    state.open++;
    this.stampIfDue(key, state, 'request');
    this.schedule(key);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      state.open--;
      this.schedule(key);
    };
  }

  /** Open connections through this router to `namespace/name`. */
  public openTo(namespace: string, name: string): number {
    return this.tracked.get(keyOf(namespace, name))?.open ?? 0;
  }

  /** Sandboxes with state here (a policy, or an open connection). */
  public get size(): number {
    return this.tracked.size;
  }

  public stop(): void {
    this.stopped = true;
    for (const state of this.tracked.values()) this.clearTimer(state);
  }

  private state(key: string): Tracked {
    let state = this.tracked.get(key);
    if (!state) this.tracked.set(key, (state = { open: 0, stamped: 0, retryAt: 0, writing: false, probed: 0, probing: false }));
    return state;
  }

  /** The Sandbox and its policy, when the cache shows one that is not suspended. */
  private governed(key: string): { sandbox: Sandbox; policy: IdlePolicy } | undefined {
    const [namespace, name] = splitKey(key);
    const sandbox = this.opts.sandboxes.get(namespace, name);
    const policy = sandbox && sandbox.spec?.operatingMode !== 'Suspended' ? idlePolicyOf(sandbox) : undefined;
    return policy ? { sandbox: sandbox!, policy } : undefined;
  }

  /** Sets the Sandbox's one timer for its next stamp or probe, or forgets it when nothing is to be done. */
  private schedule(key: string): void {
    if (this.stopped) return;
    const governed = this.governed(key);
    let state = this.tracked.get(key);
    if (!governed) {
      // No policy (or suspended): nothing to stamp or probe; only an open count is worth keeping.
      if (state && state.open === 0) this.drop(key);
      else if (state) this.clearTimer(state);
      return;
    }
    state ??= this.state(key);
    // A write or probe under way schedules again when it ends (a timer now could only find it still busy).
    if (state.writing || state.probing) return this.clearTimer(state);
    const interval = activityStampIntervalMs(governed.policy);
    let at: number | undefined;
    if (state.open > 0) {
      at = Math.max(newestStamp(governed.sandbox, state) + interval, state.retryAt);
    } else if (this.opts.probe) {
      const deadline = idleDeadlineMs(governed.sandbox);
      if (deadline !== undefined) at = Math.max(deadline - interval, state.probed + interval);
    }
    if (at === state.timerAt) return;
    this.clearTimer(state);
    if (at === undefined) return;
    state.timerAt = at;
    state.timer = this.clock.setTimeout(() => this.fire(key, state!), Math.max(0, at - this.clock.now()) + TIMER_SLACK_MS);
  }

  private fire(key: string, state: Tracked): void {
    state.timer = undefined;
    state.timerAt = undefined;
    if (this.tracked.get(key) !== state) return;
    if (state.open > 0) this.stampIfDue(key, state, 'connection');
    else this.probeIfDue(key, state);
    this.schedule(key);
  }

  private stampIfDue(key: string, state: Tracked, source: StampSource): void {
    const governed = this.governed(key);
    if (!governed || state.writing) return;
    const now = this.clock.now();
    const interval = activityStampIntervalMs(governed.policy);
    if (now - newestStamp(governed.sandbox, state) < interval || now < state.retryAt) return;
    const previous = state.stamped;
    state.writing = true;
    state.stamped = now;
    const [namespace, name] = splitKey(key);
    const body = { metadata: { annotations: { [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(now) } } };
    this.opts.client.patch(RESOURCES.sandboxes, namespace, name, 'merge', body).then(() => {
      this.opts.metrics?.activityStamped(namespace, source);
    }, (err: Error) => {
      state.stamped = previous;
      state.retryAt = this.clock.now() + Math.min(Math.floor(interval / 4), RETRY_MS);
      this.opts.log.debug({ namespace, sandbox: name, source, err: err.message }, 'could not stamp last activity; trying again shortly');
    }).finally(() => {
      state.writing = false;
      this.schedule(key);
    });
  }

  private probeIfDue(key: string, state: Tracked): void {
    const governed = this.governed(key);
    const probe = this.opts.probe;
    if (!governed || !probe || state.probing || state.open > 0) return;
    const deadline = idleDeadlineMs(governed.sandbox);
    const interval = activityStampIntervalMs(governed.policy);
    const now = this.clock.now();
    if (deadline === undefined || deadline - now > interval || now - state.probed < interval) return;
    state.probing = true;
    state.probed = now;
    void probe(governed.sandbox).then((running) => {
      state.probing = false;
      // A connection opened meanwhile stamped for itself.
      if (running && state.open === 0) this.stampIfDue(key, state, 'process');
      this.schedule(key);
    });
  }

  private clearTimer(state: Tracked): void {
    if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
    state.timer = undefined;
    state.timerAt = undefined;
  }

  private drop(key: string): void {
    const state = this.tracked.get(key);
    if (!state) return;
    this.clearTimer(state);
    this.tracked.delete(key);
  }
}

function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}

/** The newest stamp: the cache's, or the last one this router wrote, which the cache may not show yet. */
function newestStamp(sandbox: Sandbox, state: Tracked): number {
  return Math.max(lastActivityMs(sandbox) ?? 0, state.stamped);
}
