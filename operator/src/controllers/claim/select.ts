/**
 * Which warm Sandbox a claim takes (upstream-behavior.md §2.4-§2.5), chosen from the informer's
 * index of the pool's members rather than from upstream's process-local queue: the index is the
 * cache itself, so it holds no ghosts (deleted or already-claimed keys) and is complete after a
 * restart without being rebuilt from create events.
 */
import { WarmPoolUpdateStrategyType } from '../../../../src/api/enums';
import { KINDS } from '../../../../src/api/groups';
import { SandboxLabels } from '../../../../src/api/labels';
import { NameHash } from '../../../../src/api/name-hash';
import type { BlueprintFingerprint } from '../template/blueprint';
import { controllerRefOf, isDeleting, refIsKind, timeMs } from '../template/meta';
import type { Sandbox } from '../template/types';
import { isReady, isStale } from '../warm-pool/classify';
import type { SandboxClaim } from './types';

/** How long a claim waits for candidates that have no Pod IP yet before starting cold (upstream's 2s). */
export const WARM_CANDIDATE_GRACE_MS = 2000;
/** How often it looks again meanwhile, unless a member's update brings it back sooner. */
export const NETWORK_PENDING_RECHECK_MS = 500;

export interface SelectionContext {
  readonly claim: SandboxClaim;
  /** UID of the claim's pool; when given, members of a deleted pool of the same name are refused. */
  readonly poolUid?: string;
  /** The pool's template name and current blueprint; required to take anything under Recreate. */
  readonly templateName?: string;
  readonly fingerprint?: BlueprintFingerprint;
  /** UIDs not to take: in-flight adoptions by other claims of this process, and conflicts of this pass. */
  readonly exclude?: ReadonlySet<string>;
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
export function isAdoptable(sandbox: Sandbox, claim: SandboxClaim, poolUid?: string): boolean {
  const pool = claim.spec.warmPoolRef.name;
  const ref = controllerRefOf(sandbox);
  return sandbox.metadata.namespace === claim.metadata.namespace
    && !isDeleting(sandbox)
    && sandbox.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX] === NameHash.of(pool)
    && sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] !== undefined
    && refIsKind(ref, KINDS.warmPool) && ref!.name === pool
    && (poolUid === undefined || ref!.uid === poolUid);
}

/** Whether a claim must start cold whatever the pool holds: warm Pods lack its env and volumes. */
export function needsColdStart(claim: SandboxClaim): boolean {
  return (claim.spec.env?.length ?? 0) > 0 || (claim.spec.volumeClaimTemplates?.length ?? 0) > 0;
}

const createdMs = (s: Sandbox) => timeMs(s.metadata.creationTimestamp) ?? 0;
const oldestFirst = (a: Sandbox, b: Sandbox) => createdMs(a) - createdMs(b) || a.metadata.name.localeCompare(b.metadata.name);

/**
 * Among equally good candidates, spread claims across nodes: take from the node holding the most of
 * them (so the next claim likely lands elsewhere and the pool stays balanced), ties to the node
 * with the oldest candidate; then the oldest on that node. Candidates without a node name come last.
 */
function spreadPick(tier: Sandbox[]): Sandbox {
  const byNode = new Map<string, Sandbox[]>();
  for (const s of tier) {
    const node = s.status?.nodeName;
    if (!node) continue;
    byNode.set(node, [...(byNode.get(node) ?? []), s]);
  }
  if (byNode.size === 0) return [...tier].sort(oldestFirst)[0];
  const nodes = [...byNode.values()].map((list) => list.sort(oldestFirst));
  nodes.sort((a, b) => b.length - a.length || oldestFirst(a[0], b[0]));
  return nodes[0][0];
}

/**
 * The best warm candidate for a claim among `candidates` (the pool's members from the cache).
 *
 * Preference: Ready over not-yet-Ready (a member with an IP that is still starting beats a cold
 * start); up to date over stale (OnReplenish keeps stale members claimable, but a claim made after
 * a template change should get the new template when one is there; upstream takes whichever is
 * first in its queue); then node spread and age. Never a stale member under Recreate, and nothing
 * at all under Recreate while the template is unknown: an unverified member might be stale.
 * Members without Pod IPs are not taken: the claim could not reach them yet.
 */
export function selectCandidate(candidates: readonly Sandbox[], poolUpdateStrategy: string | undefined, context: SelectionContext): Selection {
  const recreate = poolUpdateStrategy === WarmPoolUpdateStrategyType.RECREATE;
  const known = context.fingerprint !== undefined && context.templateName !== undefined;
  if (recreate && !known) return { kind: 'none', reason: 'the pool uses Recreate and its template is unknown, so no member can be verified as current' };
  const staleOf = (s: Sandbox) => known && isStale(s, context.templateName!, context.fingerprint!, false);

  let pending = 0;
  const tiers: Sandbox[][] = [[], [], [], []];
  for (const s of candidates) {
    if (!isAdoptable(s, context.claim, context.poolUid) || context.exclude?.has(s.metadata.uid ?? '')) continue;
    const stale = staleOf(s);
    if (stale && recreate) continue;
    if ((s.status?.podIPs?.length ?? 0) === 0) {
      pending++;
      continue;
    }
    tiers[(isReady(s) ? 0 : 2) + (stale ? 1 : 0)].push(s);
  }
  const best = tiers.findIndex((t) => t.length > 0);
  if (best >= 0) return { kind: 'candidate', sandbox: spreadPick(tiers[best]), ready: best < 2, stale: best % 2 === 1 };
  if (pending > 0) return { kind: 'network-pending', count: pending };
  return { kind: 'none', reason: 'the pool has no unclaimed member to take' };
}

export type ClaimPath =
  | { readonly kind: 'adopt'; readonly sandbox: Sandbox }
  | { readonly kind: 'wait'; readonly afterMs: number }
  | { readonly kind: 'cold'; readonly why: string };

/**
 * Warm or cold. Members that only lack a Pod IP are worth waiting for while the claim is younger
 * than the grace period (an IP usually arrives within a second, a cold start takes far longer);
 * after that the claim starts cold rather than wait on a member that may never come up.
 */
export function claimPath(claim: SandboxClaim, selection: Selection, now: number, graceMs = WARM_CANDIDATE_GRACE_MS): ClaimPath {
  if (needsColdStart(claim)) return { kind: 'cold', why: 'the claim sets env or volumeClaimTemplates, which warm Pods lack' };
  if (selection.kind === 'candidate') return { kind: 'adopt', sandbox: selection.sandbox };
  if (selection.kind === 'network-pending') {
    const remaining = (timeMs(claim.metadata.creationTimestamp) ?? now) + graceMs - now;
    if (remaining > 0) return { kind: 'wait', afterMs: Math.min(NETWORK_PENDING_RECHECK_MS, remaining) };
    return { kind: 'cold', why: `no pool member got a Pod IP within ${graceMs}ms` };
  }
  return { kind: 'cold', why: selection.reason };
}
