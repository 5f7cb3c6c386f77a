/**
 * The thin I/O half of the SandboxClaim controller. One pass: read the binding back from the
 * Sandboxes (recover.ts), handle expiry (lifecycle.ts), get a Sandbox if there is none
 * (acquire.ts), write the status if it changed, then (off the Ready path) the observability
 * annotations. A warm claim costs the adoption write, the status write and one annotation patch.
 */
import { SandboxAnnotations } from '../../../../src/api/labels';
import { ApiError, splitKey, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';
import { OWNER_UID_INDEX } from '../extension-informers';
import { CLAIM_FIELD_MANAGER, acquireSandbox, type AcquireContext } from './acquire';
import { claimExpiry, expiryPlan, type ClaimExpiry } from './lifecycle';
import type { ClaimMetrics } from './metrics';
import { AdoptionRecords, recoverBinding } from './recover';
import { claimStatus, observabilityPatch, type ClaimEvent, type ClaimProblem } from './status';
import { ClaimReadyReason, ConditionType } from '../../../../src/api/conditions';
import { findCondition, RESOURCES, type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool } from '../../model';
import { OwnWrites } from '../../runtime/expectations';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';

/** Our adoption is not in the cache yet: its watch event normally wakes the claim first. */
const PENDING_ADOPTION_RECHECK_MS = 1_000;
/** The status write lost an optimistic-lock race (the claim changed): the claim's event is on its way. */
const STATUS_CONFLICT_RETRY_MS = 100;
/** Entries of `claiming` older than this are dropped: the cache has long shown (or lost) the adoption. */
const CLAIMING_TTL_MS = 60_000;

export interface ClaimReconcilerOptions {
  readonly client: KubeClient;
  readonly claims: Store<SandboxClaim>;
  readonly pools: Store<SandboxWarmPool>;
  readonly templates: Store<SandboxTemplate>;
  /** Must carry OWNER_UID_INDEX and POOL_LABEL_INDEX. */
  readonly sandboxes: Store<Sandbox>;
  readonly metrics?: ClaimMetrics;
  readonly allowedLabelDomains?: readonly string[];
  /** --disable-claim-events */
  readonly disableEvents?: boolean;
  /** --disable-claim-observability-annotations */
  readonly disableAnnotations?: boolean;
  readonly now?: () => number;
  readonly log?: Logger;
}

export class ClaimReconciler implements Reconciler {
  public readonly name = 'sandboxclaim';
  /** When this process first saw each claim (by UID): the controller latency's start. */
  public readonly firstObserved = new Map<string, number>();
  public readonly adoptionRecords = new AdoptionRecords();
  /** Members being adopted by some claim of this process (UID → since), kept out of every selection. */
  public readonly claiming = new Map<string, number>();
  /**
   * Annotations this process wrote that the cache may not show yet, by claim UID. A pass running on
   * the version from before the annotation patch would otherwise write them again, and turn a real
   * claim-first-ready-at into `unknown` (the claim looks Ready-before-this-pass then).
   */
  private readonly annotated = new Map<string, Record<string, string>>();
  /**
   * Our status and annotation writes the cache has not shown yet (by claim key). Sandbox events
   * often wake the claim before its own watch event arrives; deciding on the written object
   * instead of the stale one saves a repeated write or a 409 on the status's resourceVersion.
   */
  private readonly written = new OwnWrites<SandboxClaim>();
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly acquire: AcquireContext;

  public constructor(private readonly opts: ClaimReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? SILENT_LOGGER;
    this.acquire = {
      client: opts.client,
      sandboxes: opts.sandboxes,
      claiming: this.claiming,
      allowedLabelDomains: opts.allowedLabelDomains,
      emit: (claim, event) => this.emit(claim, event),
      adopted: (claim, sandbox) => this.adoptionRecords.record(claim.metadata.uid ?? '', { sandboxName: sandbox.metadata.name, sandboxUid: sandbox.metadata.uid ?? '' }, this.now()),
      now: this.now,
    };
  }

  /** First sighting of a claim (its informer add event). */
  public noteObserved(claim: SandboxClaim): void {
    const uid = claim.metadata.uid;
    if (uid && !this.firstObserved.has(uid)) this.firstObserved.set(uid, this.now());
  }

  public forgetClaim(uid: string | undefined): void {
    if (!uid) return;
    this.firstObserved.delete(uid);
    this.adoptionRecords.forget(uid);
    this.annotated.delete(uid);
  }

  /** The cache now shows `sandbox`: settle adoption bookkeeping about it. */
  public observeSandbox(sandbox: Sandbox, deleted: boolean, stillPoolMember: boolean): void {
    this.adoptionRecords.observe(sandbox, deleted);
    if (deleted || !stillPoolMember) this.claiming.delete(sandbox.metadata.uid ?? '');
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const cached = this.opts.claims.get(namespace, name);
    // No finalizer: a deleted claim's Sandbox goes by garbage collection.
    if (!cached || cached.metadata.deletionTimestamp) {
      this.written.forget(key);
      return;
    }
    const claim = this.written.current(key, cached, this.now());
    const uid = claim.metadata.uid ?? '';
    const now = this.now();
    this.noteObserved(claim);
    this.pruneClaiming(now);
    const pool = this.opts.pools.get(namespace, claim.spec.warmPoolRef.name);
    const template = pool ? this.opts.templates.get(namespace, pool.spec.sandboxTemplateRef.name) : undefined;

    const record = this.adoptionRecords.get(uid, now);
    const binding = recoverBinding(claim, this.related(claim, record?.sandboxName), record);
    let sandbox: Sandbox | undefined;
    if (binding.kind === 'pending') return { requeueAfterMs: PENDING_ADOPTION_RECHECK_MS };
    if (binding.kind === 'multiple') {
      // An adoption raced a lagging cache; give the extras back to garbage collection.
      await Promise.all(binding.release.map((s) =>
        this.deleteQuietly(RESOURCES.sandboxes, s.metadata.namespace, s.metadata.name, { uid: s.metadata.uid })));
      this.log.warn({ claim: key, kept: binding.keep.metadata.name, released: binding.release.map((s) => s.metadata.name) }, 'claim owned several Sandboxes; released the extras');
      sandbox = binding.keep;
    } else if (binding.kind === 'bound') {
      sandbox = binding.sandbox;
      if (binding.launchTypePatch) {
        await this.opts.client.patch(RESOURCES.sandboxes, namespace, sandbox.metadata.name, 'merge', binding.launchTypePatch, { fieldManager: CLAIM_FIELD_MANAGER });
      }
    }

    const expiry = claimExpiry(claim, sandbox, now);
    if (expiry.expired) return this.expire(key, cached, claim, sandbox, expiry);

    let problem: ClaimProblem | undefined;
    let requeueAfterMs = expiry.requeueAfterMs;
    if (!sandbox && binding.kind === 'unbound') {
      const got = await acquireSandbox(this.acquire, claim, pool, template, binding);
      if (got.kind === 'wait') return { requeueAfterMs: minDefined(got.requeueAfterMs, requeueAfterMs)! };
      if (got.kind === 'problem') {
        problem = got.problem;
        requeueAfterMs = minDefined(got.requeueAfterMs, requeueAfterMs);
      } else {
        sandbox = got.sandbox;
        this.opts.metrics?.created(claim, got.sandbox, got.launchType);
        // The Sandbox came from the write's response; its Ready may already be True (warm).
        requeueAfterMs = minDefined(claimExpiry(claim, sandbox, now).requeueAfterMs, requeueAfterMs);
      }
    }

    const written = await this.writeStatus(key, cached, claim, sandbox, problem, false);
    if (written === 'gone') return;
    if (written === 'conflict') return { requeueAfterMs: STATUS_CONFLICT_RETRY_MS };
    await this.afterStatus(key, cached, claim, sandbox, written);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs: Math.max(1, requeueAfterMs) };
  }

  /** An expired claim: mark it (once), then apply the shutdown policy; every step is idempotent. */
  private async expire(key: string, cached: SandboxClaim, claim: SandboxClaim, sandbox: Sandbox | undefined, expiry: ClaimExpiry)
    : Promise<ReconcileResult | void> {
    const plan = expiryPlan(claim, sandbox, expiry);
    const problem = plan.skippedMessage ? { reason: ClaimReadyReason.CLAIM_EXPIRED, message: plan.skippedMessage } : undefined;
    const written = await this.writeStatus(key, cached, claim, sandbox, problem, true);
    if (written === 'gone') return;
    if (written === 'conflict') return { requeueAfterMs: STATUS_CONFLICT_RETRY_MS };
    for (const event of plan.events) this.emit(claim, event);
    const ns = claim.metadata.namespace;
    if (plan.deleteClaim) {
      const { uid, propagationPolicy } = plan.deleteClaim;
      await this.deleteQuietly(RESOURCES.claims, ns, claim.metadata.name, { uid, propagationPolicy });
      this.log.info({ claim: `${ns}/${claim.metadata.name}`, propagation: plan.deleteClaim.propagationPolicy }, 'claim expired and deleted');
    }
    if (plan.deleteSandbox) {
      await this.deleteQuietly(RESOURCES.sandboxes, ns, plan.deleteSandbox.name, { uid: plan.deleteSandbox.uid });
      this.log.info({ claim: `${ns}/${claim.metadata.name}`, sandbox: plan.deleteSandbox.name }, 'claim expired; its Sandbox deleted (Retain)');
    }
    return undefined;
  }

  /** The claim's status write, when it changed: the status it now has, or why it could not be written. */
  private async writeStatus(
    key: string, cached: SandboxClaim, claim: SandboxClaim, sandbox: Sandbox | undefined, problem: ClaimProblem | undefined, expired: boolean,
  )
    : Promise<SandboxClaim['status'] | 'gone' | 'conflict'> {
    const decision = claimStatus({
      claim,
      sandbox,
      problem,
      expired,
      now: this.now(),
      // A problem reported before any Sandbox exists must not erase a binding the cache will show shortly.
      keepBinding: sandbox === undefined && problem?.reason === ClaimReadyReason.SANDBOX_CREATE_PENDING,
    });
    if (!decision.changed || !decision.patch) return decision.status;
    try {
      const result = await this.opts.client.patch<SandboxClaim>(RESOURCES.claims, claim.metadata.namespace, claim.metadata.name, 'merge', decision.patch,
        { fieldManager: CLAIM_FIELD_MANAGER, subresource: 'status', priority: 'claim' });
      this.written.wrote(key, cached, result, this.now());
      return decision.status;
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return 'gone';
      if (error instanceof ApiError && error.conflict) return 'conflict';
      throw error;
    }
  }

  /** Once the status is persisted: the first-Ready latencies and the observability annotations. */
  private async afterStatus(key: string, cached: SandboxClaim, seen: SandboxClaim, sandbox: Sandbox | undefined, status: SandboxClaim['status']): Promise<void> {
    const now = this.now();
    const uid = seen.metadata.uid ?? '';
    const mine = this.annotated.get(uid);
    // Settled only when the cache itself shows them, not our written copy of the claim.
    const inCache = cached.metadata.annotations ?? {};
    if (mine && Object.entries(mine).every(([k, v]) => inCache[k] === v)) this.annotated.delete(uid);
    const current = seen.metadata.annotations ?? {};
    const claim: SandboxClaim = mine ? { ...seen, metadata: { ...seen.metadata, annotations: { ...current, ...mine } } } : seen;
    const wasReady = findCondition(claim.status?.conditions, ConditionType.READY)?.status === 'True';
    const isReady = findCondition(status?.conditions, ConditionType.READY)?.status === 'True';
    const firstObservedAtMs = this.firstObserved.get(claim.metadata.uid ?? '') ?? now;
    if (isReady && !wasReady && !claim.metadata.annotations?.[SandboxAnnotations.CLAIM_FIRST_READY_AT]) {
      this.opts.metrics?.firstReady(claim, sandbox, now, firstObservedAtMs);
    }
    const patch = observabilityPatch({ claim, firstObservedAtMs, wasReady, isReady, now, disabled: this.opts.disableAnnotations });
    if (!patch) return;
    try {
      // No resourceVersion: it only adds annotations nobody else writes. Off the Ready path, so it
      // waits behind other claims' writes.
      const result = await this.opts.client.patch<SandboxClaim>(RESOURCES.claims, claim.metadata.namespace, claim.metadata.name, 'merge', patch, { fieldManager: CLAIM_FIELD_MANAGER, priority: 'background' });
      this.written.wrote(key, cached, result, this.now());
      const added = (patch.metadata as { annotations: Record<string, string> }).annotations;
      this.annotated.set(uid, { ...this.annotated.get(uid), ...added });
    } catch (error) {
      if (!(error instanceof ApiError && error.notFound)) throw error;
    }
  }

  /** Sandboxes that may be the claim's: controlled by its UID, named by its status, or named like it. */
  /**
   * The Sandboxes recoverBinding needs: those the claim controls, those its status and name point
   * at, and the one this process just adopted for it (the cache may still show it as the pool's;
   * without it the claim would look unbound and adopt a second member).
   */
  private related(claim: SandboxClaim, adoptedName?: string): Sandbox[] {
    const { sandboxes } = this.opts;
    const ns = claim.metadata.namespace;
    const out = new Map<string, Sandbox>();
    for (const s of sandboxes.byIndex(OWNER_UID_INDEX, claim.metadata.uid ?? '')) out.set(s.metadata.name, s);
    for (const n of [claim.status?.sandbox?.name, claim.metadata.name, adoptedName]) {
      const s = n ? sandboxes.get(ns, n) : undefined;
      if (s) out.set(s.metadata.name, s);
    }
    return [...out.values()];
  }

  private emit(claim: SandboxClaim, event: ClaimEvent): void {
    if (!this.opts.disableEvents) this.opts.client.event(claim, event.type, event.reason, event.action, event.note);
  }

  private async deleteQuietly(type: (typeof RESOURCES)[keyof typeof RESOURCES], namespace: string | undefined, name: string,
    options: Parameters<KubeClient['delete']>[3]): Promise<void> {
    try {
      await this.opts.client.delete(type, namespace, name, options);
    } catch (error) {
      // Already gone, or a namesake (uid precondition): nothing of ours to delete.
      if (error instanceof ApiError && (error.notFound || error.conflict)) return;
      throw error;
    }
  }

  private pruneClaiming(now: number): void {
    for (const [uid, at] of this.claiming) if (now - at >= CLAIMING_TTL_MS) this.claiming.delete(uid);
  }
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
