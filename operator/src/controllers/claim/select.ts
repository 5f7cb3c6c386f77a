/**
 * Which warm Sandbox a claim takes (upstream's getCandidate in
 * extensions/controllers/sandboxclaim_controller.go), chosen from the pool's members in the
 * informer's cache rather than from upstream's process-local queue: the cache holds no ghosts
 * (deleted or already-claimed keys) and is complete after a restart without being rebuilt from
 * create events. CandidateRanking states the choice in one pass over the pool; the controller
 * makes it from WarmCandidateIndex (candidate-index.ts), which keeps the same ranking up to date
 * from the cache's events so a pick does not walk the pool.
 */
import { ClaimReadyReason } from '#api/conditions';
import { WarmPoolUpdateStrategyType } from '#api/enums';
import { KINDS } from '#api/groups';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { type ClaimProblem } from './status';
import { controllerRefOf, isDeleting, isReady, isUnschedulable, refIsKind, type Sandbox, type SandboxClaim, type SandboxTemplate, timeMs } from '../../model';
import { staleCheck, templateFingerprint, type BlueprintFingerprint } from '../../model/blueprint';

/**
 * How long a claim waits for candidates that have no Pod IP yet (upstream's 2s): the first member to
 * get one is taken. After that it takes the oldest of them rather than start cold (see claimPath).
 */
export const WARM_CANDIDATE_GRACE_MS = 2000;
/**
 * A member still without a Pod IP this long after it was made counts as stuck (not scheduled, or its
 * node cannot start it): after the grace a claim does not take it, but a younger one, or starts
 * cold when there is none. A Pod gets its IP once its sandbox is up, before any image of its own is
 * pulled: seconds on a working node.
 */
export const PENDING_MEMBER_STUCK_MS = 30_000;
/** How often it looks again meanwhile, unless a member's update brings it back sooner. */
export const NETWORK_PENDING_RECHECK_MS = 500;

export interface SelectionContext {
  readonly claim: SandboxClaim;
  /** UID of the claim's pool; when given, members of a deleted pool of the same name are refused. */
  readonly poolUid?: string;
  /** The pool's template name and current blueprint; required to take anything under Recreate. */
  readonly templateName?: string;
  readonly fingerprint?: BlueprintFingerprint;
}

export type Selection =
  | { readonly kind: 'candidate'; readonly sandbox: Sandbox; readonly ready: boolean; readonly stale: boolean }
  /** Only members without a Pod IP yet: worth a short wait. */
  | { readonly kind: 'network-pending'; readonly count: number }
  | { readonly kind: 'none'; readonly reason: string };

/**
 * Whether `sandbox` is an unclaimed member of the claim's pool that a claim may take: same
 * namespace, not being deleted, carrying the pool and template-ref labels, controlled by a
 * SandboxWarmPool of that name (any version; the pool's UID too when known).
 */
export function isAdoptable(sandbox: Sandbox, claim: SandboxClaim, poolUid?: string, poolHash = NameHash.of(claim.spec.warmPoolRef.name)): boolean {
  const pool = claim.spec.warmPoolRef.name;
  const ref = controllerRefOf(sandbox);
  return sandbox.metadata.namespace === claim.metadata.namespace
    && !isDeleting(sandbox)
    && sandbox.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX] === poolHash
    && sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] !== undefined
    && refIsKind(ref, KINDS.warmPool) && ref!.name === pool
    && (poolUid === undefined || ref!.uid === poolUid);
}

/** Whether a claim must start cold whatever the pool holds: warm Pods lack its env and volumes. */
export function needsColdStart(claim: SandboxClaim): boolean {
  return (claim.spec.env?.length ?? 0) > 0 || (claim.spec.volumeClaimTemplates?.length ?? 0) > 0;
}

/** The fingerprint of a template, recomputed only when the template changes: every claim pass needs it. */
const fingerprints = new WeakMap<SandboxTemplate, BlueprintFingerprint>();
export function fingerprintOf(template: SandboxTemplate): BlueprintFingerprint {
  let fp = fingerprints.get(template);
  if (!fp) {
    fp = templateFingerprint(template);
    fingerprints.set(template, fp);
  }
  return fp;
}

