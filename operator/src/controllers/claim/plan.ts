/**
 * One pass of a SandboxClaim, decided, as a plan the executor (reconcile.ts) performs: which
 * Sandbox the claim has, whether it has expired and what that does, how to get a Sandbox when it
 * has none (adopt a pool member, create one, or why not yet), and the status that follows. The
 * executor reads the caches into a ClaimState and makes the writes; the plan writes nothing.
 *
 * Pure but for one touch, named in ClaimState: `rankCandidates` asks the executor's
 * WarmCandidateIndex (candidate-index.ts) for the pool's ranking, and the index may re-sort that
 * pool's members first (when the template's fingerprint differs from the one it last judged them
 * by: members turn stale or current). That mutates a derived cache, not a decision: the same
 * question asked again ranks the same, so a plan repeated on the same state is the same plan.
 *
 * Crash recovery: ownership recorded on the Sandbox is the truth. A Sandbox whose controller
 * ownerReference is the claim's UID belongs to the claim, whatever the claim's status says, so a
 * pass that crashed after the adoption write and before the status write is finished by the next
 * pass from that alone. Within one process, `pendingSandbox` (our adoption or create that the
 * cache does not show yet) makes the claim wait for the cache instead of taking a second Sandbox;
 * a new process lists fresh, so needs none.
 *
 * Expiry (as upstream's internal/lifecycle/expiry.go): when a claim expires and what then happens,
 * decided from the claim, its Sandbox and the time; the plan's requeue arms a timer for it (no
 * polling).
 */
import { ClaimReadyReason, ConditionType, WarmPoolTemplateReason } from '#api/conditions';
import { ClaimShutdownPolicy } from '#api/enums';
import { KINDS } from '#api/groups';
import { SandboxLabels } from '#api/labels';
import { adoptionPatch, validateAdditionalPodMetadata } from './adopt';
import { coldSandbox } from './cold';
import { coldStartNote as coldStartNoteOf } from './cold-note';
import { ADOPTION_CONFLICT_RETRY_MS, type Candidates, claimPath, fingerprintOf, needsColdStart, type SelectionContext, type Watched } from './select';
import { ClaimEvents, claimStatus, type ClaimEvent, type ClaimProblem, type StatusDecision } from './status';
import {
  controllerRefOf, findCondition, isControlledBy, isDeleting, isReady, LaunchType, type MergePatch, refIsKind,
  type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool, timeMs,
} from '../../model';
import { type TemplateGate } from '../../model/template-gate';

/** Our adoption or create is not in the cache yet: its watch event normally wakes the claim first. */
const PENDING_SANDBOX_RECHECK_MS = 1_000;
/** Pool or template missing: their events bring the claim back; this is only a safety net (upstream's minute). */
const MISSING_DEPENDENCY_RECHECK_MS = 60_000;
/** A cold create found the claim-named Sandbox in the way and the cache not showing it: look again shortly (upstream's 200 ms). */
const CREATE_PENDING_RECHECK_MS = 200;
/** Adoption writes tried in one pass before leaving the rest to a quick requeue. */
const MAX_ADOPTION_ATTEMPTS = 5;

export type Binding =
  /** The claim owns `sandbox`; `launchTypePatch` repairs a missing launch-type label. */
  | { readonly kind: 'bound'; readonly sandbox: Sandbox; readonly launchTypePatch?: MergePatch }
  /** We adopted or created `sandboxName` and the cache does not show it yet: wait for its event, take nothing else. */
  | { readonly kind: 'pending'; readonly sandboxName: string }
  /**
   * No Sandbox. `clearStatus`: status.sandbox names one that is gone or someone else's.
   * `coldBlocked`: a cold start cannot create the claim-named Sandbox now (warm adoption still can);
   * `transient` when it will clear by itself (a previous claim's Sandbox being garbage-collected).
   */
  | { readonly kind: 'unbound'; readonly clearStatus: boolean; readonly coldBlocked?: ClaimProblem & { readonly transient: boolean } }
  /** The claim owns several Sandboxes (an adoption raced a lagging cache): keep one, delete the rest (uid preconditions). */
  | { readonly kind: 'multiple'; readonly keep: Sandbox; readonly release: Sandbox[] };

