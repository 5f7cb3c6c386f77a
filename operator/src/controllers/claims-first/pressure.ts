/**
 * Claims waiting for a Sandbox (part of claims-first, ./index.ts).
 *
 * On a small cluster the API server is the bound: in a burst, every request the operator sends
 * that does not serve a claim (a claimed Pod's relabel, a Sandbox status rewrite after adoption,
 * observability annotations, Events, pool refill) delays the two writes a waiting claim needs.
 * `ClaimPressure` knows which claims wait, per pool; `Deferral` (./deferral.ts) lets a controller
 * put deferrable work off while they do, and brings it back when they stop, or after `maxDeferMs`
 * at the latest, so deferred work is late but never lost or starved under a claim load that never
 * ends (`--claims-first-max-defer`).
 *
 * A claim counts as pressure for `windowMs` after this process first saw it waiting: one that waits
 * longer (no member, a missing template) is not a burst to make room for, and must not hold the
 * rest of the operator's work back for as long as it waits.
 *
 * The pressure also lingers `lingerMs` after the last waiting claim is served (per pool and in
 * all): agents that claim one after another leave a gap of a few milliseconds between one claim's
 * Ready and the next claim's create, and work let go in that gap reaches the API server just as
 * the next claim's writes do.
 *
 * A claim whose member the Sandbox cache already shows taken, with its status still to be written,
 * is bound: it is pressure (its status write is to come) but no longer asks the pool for a member
 * (`waitingFor` leaves it out, `busyOn` does not).
 */
import { KINDS } from '#api/groups';
import { controllerRefOf, refIsKind } from '../../model/meta';
import { MONOTONIC_CLOCK, type Clock, type TimerHandle } from '../../runtime/clock';
import type { Informer, KubeObject } from '../../runtime/types';

/** How long a waiting claim counts as pressure. */
export const PRESSURE_WINDOW_MS = 10_000;

/** How long the pressure outlasts the last waiting claim. */
export const PRESSURE_LINGER_MS = 100;

interface Waiting {
  readonly pool: string;
  readonly sinceMs: number;
  /** The claim's UID, when known: a Sandbox is matched to its claim by UID, never by name alone. */
  readonly uid?: string;
  /** A Sandbox of the cache names the claim its controller: it has its member, its status write is to come. */
  bound: boolean;
}

export class ClaimPressure {
  /** By claim key, in the order first seen waiting (so the oldest are at the front). */
  private readonly waiting = new Map<string, Waiting>();
  private readonly perPool = new Map<string, number>();
  /** Of those, the claims whose member the Sandbox cache already shows taken. */
  private readonly boundPerPool = new Map<string, number>();
  private readonly calmListeners = new Set<() => void>();
  private readonly shortPools = new Set<string>();
  /** When each pool's last waiting claim was served, while that is under `lingerMs` ago. */
  private readonly servedAt = new Map<string, number>();
  private lastServedMs?: number;
  private calmTimer?: TimerHandle;
  private lingerTimer?: TimerHandle;

  /** `clock` measures the windows: the process gives the monotonic one, so a wall-clock step changes nothing. */
  public constructor(
    private readonly clock: Clock = MONOTONIC_CLOCK,
    private readonly windowMs: number = PRESSURE_WINDOW_MS,
    private readonly lingerMs: number = PRESSURE_LINGER_MS,
  ) {}

  /** The clock this pressure measures time on (deferrals share it). */
  public now(): number {
    return this.clock.now();
  }

  /** Claim `key` (UID `uid`) waits for a member of pool `pool` (`namespace/name`). Repeated calls keep the first time. */
  public waitingOn(key: string, pool: string, uid?: string): void {
    const known = this.waiting.get(key);
    // A namesake (deleted and created again, seen as one update after a relist) starts afresh.
    if (known && (uid === undefined || known.uid === undefined || known.uid === uid)) return;
    if (known) this.remove(key, known);
    this.waiting.set(key, { pool, sinceMs: this.now(), bound: false, ...(uid !== undefined ? { uid } : {}) });
    bump(this.perPool, pool, 1);
    this.armCalmTimer();
  }

  /**
   * Claim `key` has its member (the Sandbox cache shows it taken), but not yet its status: it still
   * counts as pressure (its status write is to come), not as a claim the pool's Ready members must
   * cover, since the member it took no longer counts among them either.
   */
  public bound(key: string, uid?: string): void {
    const entry = this.waiting.get(key);
    if (!entry || entry.bound || (uid !== undefined && entry.uid !== undefined && entry.uid !== uid)) return;
    entry.bound = true;
    bump(this.boundPerPool, entry.pool, 1);
  }

  /** Claim `key` has its Sandbox, or is gone. */
  public settled(key: string): void {
    const entry = this.waiting.get(key);
    if (!entry) return;
    this.remove(key, entry);
    if (this.lingerMs > 0 && !this.perPool.has(entry.pool)) {
      const now = this.now();
      this.servedAt.set(entry.pool, now);
      this.lastServedMs = now;
    }
    this.expire();
    if (this.waiting.size > 0) return;
    if (this.lingering(this.lastServedMs)) this.armLingerTimer();
    else this.notifyCalm();
  }

  /** Whether any claim waits (within its window), or the last one was served under `lingerMs` ago. */
  public get busy(): boolean {
    this.expire();
    return this.waiting.size > 0 || this.lingering(this.lastServedMs);
  }

  /** Claims waiting (within their window) on pool `pool` that have no member yet. */
  public waitingFor(pool: string): number {
    this.expire();
    return (this.perPool.get(pool) ?? 0) - (this.boundPerPool.get(pool) ?? 0);
  }

