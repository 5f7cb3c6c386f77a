/**
 * Who is in a warm pool, and in what state. The result decides what the pool counts, creates and
 * deletes; see plan.ts.
 */
import { ConditionType } from '#api/conditions';
import { WarmPoolUpdateStrategyType } from '#api/enums';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { type PoolFlags } from './types';
import { controllerRefOf, findCondition, isControlledBy, isDeleting, isReady, isUnschedulable, LaunchType, type Sandbox, type SandboxTemplate, type SandboxWarmPool, timeMs } from '../../model';
import { staleCheck, templateFingerprint, type BlueprintFingerprint } from '../../model/blueprint';

export interface PoolMembers {
  /**
   * What the pool counts as its members (`status.replicas`): owned and alive, plus orphans it is
   * adopting this pass. Includes stale members kept under OnReplenish and held unschedulable ones.
   */
  readonly active: Sandbox[];
  /** Active members whose Ready condition is True. */
  readonly ready: Sandbox[];
  /** Owned members already going away: a deletionTimestamp, or a delete we issued that the cache has not shown. */
  readonly terminating: Sandbox[];
  /** Owned members out of date with the template, to delete now (Recreate only). */
  readonly stale: Sandbox[];
  /** Out-of-date members kept (OnReplenish): still claimable, replaced once claimed. Subset of `active`. */
  readonly staleKept: Sandbox[];
  /** Members not Ready for longer than the readiness grace period, to delete and replace. */
  readonly stuck: Sandbox[];
  /** Not Ready past the grace period because their Pod cannot be scheduled: kept, as a replacement could not schedule either. Subset of `active`. */
  readonly unschedulableHeld: Sandbox[];
  /** Sandboxes with the pool's label and no controller, matching the template: the pool adopts them. Subset of `active`. */
  readonly orphansToAdopt: Sandbox[];
  /** Orphans with the pool's label that do not match the template: deleted. */
  readonly orphansToDelete: Sandbox[];
  /** Owned members without `launch-type=warm` (made by an older controller): labelled. Subset of `active`. */
  readonly needsLaunchTypeLabel: Sandbox[];
  /** When the earliest young, not-Ready member reaches the grace period; the pool looks again then. */
  readonly nextStuckCheckAtMs?: number;
}

/**
 * How long this process has itself watched a member stay not Ready (on its monotonic clock), or
 * undefined when it has not seen it so.
 */
export type ObservedNotReady = (sandbox: Sandbox) => number | undefined;

/** Whether the pool replaces stale members at once; unknown values mean OnReplenish, as upstream. */
export function isRecreate(pool: SandboxWarmPool): boolean {
  return pool.spec.updateStrategy?.type === WarmPoolUpdateStrategyType.RECREATE;
}

/**
 * Since when a member has been not Ready: its creation, or its last Ready transition if later.
 * Measuring from the transition means a member that was Ready and lost readiness gets a full grace
 * period to recover; upstream measures from creation and replaces such a member at once.
 */
export function notReadySinceMs(sandbox: Sandbox): number {
  const created = timeMs(sandbox.metadata.creationTimestamp) ?? 0;
  const transition = timeMs(findCondition(sandbox.status?.conditions, ConditionType.READY)?.lastTransitionTime) ?? 0;
  return Math.max(created, transition);
}

/**
 * Sort the Sandboxes carrying `pool`'s membership label into the groups of {@link PoolMembers}.
 *
 * - Owned means controlled by this pool's UID; a Sandbox controlled by anything else (a claim, a
 *   previous pool of the same name) is not ours and is ignored.
 * - Without a template (not found yet, or deleted) nothing is judged stale and orphans are left
 *   alone: deleting on incomplete information could empty a pool by mistake.
 * - `pendingDeletes` are UIDs whose delete we issued (member-writes.ts): counted as terminating even
 *   before the cache shows it, so they are neither counted as members nor deleted twice. Orphans
 *   being deleted by someone else are not ours and are not counted.
 * - A member is stuck when it has been not Ready for the readiness grace period by its timestamps
 *   (written by the API server's clock, read on this process's wall clock) and, with
 *   `observedNotReady`, also for that long as this process watched it. Timestamps alone would turn
 *   a wall clock ahead of the API server's (a step, skew) into members stuck at birth, and the pool
 *   would replace every new member as soon as it is made, in a loop; a timestamp ahead of the wall
 *   clock counts for nothing. The cost: after a restart or a change of leader, a member already
 *   stuck is replaced one grace period later. Unlike the claim's (which follows its members on the
 *   informer), the pool's watch is sampled at its own passes: a member that was Ready again between
 *   two passes and lost it once more keeps its first sighting, and only its transition timestamp
 *   gives it a fresh grace period, so here the timestamps still count beside the watch.
 */