function launchTypePatch(sandbox: Sandbox, claim: SandboxClaim): MergePatch | undefined {
  if (sandbox.metadata.labels?.[SandboxLabels.LAUNCH_TYPE]) return undefined;
  const launchType = sandbox.metadata.name === claim.metadata.name ? LaunchType.COLD : LaunchType.WARM;
  return { metadata: { labels: { [SandboxLabels.LAUNCH_TYPE]: launchType } } };
}

/** The one to keep of several owned Sandboxes: the one the status names, else a Ready one, else the oldest. */
function keeper(owned: Sandbox[], claim: SandboxClaim): Sandbox {
  const named = owned.find((s) => s.metadata.name === claim.status?.sandbox?.name);
  if (named) return named;
  const byAge = [...owned].sort((a, b) => (timeMs(a.metadata.creationTimestamp) ?? 0) - (timeMs(b.metadata.creationTimestamp) ?? 0));
  return byAge.find(isReady) ?? byAge[0];
}

/**
 * The claim's binding, from `sandboxes`: the cache's Sandboxes controlled by the claim's UID, plus
 * those named by status.sandbox.name and by the claim's own name (any superset is fine).
 * `pendingSandbox` names this process's adoption or cold create for the claim that the cache does
 * not show yet, if any.
 */
export function recoverBinding(claim: SandboxClaim, sandboxes: readonly Sandbox[], pendingSandbox?: string): Binding {
  const ns = claim.metadata.namespace;
  const inNs = sandboxes.filter((s) => s.metadata.namespace === ns);
  const owned = inNs.filter((s) => isControlledBy(s, claim.metadata.uid));
  if (owned.length === 1) {
    const patch = launchTypePatch(owned[0], claim);
    return { kind: 'bound', sandbox: owned[0], ...(patch ? { launchTypePatch: patch } : {}) };
  }
  if (owned.length > 1) {
    const keep = keeper(owned, claim);
    return { kind: 'multiple', keep, release: owned.filter((s) => s !== keep) };
  }

  // Our own adoption or cold create, not in the cache yet (the member still shows its pool as
  // controller, or the new Sandbox is not there at all): wait for it rather than take another.
  if (pendingSandbox !== undefined) return { kind: 'pending', sandboxName: pendingSandbox };
  // status.sandbox names a Sandbox we do not own (any more): clear it. It is not trusted as a
  // lock: a hand-edited status would wedge the claim. `pendingSandbox` covers our own writes; and
  // should a restart ever list Sandboxes before an adoption and claims after it, the worst case is
  // a second adoption, which 'multiple' undoes.
  const statusName = claim.status?.sandbox?.name;
  const clearStatus = statusName !== undefined && statusName !== '';

  const namesake = inNs.find((s) => s.metadata.name === claim.metadata.name);
  if (!namesake) return { kind: 'unbound', clearStatus };
  const ref = controllerRefOf(namesake);
  const previousClaim = refIsKind(ref, KINDS.claim) && ref!.name === claim.metadata.name;
  if (isDeleting(namesake) || previousClaim) {
    return {
      kind: 'unbound',
      clearStatus,
      coldBlocked: {
        reason: ClaimReadyReason.SANDBOX_CREATE_PENDING,
        message: `Sandbox "${namesake.metadata.name}" of a previous claim with this name is being deleted; a cold start waits for it`,
        transient: true,
      },
    };
  }
  return {
    kind: 'unbound',
    clearStatus,
    coldBlocked: {
      reason: ClaimReadyReason.RECONCILER_ERROR,
      message: `Error seen: Sandbox "${namesake.metadata.name}" exists and is not controlled by this claim; use a different claim name or delete the Sandbox`,
      transient: false,
    },
  };
}

export interface ClaimExpiry {
  readonly expired: boolean;
  /** When the claim expires (or expired); undefined when it never does. */
  readonly atMs?: number;
  /** What expiry does: spec.lifecycle.shutdownPolicy, Retain by default. */
  readonly action: ClaimShutdownPolicy;
  /** Time left, while not expired: arm a timer for it. */
  readonly requeueAfterMs?: number;
}

