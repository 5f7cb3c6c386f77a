/**
 * Which Sandbox a claim already has, read back from the Sandboxes themselves (crash recovery).
 *
 * Ownership recorded on the Sandbox is the truth: a Sandbox whose controller ownerReference is the
 * claim's UID belongs to the claim, whatever the claim's status says. A pass that crashed after
 * the adoption write and before the status write is finished by the next pass from that alone.
 * Within one process, an AdoptionRecords entry (made right after the adoption write returned)
 * bridges the moment when the cache has not caught up with our own write yet: the claim waits for
 * the cache instead of adopting a second Sandbox. A new process lists fresh, so needs no record.
 */
import { type ClaimProblem } from './status';
import { ClaimReadyReason } from '../../../../src/api/conditions';
import { KINDS } from '../../../../src/api/groups';
import { SandboxLabels } from '../../../../src/api/labels';
import { controllerRefOf, isControlledBy, isDeleting, isReady, LaunchType, type MergePatch, refIsKind, type Sandbox, type SandboxClaim, timeMs } from '../../model';

export type Binding =
  /** The claim owns `sandbox`; `launchTypePatch` repairs a missing launch-type label. */
  | { readonly kind: 'bound'; readonly sandbox: Sandbox; readonly launchTypePatch?: MergePatch }
  /** We adopted `sandboxName` and the cache does not show it yet: wait for its event, adopt nothing else. */
  | { readonly kind: 'pending'; readonly sandboxName: string }
  /**
   * No Sandbox. `clearStatus`: status.sandbox names one that is gone or someone else's.
   * `coldBlocked`: a cold start cannot create the claim-named Sandbox now (warm adoption still can);
   * `transient` when it will clear by itself (a previous claim's Sandbox being garbage-collected).
   */
  | { readonly kind: 'unbound'; readonly clearStatus: boolean; readonly coldBlocked?: ClaimProblem & { readonly transient: boolean } }
  /** The claim owns several Sandboxes (an adoption raced a lagging cache): keep one, delete the rest (uid preconditions). */
  | { readonly kind: 'multiple'; readonly keep: Sandbox; readonly release: Sandbox[] };

/** An adoption this process made, not yet visible in the cache. */
export interface AdoptionRecord {
  readonly sandboxName: string;
  readonly sandboxUid: string;
}

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
 * those named by status.sandbox.name and by the claim's own name (the wiring looks these up; any
 * superset is fine). `record` is this process's unobserved adoption for the claim, if any.
 */
export function recoverBinding(claim: SandboxClaim, sandboxes: readonly Sandbox[], record?: AdoptionRecord): Binding {
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

  // Our own adoption or cold create, not in the cache yet: the member still shows its pool as
  // controller, or the new Sandbox is not there at all (a deleted one drops the record).
  if (record) {
    const adopted = inNs.find((s) => s.metadata.uid === record.sandboxUid);
    if (!adopted || refIsKind(controllerRefOf(adopted), KINDS.warmPool)) return { kind: 'pending', sandboxName: record.sandboxName };
  }
  // status.sandbox names a Sandbox we do not own (any more): clear it. It is not trusted as a
  // lock: a hand-edited status would wedge the claim. The record above covers our own writes; and
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

/** Adoption records expire after this long: far above cache latency, and a lost record only delays. */
export const ADOPTION_RECORD_TTL_MS = 60_000;

/**
 * This process's adoptions that the cache may not show yet, by claim UID. Recorded right after the
 * adoption write returns; forgotten when the cache shows the Sandbox as the claim's (or gone), or
 * after the TTL. Losing it in a crash is harmless: a new process lists fresh.
 */
export class AdoptionRecords {
  private readonly records = new Map<string, AdoptionRecord & { readonly atMs: number }>();

  public constructor(private readonly ttlMs: number = ADOPTION_RECORD_TTL_MS) {}

  public record(claimUid: string, record: AdoptionRecord, now: number): void {
    this.records.set(claimUid, { ...record, atMs: now });
  }

  /** The claim's unobserved adoption, if any. */
  public get(claimUid: string, now: number): AdoptionRecord | undefined {
    const entry = this.records.get(claimUid);
    if (entry && now - entry.atMs >= this.ttlMs) {
      this.records.delete(claimUid);
      return undefined;
    }
    return entry ? { sandboxName: entry.sandboxName, sandboxUid: entry.sandboxUid } : undefined;
  }

  /** The cache now shows `sandbox` (or its deletion): drop the record it settles. */
  public observe(sandbox: Sandbox, deleted: boolean): void {
    const owner = controllerRefOf(sandbox)?.uid;
    for (const [claimUid, entry] of this.records) {
      if (entry.sandboxUid !== sandbox.metadata.uid) continue;
      if (deleted || owner === claimUid) this.records.delete(claimUid);
    }
  }

  public forget(claimUid: string): void {
    this.records.delete(claimUid);
  }

  public get size(): number {
    return this.records.size;
  }
}
