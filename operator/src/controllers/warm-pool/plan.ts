/**
 * One pass of a warm pool, decided (upstream's extensions/controllers/sandboxwarmpool_controller.go):
 * how many members to create, which to delete, which orphans to adopt, the status, the events and
 * when to look again.
 * The reconciler performs it: adoptions and label fixes, deletes (each recorded as a pending member
 * write before the call, with the uid and resourceVersion preconditions given here), creates in
 * the given waves (each recorded first), then the status patch if changed.
 */
import { WarmPoolConditionType, WarmPoolTemplateReason } from '#api/conditions';
import { formatGoDuration } from '#api/controller-flags';
import { slowStartWaves, takeTokens, type TokenBucket } from './batching';
import { catchUpGrant, type CatchUp, claimsFirstHold, isPoolShort } from '../claims-first';
import { type PoolMembers } from './classify';
import { poolSelector } from './desired';
import { NO_HOLD, replenishHold, type ReplenishHold } from './replenish';
import { scaleToZero } from './scale-to-zero';
import { PoolEventReason, desiredReplicas, type PoolFlags } from './types';
import {
  type ConditionInput, findCondition, isReady, removeCondition, sameConditions, type Sandbox, type SandboxTemplate, type SandboxWarmPool,
  type SandboxWarmPoolStatus, setCondition, timeMs,
} from '../../model';
import { type TemplateGate } from '../../model/template-gate';

/** What a pool remembers between passes (in memory; losing it on restart only resets pacing). */
export interface PoolState {
  readonly hold: ReplenishHold;
  readonly bucket?: TokenBucket;
  /** Whether the last pass held unschedulable members (events fire on transitions only). */
  readonly notProgressing: boolean;
  /** When the current stretch of waiting claims began holding refill back (controllers/claims-first/refill.ts). */
  readonly claimsFirstSinceMs?: number;
  /** The backlog a hold's bound left while claims still arrive, going out over one more bound (claims-first/refill.ts). */
  readonly catchUp?: CatchUp;
  /** When this process last wrote the pool's status (replica counts coalesce after it). */
  readonly statusWrittenAtMs?: number;
}

export const INITIAL_POOL_STATE: PoolState = { hold: NO_HOLD, notProgressing: false };

export interface PoolEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly action: string;
  readonly message: string;
}

export type DeleteCause = 'orphan-stale' | 'stuck' | 'stale' | 'scale-down';

/**
 * A member to delete. Both preconditions matter: `uid` so a namesake is never hit, and
 * `resourceVersion` so a member a claim adopted a moment ago (its ownership write changed the
 * version) fails the delete instead of being destroyed under the claim. Upstream deletes without a
 * version precondition and can lose that race.
 */
export interface MemberDelete {
  readonly sandbox: Sandbox;
  readonly cause: DeleteCause;
  readonly uid: string;
  readonly resourceVersion: string;
}

export interface PoolPlanInput {
  readonly pool: SandboxWarmPool;
  /** The pool's template; undefined when it does not exist (no creates then). */
  readonly template: SandboxTemplate | undefined;
  /**
   * Whether members may be built from the template now (template/gate.ts): no creates unless ok.
   * Deletes, adoption and status go on either way.
   */
  readonly gate: TemplateGate;
  readonly members: PoolMembers;
  /** Creates issued and not yet in the cache (pendingMemberWrites). */
  readonly pendingCreates: number;
  /** Claims waiting on this pool now without a member (ClaimPressure.waitingFor); refill may give way to them. @default 0 */
  readonly claimsWaiting?: number;
  /**
   * Newest creationTimestamp (ms) of the pool's claims in the cache: the idle clock of a pool with
   * `scaleToZeroAfterSeconds` (scale-to-zero.ts). Unread for other pools. @default - no claim
   */
  readonly newestClaimMs?: number;
  readonly state: PoolState;
  readonly flags: PoolFlags;
  /** The wall clock: what object timestamps are compared with and conditions are written with. */
  readonly now: number;
  /**
   * The clock of the pool's own intervals, kept in `state` (the replenish and claims-first holds,
   * the refill bucket, the status window): monotonic in the process, so a wall-clock step neither
   * ends them nor stretches them by the step. @default now
   */
  readonly elapsed?: number;
}