export function classifyMembers(
  pool: SandboxWarmPool,
  template: SandboxTemplate | undefined,
  sandboxes: readonly Sandbox[],
  now: number,
  flags: PoolFlags,
  pendingDeletes: ReadonlySet<string> = new Set(),
  observedNotReady?: ObservedNotReady,
): PoolMembers {
  const out = {
    active: [] as Sandbox[],
    ready: [] as Sandbox[],
    terminating: [] as Sandbox[],
    stale: [] as Sandbox[],
    staleKept: [] as Sandbox[],
    stuck: [] as Sandbox[],
    unschedulableHeld: [] as Sandbox[],
    orphansToAdopt: [] as Sandbox[],
    orphansToDelete: [] as Sandbox[],
    needsLaunchTypeLabel: [] as Sandbox[],
  };
  let nextStuckCheckAtMs: number | undefined;
  const label = NameHash.of(pool.metadata.name);
  const fingerprint = template ? templateFingerprint(template) : undefined;
  const isStaleMember = fingerprint ? staleCheck(pool.spec.sandboxTemplateRef.name, fingerprint) : undefined;
  const recreate = isRecreate(pool);

  for (const sandbox of sandboxes) {
    if (sandbox.metadata.namespace !== pool.metadata.namespace) continue;
    if (sandbox.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX] !== label) continue;
    const orphan = controllerRefOf(sandbox) === undefined;
    if (!orphan && !isControlledBy(sandbox, pool.metadata.uid)) continue;

    const uid = sandbox.metadata.uid ?? '';
    if (pendingDeletes.has(uid) || (isDeleting(sandbox) && !orphan)) {
      out.terminating.push(sandbox);
      continue;
    }
    let stale = false;
    if (orphan) {
      if (isDeleting(sandbox) || !isStaleMember) continue;
      if (isStaleMember(sandbox, true)) {
        out.orphansToDelete.push(sandbox);
        continue;
      }
    } else {
      stale = isStaleMember !== undefined && isStaleMember(sandbox, false);
      if (stale && recreate) {
        out.stale.push(sandbox);
        continue;
      }
    }

    if (!isReady(sandbox)) {
      // When the grace ends, on the wall clock: by the timestamps, and by this process's own watch.
      // A timestamp ahead of this clock (its writer's clock ahead, or this one stepped back) says
      // nothing, and the watch alone decides.
      const since = notReadySinceMs(sandbox);
      const byTimestamps = since + flags.readinessGraceMs;
      const byWatch = observedNotReady ? now + flags.readinessGraceMs - (observedNotReady(sandbox) ?? 0) : undefined;
      const graceEndsAt = byWatch === undefined ? byTimestamps : since > now ? byWatch : Math.max(byTimestamps, byWatch);
      if (now < graceEndsAt) {
        nextStuckCheckAtMs = Math.min(nextStuckCheckAtMs ?? graceEndsAt, graceEndsAt);
      } else if (isUnschedulable(sandbox)) {
        out.unschedulableHeld.push(sandbox);
      } else if (!orphan) {
        // An orphan past the grace period is adopted first and judged as a member next pass.
        out.stuck.push(sandbox);
        continue;
      }
    } else {
      out.ready.push(sandbox);
    }
    out.active.push(sandbox);
    if (orphan) out.orphansToAdopt.push(sandbox);
    if (stale) out.staleKept.push(sandbox);
    if (!orphan && sandbox.metadata.labels?.[SandboxLabels.LAUNCH_TYPE] !== LaunchType.WARM) out.needsLaunchTypeLabel.push(sandbox);
  }
  return { ...out, ...(nextStuckCheckAtMs !== undefined ? { nextStuckCheckAtMs } : {}) };
}