/** The Finished condition's transition time when Finished is True: the Sandbox's if bound, else the claim's mirrored copy. */
function finishedAtMs(claim: SandboxClaim, sandbox: Sandbox | undefined): number | undefined {
  const finished = findCondition(sandbox?.status?.conditions, ConditionType.FINISHED)
    ?? findCondition(claim.status?.conditions, ConditionType.FINISHED);
  return finished?.status === 'True' ? timeMs(finished.lastTransitionTime) : undefined;
}

function policyOf(claim: SandboxClaim): ClaimShutdownPolicy {
  const policy = claim.spec.lifecycle?.shutdownPolicy as ClaimShutdownPolicy | undefined;
  return policy === ClaimShutdownPolicy.DELETE || policy === ClaimShutdownPolicy.DELETE_FOREGROUND ? policy : ClaimShutdownPolicy.RETAIN;
}

/**
 * Expiry is the earlier of `shutdownTime` and Finished + `ttlSecondsAfterFinished` (the TTL only
 * once the Sandbox has finished). Using the Sandbox's Finished when one is bound means the TTL
 * starts as soon as the Pod finishes, not one status write later. Expired from `atMs` on.
 */
export function claimExpiry(claim: SandboxClaim, sandbox: Sandbox | undefined, now: number): ClaimExpiry {
  const lifecycle = claim.spec.lifecycle;
  const action = policyOf(claim);
  if (!lifecycle) return { expired: false, action };
  const deadlines: number[] = [];
  const shutdown = timeMs(lifecycle.shutdownTime);
  if (shutdown !== undefined) deadlines.push(shutdown);
  const finished = lifecycle.ttlSecondsAfterFinished !== undefined ? finishedAtMs(claim, sandbox) : undefined;
  if (finished !== undefined) deadlines.push(finished + lifecycle.ttlSecondsAfterFinished! * 1000);
  if (deadlines.length === 0) return { expired: false, action };
  const atMs = Math.min(...deadlines);
  return now >= atMs ? { expired: true, atMs, action } : { expired: false, atMs, action, requeueAfterMs: atMs - now };
}

export interface ExpiryPlan {
  /** Ready is not ClaimExpired yet: write it (claimStatus with `expired`) and emit `events`. */
  readonly markExpired: boolean;
  /** Delete the claim (Delete: background; DeleteForeground: the claim stays until its Sandbox is gone). */
  readonly deleteClaim?: { readonly propagationPolicy: 'Background' | 'Foreground'; readonly uid: string };
  /** Retain: delete the claim's Sandbox (uid precondition); the claim stays, Ready=False ClaimExpired. */
  readonly deleteSandbox?: { readonly name: string; readonly uid: string };
  /** Retain with a Sandbox the claim does not control: not deleted; report this as the Ready message. */
  readonly skippedMessage?: string;
  readonly events: ClaimEvent[];
}

/**
 * What to do about an expired claim, in one pass: mark it expired (once), then apply the policy.
 * Marking first lets a client watching the claim see ClaimExpired before it disappears. Every
 * step is idempotent, so a crash anywhere just repeats the rest on the next pass.
 */
export function expiryPlan(claim: SandboxClaim, sandbox: Sandbox | undefined, expiry: ClaimExpiry): ExpiryPlan {
  if (!expiry.expired) return { markExpired: false, events: [] };
  const ready = findCondition(claim.status?.conditions, ConditionType.READY);
  const markExpired = ready?.reason !== ClaimReadyReason.CLAIM_EXPIRED;
  const events: ClaimEvent[] = markExpired ? [ClaimEvents.expired()] : [];
  if (expiry.action !== ClaimShutdownPolicy.RETAIN) {
    if (isDeleting(claim)) return { markExpired, events };
    events.push(ClaimEvents.deleting(expiry.action));
    const propagationPolicy = expiry.action === ClaimShutdownPolicy.DELETE_FOREGROUND ? 'Foreground' : 'Background';
    return { markExpired, deleteClaim: { propagationPolicy, uid: claim.metadata.uid ?? '' }, events };
  }
  if (!sandbox) return { markExpired, events };
  if (!isControlledBy(sandbox, claim.metadata.uid)) {
    return { markExpired, skippedMessage: `Claim expired. Sandbox "${sandbox.metadata.name}" is not controlled by this claim; deletion skipped.`, events };
  }
  if (isDeleting(sandbox)) return { markExpired, events };
  return { markExpired, deleteSandbox: { name: sandbox.metadata.name, uid: sandbox.metadata.uid ?? '' }, events };
}

