/**
 * The pools' memory of member creates and deletes the Sandbox cache has not shown yet, so a pass
 * that runs on a lagging cache does not create the same members twice (upstream saw ~10x
 * over-creation without it, kubernetes-sigs/agent-sandbox#1215) or delete the same member twice.
 * One Expectations (runtime/expectations.ts) holds them for every pool, keyed by the member's
 * `namespace/name` and tagged with the pool's UID; the Sandbox informer's events settle them.
 *
 * Upstream's gate is all-or-nothing: while any earlier create or delete is unobserved, the pool
 * creates nothing, and a lost watch event idles it for the 5-minute timeout. Here:
 * - Creates are counted, not gated: pending creates are subtracted from the deficit, so the pool
 *   may keep creating up to `replicas` while earlier creates are in flight. A member claimed
 *   during a big refill is replaced at once instead of after the whole batch is observed.
 * - A create is recorded before its call, under the name the pool picked for the member, and
 *   checked against the cache on every pass, not only through events, so a missed event cannot
 *   leave a stale count behind once the cache has the object (as a member or not: a member claimed
 *   before the pool saw it is still observed).
 * - Every entry expires MEMBER_WRITE_TTL_MS after it was recorded (a create's: after its call
 *   returned). A truly lost event holds back only its own slot, and only until then, and the pass
 *   that wrote looks again at that time: the pool can never be wedged.
 * - A create whose outcome is unknown (timeout, connection reset, 5xx) keeps its slot until it
 *   expires or the cache shows the member: the object may exist, and counting it avoids a
 *   duplicate. A definite refusal (4xx) frees the slot at once.
 */
import { type Sandbox } from '../../model';
import { cacheShows, Expectations, type UnseenWrite } from '../../runtime/expectations';
import { splitKey, type Store } from '../../runtime/types';

/** Far above watch latency (milliseconds), short enough that a lost event costs little. */
export const MEMBER_WRITE_TTL_MS = 60_000;

export interface MemberWrite extends UnseenWrite {
  /** The UID of the pool that wrote. */
  readonly pool: string;
}

export type MemberWrites = Expectations<MemberWrite, Sandbox>;

export function memberWrites(ttlMs: number = MEMBER_WRITE_TTL_MS): MemberWrites {
  return new Expectations<MemberWrite, Sandbox>({ isShown: cacheShows, ttlMs });
}

/** The Sandbox cache, as the entries are keyed. */
export type SandboxCache = Pick<Store<Sandbox>, 'get'>;

export interface PendingMemberWrites {
  /** Creates the cache has not shown. */
  readonly creates: number;
  /** UIDs of the members whose delete the cache has not shown. */
  readonly deletes: ReadonlySet<string>;
}

/** The pool's writes the cache has not shown yet (dropping, for every pool, those it shows and those expired). */
export function pendingMemberWrites(writes: MemberWrites, poolUid: string, sandboxes: SandboxCache, nowMs: number): PendingMemberWrites {
  let creates = 0;
  const deletes = new Set<string>();
  for (const [, write] of writes.sweep(nowMs, cachedIn(sandboxes))) {
    if (write.pool !== poolUid) continue;
    if (write.deletedUid === undefined) creates++;
    else deletes.add(write.deletedUid);
  }
  return { creates, deletes };
}

/** When the pool's earliest member write expires, if any: it looks again then, in case an event was lost. */
export function memberWritesExpireAtMs(writes: MemberWrites, poolUid: string): number | undefined {
  return writes.nextExpiryAtMs((write) => write.pool === poolUid);
}

/**
 * The call of a recorded write returned (a success, or an outcome unknown): unless the cache shows
 * it already, the entry waits from now on, however long the call took.
 */
export function restartMemberWrite(writes: MemberWrites, key: string, sandboxes: SandboxCache, nowMs: number): void {
  const write = writes.pending(key, cachedIn(sandboxes)(key), nowMs);
  if (write) writes.expect(key, write, nowMs);
}

/** The pool is gone: its writes no longer count for anything. */
export function forgetMemberWrites(writes: MemberWrites, poolUid: string, sandboxes: SandboxCache, nowMs: number): void {
  for (const [key, write] of writes.sweep(nowMs, cachedIn(sandboxes))) if (write.pool === poolUid) writes.forget(key);
}

function cachedIn(sandboxes: SandboxCache): (key: string) => Sandbox | undefined {
  return (key) => {
    const { namespace, name } = splitKey(key);
    return sandboxes.get(namespace, name);
  };
}
