/**
 * Getting a Sandbox for an unbound claim: warm adoption from the pool's members in the cache (one
 * conditional write, select.ts/adopt.ts), else a cold create (cold.ts). I/O only; every decision
 * is in the pure modules.
 */
import { NameHash } from '../../../../src/api/name-hash';
import { ApiError, type KubeClient, type Store } from '../../runtime/types';
import { POOL_LABEL_INDEX } from '../extension-informers';
import { adoptionPatch, validateAdditionalPodMetadata } from './adopt';
import { coldSandbox } from './cold';
import type { Binding } from './recover';
import { claimPath, needsColdStart, selectCandidate } from './select';
import { ClaimEvents, type ClaimEvent, type ClaimProblem } from './status';
import { ClaimReadyReason } from '../../../../src/api/conditions';
import { RESOURCES, type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool } from '../../model';
import { templateFingerprint, type BlueprintFingerprint } from '../../model/blueprint';

export const CLAIM_FIELD_MANAGER = 'sandboxclaim-controller';
/** Pool or template missing: their events bring the claim back; this is only a safety net (upstream's minute). */
export const MISSING_DEPENDENCY_RECHECK_MS = 60_000;
/** A cold create found the claim-named Sandbox in the way and the cache not showing it: look again shortly (upstream's 200 ms). */
export const CREATE_PENDING_RECHECK_MS = 200;
/** Adoption writes tried in one pass before leaving the rest to a quick requeue. */
const MAX_ADOPTION_ATTEMPTS = 5;

export type Acquired =
  | { readonly kind: 'sandbox'; readonly sandbox: Sandbox; readonly launchType: 'warm' | 'cold' }
  /** Report `problem` on the claim; look again after `requeueAfterMs` if set. */
  | { readonly kind: 'problem'; readonly problem: ClaimProblem; readonly requeueAfterMs?: number }
  /** Nothing to write yet (candidates about to get an IP, conflicts to retry): just look again. */
  | { readonly kind: 'wait'; readonly requeueAfterMs: number };

export interface AcquireContext {
  readonly client: KubeClient;
  /** Must carry POOL_LABEL_INDEX. */
  readonly sandboxes: Store<Sandbox>;
  /** UIDs of members with an adoption write in flight (or done and not yet in the cache), by any claim of this process. */
  readonly claiming: Map<string, number>;
  readonly allowedLabelDomains?: readonly string[];
  readonly emit: (claim: SandboxClaim, event: ClaimEvent) => void;
  /** Called right after a successful adoption write or cold create, before the cache shows it. */
  readonly adopted: (claim: SandboxClaim, sandbox: Sandbox) => void;
  readonly now: () => number;
}

/** The fingerprint of a template, recomputed only when the template changes: every claim pass needs it. */
const fingerprints = new WeakMap<SandboxTemplate, BlueprintFingerprint>();
function fingerprintOf(template: SandboxTemplate): BlueprintFingerprint {
  let fp = fingerprints.get(template);
  if (!fp) {
    fp = templateFingerprint(template);
    fingerprints.set(template, fp);
  }
  return fp;
}