  /**
   * Whether claims wait on pool `pool` (with a member or not), or its last one was served under
   * `lingerMs` ago: what its refill gives way to.
   */
  public busyOn(pool: string): boolean {
    this.expire();
    if (this.perPool.has(pool)) return true;
    const at = this.servedAt.get(pool);
    if (at === undefined) return false;
    if (this.lingering(at)) return true;
    this.servedAt.delete(pool);
    return false;
  }

  /**
   * Pool `pool` is short of Ready members (at or under its low-water mark, or fewer than the claims
   * waiting on it), or no longer: said by the pool controller on each pass. A short pool's refill is
   * what its waiting claims need.
   */
  public poolShort(pool: string, short: boolean): void {
    if (short) this.shortPools.add(pool);
    else this.shortPools.delete(pool);
  }

  /**
   * Whether claims wait on `pool` (bound ones too: a pool is woken by the take, so by then the claim
   * that drained it already has its member) and it is short: its new members serve the claims to
   * come, so their writes go with the normal work. A pool that is not short refills in the background.
   */
  public membersWanted(pool: string): boolean {
    this.expire();
    return this.shortPools.has(pool) && this.perPool.has(pool);
  }

  /** Call `fn` every time the operator turns calm (no claim waits any more); returns the unsubscribe. */
  public onCalm(fn: () => void): () => void {
    this.calmListeners.add(fn);
    return () => this.calmListeners.delete(fn);
  }

  /**
   * Keep claims of `informer` up to date: waiting while unbound (no status.sandbox) and not
   * deleting. With `sandboxes`, a claim also counts as bound once a Sandbox of that cache names it
   * its controller: the same cache the pools count their Ready members in, so a member taken and
   * the claim that took it leave the two counts together.
   */
  public follow<T extends KubeObject & { spec: { warmPoolRef?: { name: string } }; status?: { sandbox?: { name?: string } } }>(
    informer: Informer<T>,
    sandboxes?: Informer<KubeObject>,
  ): void {
    const update = (claim: T) => {
      const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
      const pool = claim.spec.warmPoolRef?.name;
      if (pool === undefined || claim.metadata.deletionTimestamp || claim.status?.sandbox?.name) this.settled(key);
      else this.waitingOn(key, `${claim.metadata.namespace}/${pool}`, claim.metadata.uid);
    };
    informer.addHandlers({
      onAdd: update,
      onUpdate: (_old, claim) => update(claim),
      onDelete: (claim) => this.settled(`${claim.metadata.namespace}/${claim.metadata.name}`),
    });
    if (!sandboxes) return;
    const taken = (sandbox: KubeObject) => {
      // A Sandbox on its way out is no member for anyone.
      if (this.waiting.size === 0 || sandbox.metadata.deletionTimestamp) return;
      const ref = controllerRefOf(sandbox);
      if (ref && refIsKind(ref, KINDS.claim)) this.bound(`${sandbox.metadata.namespace}/${ref.name}`, ref.uid);
    };
    sandboxes.addHandlers({ onAdd: taken, onUpdate: (_old, sandbox) => taken(sandbox) });
  }

  private lingering(servedMs: number | undefined): boolean {
    return servedMs !== undefined && this.now() - servedMs < this.lingerMs;
  }

  /** The linger after the last served claim ends: calm then, unless claims came back meanwhile. */
  private armLingerTimer(): void {
    if (this.lingerTimer !== undefined) this.clock.clearTimeout(this.lingerTimer);
    this.lingerTimer = this.clock.setTimeout(() => {
      this.lingerTimer = undefined;
      if (!this.busy) {
        this.servedAt.clear();
        this.notifyCalm();
      } else if (this.waiting.size === 0) {
        // Node's timers count whole milliseconds on their own clock and can fire a little before
        // the linger ends on this one: wait out the rest. (Claims back meanwhile: their settle calms.)
        this.armLingerTimer();
      }
    }, Math.max(1, this.lastServedMs! + this.lingerMs - this.now()));
  }

  private remove(key: string, entry: Waiting): void {
    this.waiting.delete(key);
    bump(this.perPool, entry.pool, -1);
    if (entry.bound) bump(this.boundPerPool, entry.pool, -1);
  }

  /** Claims waiting past their window stop counting (the front of the map is the oldest). */
  private expire(): void {
    const cutoff = this.now() - this.windowMs;
    for (const [key, entry] of this.waiting) {
      if (entry.sinceMs > cutoff) break;
      this.remove(key, entry);
    }
  }

  /** The oldest claim's window ends without a settle: the operator turns calm then, and must say so. */
  private armCalmTimer(): void {
    if (this.calmTimer !== undefined) return;
    const oldest = this.waiting.values().next().value as Waiting | undefined;
    if (!oldest) return;
    this.calmTimer = this.clock.setTimeout(() => {
      this.calmTimer = undefined;
      if (!this.busy) this.notifyCalm();
      else if (this.waiting.size > 0) this.armCalmTimer();
      else this.armLingerTimer();
    }, Math.max(1, oldest.sinceMs + this.windowMs - this.now()));
  }

  private notifyCalm(): void {
    for (const timer of [this.calmTimer, this.lingerTimer]) if (timer !== undefined) this.clock.clearTimeout(timer);
    this.calmTimer = undefined;
    this.lingerTimer = undefined;
    for (const fn of [...this.calmListeners]) fn();
  }
}

/** Add `by` to `counts[key]`, dropping the key at 0. */
function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