/** What the executor reads from the caches (and its expectations) for one pass. */
export interface ClaimState {
  /** The claim to decide on: the cache's, or our last write's result while the cache is behind it. */
  readonly claim: SandboxClaim;
  readonly pool?: SandboxWarmPool;
  /** The pool's template. */
  readonly template?: SandboxTemplate;
  /** Whether a Sandbox may be built from the template now (template/gate.ts); the cold path waits while not. */
  readonly templateGate?: TemplateGate;
  /** The cached Sandboxes that may be the claim's (see recoverBinding), including `pendingSandbox`'s. */
  readonly sandboxes: readonly Sandbox[];
  /** The name of our adoption or cold create for this claim that the cache does not show yet. */
  readonly pendingSandbox?: string;
  /**
   * The pool's warm candidates in the cache, ranked for the claim (the executor's WarmCandidateIndex,
   * or a CandidateRanking); asked only when the claim needs a Sandbox. Not pure: the index re-sorts
   * the pool's members when the template changed since it last ranked them (see the file comment).
   */
  readonly rankCandidates: (poolUpdateStrategy: string | undefined, context: SelectionContext) => Candidates;
  /** UIDs of members this process is adopting for other claims (or adopted, not yet in the cache): never candidates. */
  readonly beingClaimed: ReadonlySet<string>;
  /** Label domains additionalPodMetadata may use; undefined for the default. */
  readonly allowedLabelDomains?: readonly string[];
  readonly now: number;
  /** How long this process has watched the claim, and each Sandbox (ms, elapsed clock): see claimPath's grace and pendingStuck. */
  readonly watchedMs?: number;
  readonly watchedMember?: Watched;
}

/** Where a pass stands on the claim's Sandbox. */
export type Acquired =
  | { readonly kind: 'sandbox'; readonly sandbox: Sandbox }
  /** Report `problem` as Ready=False; look again after `requeueAfterMs` if set. */
  | { readonly kind: 'problem'; readonly problem: ClaimProblem; readonly requeueAfterMs?: number }
  /** Nothing to write yet (candidates about to get an IP, conflicts to retry): just look again. */
  | { readonly kind: 'wait'; readonly requeueAfterMs: number };

/** One adoption write: `patch` on `candidate` (conditional on its resourceVersion). */
export interface Adoption {
  readonly kind: 'adopt';
  readonly candidate: Sandbox;
  readonly patch: MergePatch;
  /**
   * The next step once this write failed with 409 or 404 (the member changed or vanished since the
   * cache saw it): the next candidate, leaving out those conflicted so far and `beingClaimed` (read
   * again: other claims of this process adopt meanwhile), without ranking the pool again.
   */
  readonly afterConflict: (beingClaimed: ReadonlySet<string>, now: number) => Acquisition;
}

/** A cold create of `sandbox`; `ifTaken` is the outcome when its name is taken (409 AlreadyExists). */
export interface Creation {
  readonly kind: 'create';
  readonly sandbox: Sandbox;
  readonly ifTaken: Acquired;
}

export type Acquisition = Acquired | Adoption | Creation;

/** A launch-type label to restore on the claim's Sandbox. */
export interface LaunchTypeRepair {
  readonly sandbox: Sandbox;
  readonly patch: MergePatch;
}

interface Cleanup {
  /** The claim owns several Sandboxes (an adoption raced a lagging cache): delete the extras, uid preconditions. */
  readonly release?: { readonly keep: Sandbox; readonly extras: readonly Sandbox[] };
  readonly repair?: LaunchTypeRepair;
}

/** Serve the claim: get it a Sandbox if it has none, then write its status. */
export interface ServePlan extends Cleanup {
  readonly kind: 'serve';
  readonly acquisition: Acquisition;
  /** When the claim expires, if it does: look again then. */
  readonly requeueAfterMs?: number;
}

/** The claim expired: write its status (ClaimExpired), then emit `expiry.events` and make its deletes. */
export interface ExpirePlan extends Cleanup {
  readonly kind: 'expire';
  readonly sandbox?: Sandbox;
  readonly expiry: ExpiryPlan;
}