/**
 * A candidate with its creation time. The API server writes metav1.Time as RFC 3339 UTC with
 * second precision, so comparing the strings orders them in time without parsing: selection runs
 * for every claim over every member of the pool, and Date.parse would be most of its cost.
 */
interface Aged {
  readonly sandbox: Sandbox;
  readonly created: string;
}

const older = (a: Aged, b: Aged) => a.created < b.created || (a.created === b.created && a.sandbox.metadata.name < b.sandbox.metadata.name);

/**
 * Among equally good candidates (those not in `exclude`), spread claims across nodes: take from
 * the node holding the most of them (so the next claim likely lands elsewhere and the pool stays
 * balanced), ties to the node with the oldest candidate; then the oldest on that node. Candidates
 * without a node name come last. One pass over the tier, no sorting; undefined when none is left.
 */
function spreadPick(tier: readonly Aged[], exclude: ReadonlySet<string>): Sandbox | undefined {
  const nodes = new Map<string, { count: number; oldest: Aged }>();
  let unscheduled: Aged | undefined;
  for (const c of tier) {
    if (exclude.has(c.sandbox.metadata.uid ?? '')) continue;
    const node = c.sandbox.status?.nodeName;
    if (!node) {
      if (!unscheduled || older(c, unscheduled)) unscheduled = c;
      continue;
    }
    const entry = nodes.get(node);
    if (!entry) {nodes.set(node, { count: 1, oldest: c });} else {
      entry.count++;
      if (older(c, entry.oldest)) entry.oldest = c;
    }
  }
  let best: { count: number; oldest: Aged } | undefined;
  for (const entry of nodes.values()) {
    if (!best || entry.count > best.count || (entry.count === best.count && older(entry.oldest, best.oldest))) best = entry;
  }
  return (best?.oldest ?? unscheduled)?.sandbox;
}

const NOTHING_EXCLUDED: ReadonlySet<string> = new Set();

export const RECREATE_UNVERIFIABLE = 'the pool uses Recreate and its template is unknown, so no member can be verified as current';
export const NO_MEMBER = 'the pool has no unclaimed member to take';

/** A claim's candidates: the best one not excluded, asked again with more exclusions after a conflict. */
export interface Candidates {
  best(exclude?: ReadonlySet<string>): Selection;
  /**
   * The oldest member without a Pod IP not excluded and not `stuck` (up to date before stale, never
   * stale under Recreate): the one nearest to Ready when none has an IP. Asked only once the grace
   * is over.
   */
  oldestPending(exclude?: ReadonlySet<string>, stuck?: StuckCheck): Sandbox | undefined;
}

/** Whether a member without a Pod IP is stuck: passed over by oldestPending. */
export type StuckCheck = (member: Sandbox) => boolean;

/** How long this process has watched an object (ms on the elapsed clock), undefined when it has not seen it. */
export type Watched = (obj: Sandbox) => number | undefined;

/**
 * A member without a Pod IP is stuck when its Pod is reported unschedulable, or once it has gone
 * PENDING_MEMBER_STUCK_MS without one: as this process watched it (`watched`, on the monotonic
 * clock), else by its creation timestamp (an unreadable one counts as old, a future one as new).
 * The watch, when there is one, decides alone: this process cannot have watched a member for longer
 * than it has existed, so with the clocks agreeing the timestamp adds nothing, and with them apart
 * (the wall clock stepped or skewed from the API server's) the timestamp is what is wrong; read
 * alone it made every member stuck at birth with the wall clock ahead, and every claim start cold.
 * The cost: after a restart or a change of leader a member stuck all along is taken again for up to
 * that long, unless it is unschedulable.
 */
export function pendingStuck(now: number, watched?: Watched): StuckCheck {
  return (member) => {
    if (isUnschedulable(member)) return true;
    if (watched) return (watched(member) ?? 0) >= PENDING_MEMBER_STUCK_MS;
    return (timeMs(member.metadata.creationTimestamp) ?? -Infinity) <= now - PENDING_MEMBER_STUCK_MS;
  };
}