export interface PoolPlan {
  /** Members to create now (all built by buildPoolSandbox). */
  readonly creates: number;
  /** `creates` split into slow-start waves; stop at the first wave with an error. */
  readonly createWaves: number[];
  readonly deletes: MemberDelete[];
  readonly deleteWaves: number[];
  /** Orphans to adopt (orphanAdoptionPatch). */
  readonly adopt: Sandbox[];
  /** Members to label launch-type=warm (launchTypeLabelPatch). */
  readonly labelLaunchType: Sandbox[];
  readonly status: SandboxWarmPoolStatus;
  /** Whether `status` differs from the pool's; unchanged status is not written. */
  readonly statusChanged: boolean;
  readonly events: PoolEvent[];
  readonly state: PoolState;
  /** Look again after this long (grace deadlines, rechecks, the replenish hold, pacing). */
  readonly requeueAfterMs?: number;
  /** Whether creates gave way to waiting claims this pass (look again when they are served). */
  readonly heldForClaims: boolean;
}

/**
 * Scale-down order: members that are not Ready first (least useful), then stale ones (out of date
 * anyway; upstream does not prefer them), then the newest (they have had the least time to warm
 * caches and images; upstream's order).
 */
export function scaleDownOrder(a: Sandbox, b: Sandbox, staleUids: ReadonlySet<string>): number {
  const readyA = isReady(a) ? 1 : 0;
  const readyB = isReady(b) ? 1 : 0;
  if (readyA !== readyB) return readyA - readyB;
  const staleA = staleUids.has(a.metadata.uid ?? '') ? 0 : 1;
  const staleB = staleUids.has(b.metadata.uid ?? '') ? 0 : 1;
  if (staleA !== staleB) return staleA - staleB;
  const created = (timeMs(b.metadata.creationTimestamp) ?? 0) - (timeMs(a.metadata.creationTimestamp) ?? 0);
  return created !== 0 ? created : a.metadata.name.localeCompare(b.metadata.name);
}

function toDelete(sandbox: Sandbox, cause: DeleteCause): MemberDelete {
  return { sandbox, cause, uid: sandbox.metadata.uid ?? '', resourceVersion: sandbox.metadata.resourceVersion ?? '' };
}

/** The pool's TemplateReady condition for `gate`: True when members may be built, else the gate's reason and message. */
export function templateReadyCondition(gate: TemplateGate, observedGeneration: number): ConditionInput {
  return gate.ok
    ? {
      type: WarmPoolConditionType.TEMPLATE_READY,
      status: 'True',
      reason: WarmPoolTemplateReason.TEMPLATE_READY,
      observedGeneration,
      message: 'Members can be built from the template',
    }
    : { type: WarmPoolConditionType.TEMPLATE_READY, status: 'False', reason: gate.reason, observedGeneration, message: gate.message };
}

/**
 * Decide one pass.
 *
 * Counting: members going away (terminating, and stale, stuck or stale orphans, deleted this pass
 * or a later one) and creates not yet observed count against `replicas`, so at no time do more
 * than `replicas` unclaimed Sandboxes of the pool exist or wait to exist. Within that bound the
 * deficit is created at once, limited by the max batch size, the replenish hold and the refill
 * rate. Deletes are limited by the max batch size too, most urgent first.
 */