export type ClaimPlan =
  /** Our own write is not in the cache yet: write nothing, look again. */
  | { readonly kind: 'wait-for-cache'; readonly requeueAfterMs: number }
  | ServePlan
  | ExpirePlan;

export function planClaim(state: ClaimState): ClaimPlan {
  const { claim, now } = state;
  const binding = recoverBinding(claim, state.sandboxes, state.pendingSandbox);
  if (binding.kind === 'pending') return { kind: 'wait-for-cache', requeueAfterMs: PENDING_SANDBOX_RECHECK_MS };
  const sandbox = binding.kind === 'bound' ? binding.sandbox : binding.kind === 'multiple' ? binding.keep : undefined;
  const cleanup: Cleanup = {
    ...(binding.kind === 'multiple' ? { release: { keep: binding.keep, extras: binding.release } } : {}),
    ...(binding.kind === 'bound' && binding.launchTypePatch ? { repair: { sandbox: binding.sandbox, patch: binding.launchTypePatch } } : {}),
  };
  const expiry = claimExpiry(claim, sandbox, now);
  if (expiry.expired) return { kind: 'expire', ...cleanup, sandbox, expiry: expiryPlan(claim, sandbox, expiry) };
  const acquisition: Acquisition = binding.kind === 'unbound' ? acquire(state, binding) : { kind: 'sandbox', sandbox: sandbox! };
  return { kind: 'serve', ...cleanup, acquisition, requeueAfterMs: expiry.requeueAfterMs };
}

/** The status a served claim writes, once its Sandbox (or the problem) is known; `pool` words a cold start it caused. */
export function servedStatus(claim: SandboxClaim, acquired: Exclude<Acquired, { kind: 'wait' }>, now: number, pool?: SandboxWarmPool): StatusDecision {
  const sandbox = acquired.kind === 'sandbox' ? acquired.sandbox : undefined;
  const problem = acquired.kind === 'problem' ? acquired.problem : undefined;
  const coldStartNote = sandbox ? coldStartNoteOf(claim, sandbox, pool, now) : undefined;
  // A problem reported before any Sandbox exists must not erase a binding the cache will show shortly.
  const keepBinding = !sandbox && problem?.reason === ClaimReadyReason.SANDBOX_CREATE_PENDING;
  return claimStatus({ claim, sandbox, problem, now, coldStartNote, keepBinding });
}

/** When a served claim looks again: its expiry (with the Sandbox it now has), or the problem's recheck. */
export function servedRequeueMs(plan: ServePlan, claim: SandboxClaim, acquired: Exclude<Acquired, { kind: 'wait' }>, now: number): number | undefined {
  const next = acquired.kind === 'problem' ? acquired.requeueAfterMs : claimExpiry(claim, acquired.sandbox, now).requeueAfterMs;
  const ms = minDefined(plan.requeueAfterMs, next);
  return ms === undefined ? undefined : Math.max(1, ms);
}

/** The status an expired claim writes: Ready=False ClaimExpired (with why its Sandbox stays, under Retain). */
export function expiredStatus(claim: SandboxClaim, plan: ExpirePlan, now: number): StatusDecision {
  const skipped = plan.expiry.skippedMessage;
  const problem = skipped ? { reason: ClaimReadyReason.CLAIM_EXPIRED, message: skipped } : undefined;
  return claimStatus({ claim, sandbox: plan.sandbox, problem, expired: true, now });
}

export function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

type Unbound = Extract<Binding, { kind: 'unbound' }>;

/** How an unbound claim gets a Sandbox: warm from its pool's members, else cold. */
function acquire(state: ClaimState, binding: Unbound): Acquisition {
  const { claim, pool, template } = state;
  const invalid = validateAdditionalPodMetadata(claim, state.allowedLabelDomains);
  if (invalid) return { kind: 'problem', problem: invalid };
  if (!pool) {
    const problem = { reason: ClaimReadyReason.WARM_POOL_NOT_FOUND, message: `SandboxWarmPool "${claim.spec.warmPoolRef.name}" not found` };
    return { kind: 'problem', problem, requeueAfterMs: MISSING_DEPENDENCY_RECHECK_MS };
  }
  // Built only when the claim does start cold: most passes adopt.
  const cold = () => coldStart(state, pool, binding);
  if (needsColdStart(claim)) return cold();
  const ranking = state.rankCandidates(pool.spec.updateStrategy?.type, {
    claim,
    poolUid: pool.metadata.uid,
    templateName: template?.metadata.name,
    fingerprint: template ? fingerprintOf(template) : undefined,
  });
  return warmStep(state, ranking, cold, new Set(), state.beingClaimed, state.now);
}