/**
 * The pool's members a claim may take, ranked in one pass over the pool (pools can hold
 * thousands); `best` then takes the top one not excluded. A claim whose adoption write conflicted
 * asks for the next best without looking at the pool again. Exclusions are applied at each pick,
 * not at ranking, because they grow while the claim's writes are in flight (its conflicts, other
 * claims' adoptions), and node spread is judged over the members still on offer.
 *
 * Preference: Ready over not-yet-Ready (a member with an IP that is still starting beats a cold
 * start); up to date over stale (OnReplenish keeps stale members claimable, but a claim made after
 * a template change should get the new template when one is there; upstream takes whichever is
 * first in its queue); then node spread and age. Never a stale member under Recreate, and nothing
 * at all under Recreate while the template is unknown: an unverified member might be stale.
 * Members without Pod IPs are not ranked (the claim could not reach them yet): `best` counts them,
 * and `oldestPending` names the one claimPath takes when the grace for them is over.
 */
export class CandidateRanking implements Candidates {
  /** Ready, Ready but stale, starting, starting and stale. */
  private readonly tiers: Aged[][] = [[], [], [], []];
  /** Adoptable members that have no Pod IP yet: up to date, stale. */
  private readonly awaitingIp: Aged[][] = [[], []];
  private readonly refusal?: string;

  public constructor(members: readonly Sandbox[], poolUpdateStrategy: string | undefined, context: SelectionContext) {
    const recreate = poolUpdateStrategy === WarmPoolUpdateStrategyType.RECREATE;
    const known = context.fingerprint !== undefined && context.templateName !== undefined;
    if (recreate && !known) {
      this.refusal = RECREATE_UNVERIFIABLE;
      return;
    }
    // Computed once per ranking, not once per member.
    const poolHash = NameHash.of(context.claim.spec.warmPoolRef.name);
    const isStaleMember = known ? staleCheck(context.templateName!, context.fingerprint!) : undefined;
    for (const s of members) {
      if (!isAdoptable(s, context.claim, context.poolUid, poolHash)) continue;
      const stale = isStaleMember !== undefined && isStaleMember(s, false);
      if (stale && recreate) continue;
      const aged = { sandbox: s, created: s.metadata.creationTimestamp ?? '' };
      if ((s.status?.podIPs?.length ?? 0) === 0) this.awaitingIp[stale ? 1 : 0].push(aged);
      else this.tiers[(isReady(s) ? 0 : 2) + (stale ? 1 : 0)].push(aged);
    }
  }

  /** The best member whose UID is not in `exclude`, else why there is none. */
  public best(exclude: ReadonlySet<string> = NOTHING_EXCLUDED): Selection {
    if (this.refusal) return { kind: 'none', reason: this.refusal };
    for (const [tier, members] of this.tiers.entries()) {
      const sandbox = spreadPick(members, exclude);
      if (sandbox) return { kind: 'candidate', sandbox, ready: tier < 2, stale: tier % 2 === 1 };
    }
    const pending = this.awaitingIp.flat().filter((c) => !exclude.has(c.sandbox.metadata.uid ?? '')).length;
    if (pending > 0) return { kind: 'network-pending', count: pending };
    return { kind: 'none', reason: NO_MEMBER };
  }

  public oldestPending(exclude: ReadonlySet<string> = NOTHING_EXCLUDED, stuck?: StuckCheck): Sandbox | undefined {
    for (const members of this.awaitingIp) {
      let oldest: Aged | undefined;
      for (const c of members) {
        if (exclude.has(c.sandbox.metadata.uid ?? '') || stuck?.(c.sandbox)) continue;
        if (!oldest || older(c, oldest)) oldest = c;
      }
      if (oldest) return oldest.sandbox;
    }
    return undefined;
  }
}

/** What is left of a claim's grace (ms): by this process's watch of it when known (see pendingStuck for why alone), else by its creation timestamp. */
function graceLeft(claim: SandboxClaim, now: number, graceMs: number, watchedMs?: number): number {
  if (watchedMs !== undefined) return graceMs - watchedMs;
  return (timeMs(claim.metadata.creationTimestamp) ?? now) + graceMs - now;
}