export function planPool(input: PoolPlanInput): PoolPlan {
  const { pool, members, flags, now } = input;
  const at = input.elapsed ?? now;
  // A pool with scaleToZeroAfterSeconds keeps no members while idle; spec.replicas stays as set.
  const idleness = scaleToZero({ pool, now, ...(input.newestClaimMs !== undefined ? { newestClaimMs: input.newestClaimMs } : {}) });
  const desired = idleness?.desired ?? desiredReplicas(pool);
  const active = members.active.length;
  const goingAway = members.terminating.length + members.stale.length + members.stuck.length + members.orphansToDelete.length;
  const requeues: number[] = [];

  // Deletes, most urgent first, at most one batch per pass.
  const wanted: MemberDelete[] = [
    ...members.orphansToDelete.map((s) => toDelete(s, 'orphan-stale')),
    ...members.stuck.map((s) => toDelete(s, 'stuck')),
    ...members.stale.map((s) => toDelete(s, 'stale')),
  ];
  const excess = active - desired;
  if (excess > 0) {
    const staleUids = new Set(members.staleKept.map((s) => s.metadata.uid ?? ''));
    const adopting = new Set(members.orphansToAdopt);
    const candidates = members.active.filter((s) => !adopting.has(s)).sort((a, b) => scaleDownOrder(a, b, staleUids));
    wanted.push(...candidates.slice(0, excess).map((s) => toDelete(s, 'scale-down')));
  }
  const deletes = wanted.slice(0, flags.maxBatchSize);
  // 1, not 0: a requeue of 0 means none.
  if (deletes.length < wanted.length) requeues.push(1);

  // Creates: none while the template is missing, its NetworkPolicy is not in the cache, or its
  // Pods would pass for the router (fail closed: a member made now would run unisolated).
  const deficit = input.template && input.gate.ok ? Math.max(0, desired - active - goingAway - input.pendingCreates) : 0;
  const hold = replenishHold(input.state.hold, active, desired, flags.replenishDelayMs, at);
  const claimsFirst = claimsFirstHold({
    sinceMs: input.state.claimsFirstSinceMs,
    claimsWaiting: input.claimsWaiting ?? 0,
    readyMembers: members.ready.length,
    maxDeferMs: flags.claimsFirstMaxDeferMs,
    now: at,
  });
  const holding = hold.holding || (claimsFirst.holding && deficit > 0);
  let creates = holding ? 0 : Math.min(deficit, flags.maxBatchSize);
  const unpaced = creates;
  const catchUp = catchUpGrant({
    state: input.state.catchUp,
    pastBound: claimsFirst.pastBound === true,
    short: isPoolShort(members.ready.length, desired, input.claimsWaiting ?? 0),
    deficit,
    want: creates,
    maxDeferMs: flags.claimsFirstMaxDeferMs,
    now: at,
  });
  creates = catchUp.granted;
  if (catchUp.nextAtMs !== undefined) requeues.push(catchUp.nextAtMs - at);
  if (hold.holding && deficit > 0 && hold.untilMs !== undefined) requeues.push(hold.untilMs - at);
  // The pool is also woken when a member is taken (its Sandbox's event), when a claim arrives and
  // when no claim waits any more (ClaimPressure's calm): controller.ts.
  if (claimsFirst.holding && deficit > 0 && claimsFirst.untilMs !== undefined) requeues.push(claimsFirst.untilMs - at);
  const grant = takeTokens(input.state.bucket, creates, flags.maxRefillRate, at);
  creates = grant.granted;
  if (grant.nextTokenAtMs !== undefined) requeues.push(grant.nextTokenAtMs - at);
  if (!holding && deficit > flags.maxBatchSize && creates === flags.maxBatchSize) requeues.push(1);

  // Status.
  const old = pool.status ?? {};
  const templateReady = templateReadyCondition(input.gate, pool.metadata.generation ?? 0);
  const withTemplate = setCondition(old.conditions ?? [], templateReady, now);
  // ScaledToZero only on pools with the field (dropped once when it is unset).
  const conditions = idleness
    ? setCondition(withTemplate, idleness.condition, now)
    : removeCondition(withTemplate, WarmPoolConditionType.SCALED_TO_ZERO);
  const status: SandboxWarmPoolStatus = {
    replicas: active,
    readyReplicas: members.ready.length,
    selector: poolSelector(pool),
    observedGeneration: pool.metadata.generation ?? 0,
    conditions,
    ...(idleness?.lastClaimTime !== undefined ? { lastClaimTime: idleness.lastClaimTime } : {}),
  };
  const meaningChanged = old.selector !== status.selector || old.observedGeneration !== status.observedGeneration
    || !sameConditions(old.conditions, conditions);
  // A newer lastClaimTime rides with the counts: it needs no write of its own before the window ends.
  const countsChanged = old.replicas !== status.replicas || old.readyReplicas !== status.readyReplicas || idleness?.lastClaimAdvanced === true;
  const lastWriteMs = input.state.statusWrittenAtMs;
  // Replica counts alone change with every claim, refill and Ready member: written at once, a busy
  // pool's status is rewritten about three times per claim. Such a change waits for the window
  // after the previous write and goes out as one (`--sandbox-warm-pool-status-window`).
  const coalesced = countsChanged && !meaningChanged && lastWriteMs !== undefined && at - lastWriteMs < flags.statusWindowMs;
  if (coalesced) requeues.push(lastWriteMs + flags.statusWindowMs - at);
  const statusChanged = (countsChanged || meaningChanged) && !coalesced;

  const events: PoolEvent[] = [];
  // Why the pool stopped creating, once per cause: the condition in the status is the memory, so a
  // restarted operator does not say it again.
  const previous = findCondition(old.conditions, WarmPoolConditionType.TEMPLATE_READY);
  if (!input.gate.ok && previous?.reason !== input.gate.reason) {
    events.push({ type: 'Warning', reason: input.gate.reason, action: 'Replenish', message: input.gate.message });
  } else if (input.gate.ok && previous !== undefined && previous.status !== 'True') {
    events.push({ type: 'Normal', reason: WarmPoolTemplateReason.TEMPLATE_READY, action: 'Replenish', message: templateReady.message });
  }

  // Not-progressing signal, on transitions only.
  const held = members.unschedulableHeld.length;
  if (held > 0) {
    requeues.push(flags.unschedulableRecheckMs);
    if (!input.state.notProgressing) {
      events.push({
        type: 'Warning',
        reason: PoolEventReason.NOT_PROGRESSING,
        action: 'Replenish',
        message: `${held}/${desired} sandboxes are unschedulable past the ${formatGoDuration(flags.readinessGraceMs)} readiness grace period; `
          + 'holding them instead of replacing them (a replacement could not be scheduled either)',
      });
    }
  } else if (input.state.notProgressing) {
    events.push({ type: 'Normal', reason: PoolEventReason.PROGRESSING, action: 'Replenish', message: 'No sandboxes are held as unschedulable any more' });
  }

  if (members.nextStuckCheckAtMs !== undefined) requeues.push(members.nextStuckCheckAtMs - now);
  // A timer at the idle moment; a claim meanwhile wakes the pool and moves it later.
  if (idleness?.idleAtMs !== undefined) requeues.push(idleness.idleAtMs - now);
  const requeueAfterMs = requeues.length > 0 ? Math.max(0, Math.min(...requeues)) : undefined;

  return {
    creates,
    createWaves: slowStartWaves(creates),
    deletes,
    deleteWaves: slowStartWaves(deletes.length),
    adopt: members.orphansToAdopt,
    labelLaunchType: members.needsLaunchTypeLabel,
    status,
    statusChanged,
    events,
    state: {
      hold: hold.state,
      ...(grant.bucket ? { bucket: grant.bucket } : {}),
      notProgressing: held > 0,
      ...(claimsFirst.sinceMs !== undefined ? { claimsFirstSinceMs: claimsFirst.sinceMs } : {}),
      ...(catchUp.state ? { catchUp: catchUp.state } : {}),
      ...(statusChanged ? { statusWrittenAtMs: at } : lastWriteMs !== undefined ? { statusWrittenAtMs: lastWriteMs } : {}),
    },
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
    // Also while the catch-up holds creates back: when no claim waits any more, the rest goes at once.
    heldForClaims: (claimsFirst.holding && deficit > 0) || catchUp.granted < unpaced,
  };
}