/** The best candidate not excluded, or, when there is none, the wait, the problem or the cold start that follows. */
function warmStep(
  state: ClaimState, ranking: Candidates, cold: () => Acquisition,
  conflicted: ReadonlySet<string>, beingClaimed: ReadonlySet<string>, now: number,
): Acquisition {
  if (conflicted.size >= MAX_ADOPTION_ATTEMPTS) return { kind: 'wait', requeueAfterMs: ADOPTION_CONFLICT_RETRY_MS };
  const excluded = conflicted.size === 0 ? beingClaimed : new Set([...beingClaimed, ...conflicted]);
  const path = claimPath(state.claim, ranking.best(excluded), now, {
    conflicts: conflicted.size,
    oldestPending: (stuck) => ranking.oldestPending(excluded, stuck),
    watchedMs: state.watchedMs,
    watchedMember: state.watchedMember,
  });
  if (path.kind === 'cold') return cold();
  if (path.kind === 'wait') {
    return path.problem ? { kind: 'problem', problem: path.problem, requeueAfterMs: path.afterMs } : { kind: 'wait', requeueAfterMs: path.afterMs };
  }
  const write = adoptionPatch(path.sandbox, state.claim, state.template, now);
  if (!write.ok) return { kind: 'problem', problem: write.problem };
  const tried = new Set([...conflicted, path.sandbox.metadata.uid ?? '']);
  return {
    kind: 'adopt',
    candidate: path.sandbox,
    patch: write.value.patch,
    afterConflict: (claimedNow, later) => warmStep(state, ranking, cold, tried, claimedNow, later),
  };
}

function coldStart(state: ClaimState, pool: SandboxWarmPool, binding: Unbound): Acquisition {
  const { claim, template } = state;
  if (binding.coldBlocked) {
    const { reason, message, transient } = binding.coldBlocked;
    return { kind: 'problem', problem: { reason, message }, ...(transient ? { requeueAfterMs: CREATE_PENDING_RECHECK_MS } : {}) };
  }
  if (!template) {
    const problem = { reason: ClaimReadyReason.TEMPLATE_NOT_FOUND, message: `SandboxTemplate "${pool.spec.sandboxTemplateRef.name}" not found` };
    return { kind: 'problem', problem, requeueAfterMs: MISSING_DEPENDENCY_RECHECK_MS };
  }
  // Fail closed, as the pool does: no Sandbox from a Managed template before its NetworkPolicy
  // shows (its event wakes the claim), and none whose Pod would pass for the router.
  if (state.templateGate && !state.templateGate.ok) {
    const { reason, message } = state.templateGate;
    const problem = {
      reason: reason === WarmPoolTemplateReason.ROUTER_LABELS_REFUSED
        ? ClaimReadyReason.ROUTER_LABELS_REFUSED
        : ClaimReadyReason.NETWORK_POLICY_NOT_READY,
      message,
    };
    return { kind: 'problem', problem, requeueAfterMs: MISSING_DEPENDENCY_RECHECK_MS };
  }
  const desired = coldSandbox(claim, pool, template, state.now, { allowedLabelDomains: state.allowedLabelDomains });
  if (!desired.ok) return { kind: 'problem', problem: desired.problem };
  // Taken by our own earlier create, or by a namesake, that the cache has not shown yet.
  const message = `Sandbox "${claim.metadata.name}" already exists; waiting for the cache`;
  const ifTaken: Acquired = { kind: 'problem', problem: { reason: ClaimReadyReason.SANDBOX_CREATE_PENDING, message }, requeueAfterMs: CREATE_PENDING_RECHECK_MS };
  return { kind: 'create', sandbox: desired.value, ifTaken };
}