export async function acquireSandbox(
  ctx: AcquireContext,
  claim: SandboxClaim,
  pool: SandboxWarmPool | undefined,
  template: SandboxTemplate | undefined,
  binding: Extract<Binding, { kind: 'unbound' }>,
): Promise<Acquired> {
  const ns = claim.metadata.namespace ?? '';
  const invalid = validateAdditionalPodMetadata(claim, ctx.allowedLabelDomains);
  if (invalid) return { kind: 'problem', problem: invalid };
  if (!pool) {
    return { kind: 'problem', problem: { reason: ClaimReadyReason.WARM_POOL_NOT_FOUND, message: `SandboxWarmPool "${claim.spec.warmPoolRef.name}" not found` }, requeueAfterMs: MISSING_DEPENDENCY_RECHECK_MS };
  }

  let path: ReturnType<typeof claimPath> | undefined;
  if (!needsColdStart(claim)) {
    const members = ctx.sandboxes.byIndex(POOL_LABEL_INDEX, `${ns}/${NameHash.of(pool.metadata.name)}`);
    const conflicted = new Set<string>();
    for (let attempt = 0; attempt < MAX_ADOPTION_ATTEMPTS; attempt++) {
      const selection = selectCandidate(members, pool.spec.updateStrategy?.type, {
        claim,
        poolUid: pool.metadata.uid,
        templateName: template?.metadata.name,
        fingerprint: template ? fingerprintOf(template) : undefined,
        exclude: new Set([...ctx.claiming.keys(), ...conflicted]),
      });
      path = claimPath(claim, selection, ctx.now(), { conflicts: conflicted.size });
      if (path.kind !== 'adopt') break;
      const adopted = await adopt(ctx, claim, path.sandbox, template);
      if (adopted.kind !== 'conflict') return adopted;
      conflicted.add(path.sandbox.metadata.uid ?? '');
      path = undefined;
    }
    // Out of attempts with candidates left: the cache is catching up with other claims' writes.
    if (!path) return { kind: 'wait', requeueAfterMs: 50 };
    if (path.kind === 'wait') {
      return path.problem ? { kind: 'problem', problem: path.problem, requeueAfterMs: path.afterMs } : { kind: 'wait', requeueAfterMs: path.afterMs };
    }
  }

  // Cold.
  if (binding.coldBlocked) {
    return { kind: 'problem', problem: binding.coldBlocked, ...(binding.coldBlocked.transient ? { requeueAfterMs: CREATE_PENDING_RECHECK_MS } : {}) };
  }
  if (!template) {
    return { kind: 'problem', problem: { reason: ClaimReadyReason.TEMPLATE_NOT_FOUND, message: `SandboxTemplate "${pool.spec.sandboxTemplateRef.name}" not found` }, requeueAfterMs: MISSING_DEPENDENCY_RECHECK_MS };
  }
  const desired = coldSandbox(claim, pool, template, { allowedLabelDomains: ctx.allowedLabelDomains });
  if (!desired.ok) return { kind: 'problem', problem: desired.problem };
  try {
    const created = await ctx.client.create<Sandbox>(RESOURCES.sandboxes, ns, desired.value, { fieldManager: CLAIM_FIELD_MANAGER, priority: 'claim' });
    // Recorded like an adoption: until the cache shows it, later passes wait instead of creating again.
    ctx.adopted(claim, created);
    ctx.emit(claim, ClaimEvents.provisioned(created.metadata.name));
    return { kind: 'sandbox', sandbox: created, launchType: 'cold' };
  } catch (error) {
    if (error instanceof ApiError && error.alreadyExists) {
      // Our own earlier create, or a namesake, that the cache has not shown yet.
      return {
        kind: 'problem',
        problem: { reason: ClaimReadyReason.SANDBOX_CREATE_PENDING, message: `Sandbox "${claim.metadata.name}" already exists; waiting for the cache` },
        requeueAfterMs: CREATE_PENDING_RECHECK_MS,
      };
    }
    throw error;
  }
}

/** The one adoption write; 'conflict' when the member changed or vanished since the cache saw it. */
async function adopt(ctx: AcquireContext, claim: SandboxClaim, candidate: Sandbox, template: SandboxTemplate | undefined): Promise<Acquired | { kind: 'conflict' }> {
  const write = adoptionPatch(candidate, claim, template);
  if (!write.ok) return { kind: 'problem', problem: write.problem };
  const uid = candidate.metadata.uid ?? '';
  // Excluded from every other claim's selection from now until the cache shows the new owner.
  ctx.claiming.set(uid, ctx.now());
  try {
    const adopted = await ctx.client.patch<Sandbox>(RESOURCES.sandboxes, candidate.metadata.namespace, candidate.metadata.name,
      'merge', write.value.patch, { fieldManager: CLAIM_FIELD_MANAGER, priority: 'claim' });
    ctx.adopted(claim, adopted);
    ctx.emit(claim, ClaimEvents.adopted(adopted.metadata.name));
    return { kind: 'sandbox', sandbox: adopted, launchType: 'warm' };
  } catch (error) {
    ctx.claiming.delete(uid);
    if (error instanceof ApiError && (error.conflict || error.notFound)) return { kind: 'conflict' };
    throw error;
  }
}