/** How soon a claim whose candidates all conflicted looks again: the cache is about to deliver the newer versions. */
export const ADOPTION_CONFLICT_RETRY_MS = 50;

export type ClaimPath =
  | { readonly kind: 'adopt'; readonly sandbox: Sandbox }
  /** Look again after `afterMs`; `problem`, when set, is the Ready reason to report meanwhile. */
  | { readonly kind: 'wait'; readonly afterMs: number; readonly problem?: ClaimProblem }
  | { readonly kind: 'cold'; readonly why: string };

export interface ClaimPathOptions {
  /** How long to wait for members that only lack a Pod IP. */
  readonly graceMs?: number;
  /**
   * The member to take when the grace is over and still none has an IP: Candidates.oldestPending,
   * given which members count as stuck.
   */
  readonly oldestPending?: (stuck: StuckCheck) => Sandbox | undefined;
  /**
   * How long this process has watched the claim (ms on the elapsed clock): when given, its grace
   * runs on this instead of its creation timestamp, so a wall clock ahead of the API server's does
   * not end every grace at once, nor one behind make it last an hour (see pendingStuck).
   */
  readonly watchedMs?: number;
  /** How long this process has watched each member: see pendingStuck. */
  readonly watchedMember?: Watched;
  /** Adoption writes that failed with 409 in this pass (those members are excluded from `selection`). */
  readonly conflicts?: number;
}

/**
 * Warm or cold. Members that only lack a Pod IP are worth waiting for while the claim is younger
 * than the grace period (an IP usually arrives within a second, a cold start takes far longer), and
 * the first to get one is taken. When the grace is over and none has, the claim takes the oldest of
 * them: it started before any Sandbox the claim could create now, so it is nearer to Ready, and no
 * second Pod starts for the same claim on a node that is already slow
 * (a busy real node can take more than 2 s to give a new Pod its IP). Upstream starts cold here.
 * Members this process has watched start for PENDING_MEMBER_STUCK_MS or more (or, with no watch,
 * made that long ago) and still without an IP, and those whose Pods cannot be scheduled, are passed
 * over as stuck; with only those, the claim starts cold, as upstream.
 *
 * A 409 on the adoption write means the member changed since the cache saw it: another claim took
 * it, or only its status moved on. When conflicts emptied the candidate list, the claim looks again
 * shortly (AdoptionConflict) instead of starting cold: if the member is still free, the next pass
 * sees its new version and takes it; if another claim took it, the next pass goes cold.
 */
export function claimPath(claim: SandboxClaim, selection: Selection, now: number, options: ClaimPathOptions = {}): ClaimPath {
  const graceMs = options.graceMs ?? WARM_CANDIDATE_GRACE_MS;
  if (needsColdStart(claim)) return { kind: 'cold', why: 'the claim sets env or volumeClaimTemplates, which warm Pods lack' };
  if (selection.kind === 'candidate') return { kind: 'adopt', sandbox: selection.sandbox };
  if (selection.kind === 'none' && (options.conflicts ?? 0) > 0) {
    return {
      kind: 'wait',
      afterMs: ADOPTION_CONFLICT_RETRY_MS,
      problem: { reason: ClaimReadyReason.ADOPTION_CONFLICT, message: `${options.conflicts} warm Sandbox(es) changed while being adopted; retrying` },
    };
  }
  if (selection.kind === 'network-pending') {
    const remaining = graceLeft(claim, now, graceMs, options.watchedMs);
    if (remaining > 0) return { kind: 'wait', afterMs: Math.min(NETWORK_PENDING_RECHECK_MS, remaining) };
    const oldest = options.oldestPending?.(pendingStuck(now, options.watchedMember));
    if (oldest) return { kind: 'adopt', sandbox: oldest };
    const stuck = options.oldestPending
      ? `, and those without one have been starting for ${PENDING_MEMBER_STUCK_MS / 1000}s or more or cannot be scheduled` : '';
    return { kind: 'cold', why: `no pool member got a Pod IP within ${graceMs}ms${stuck}` };
  }
  return { kind: 'cold', why: selection.reason };
}
