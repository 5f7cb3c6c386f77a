/**
 * The SandboxClaim controller's executor: it reads a claim's state from the caches, has it decided
 * (plan.ts) and makes the plan's writes (wiring: controller.ts). A warm claim
 * costs one conditional write on the Sandbox, the status write and, off the Ready path, one
 * annotation patch, plus an Event.
 *
 * The caches show our writes only after their watch events, and other objects' events often wake
 * a claim before that. Three expectations (runtime/expectations.ts) bridge the gap: `claimed`,
 * Sandboxes this process is adopting or adopted or created, until the cache shows them taken (no
 * other claim selects them; the claim waits instead of taking a second one); `written`, our last
 * write of each claim (no repeated status write, no 409 on a stale resourceVersion); `annotated`,
 * the annotations we wrote (a pass on an older claim would turn claim-first-ready-at to `unknown`).
 */
import { KINDS } from '#api/groups';
import { networkPolicyNameFor } from '#api/network-policy-defaults';
import { WarmCandidateIndex } from './candidate-index';
import { ClaimMetrics } from './metrics';
import {
  type Acquired, type Acquisition, type Adoption, type ClaimState, type Creation, type ExpirePlan, expiredStatus, minDefined, planClaim,
  servedRequeueMs, servedStatus, type ServePlan,
} from './plan';
import { afterStatus, ClaimEvents, type ClaimEvent, type StatusDecision } from './status';
import {
  CONTROLLER_UID_INDEX, controllerNameOfKind, isControlledBy, LaunchType, type NetworkPolicy, RESOURCES, type Sandbox,
  type SandboxClaim, type SandboxClaimStatus, type SandboxTemplate, type SandboxWarmPool,
} from '../../model';
import { templateGate } from '../../model/template-gate';
import { Expectations, OwnWrites } from '../../runtime/expectations';
import { FirstSeen } from '../../runtime/first-seen';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';
import { ApiError, splitKey, type Informer, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';
import { CLAIM_PRIORITY, type DeferredSends, HeldAnnotations } from '../claims-first';
import { UID_INDEX } from '../extension-informers';

export const CLAIM_FIELD_MANAGER = 'sandboxclaim-controller';
/** How long an expectation waits for the cache: far above watch latency; a lost event only delays a claim this long. */
const CACHE_LAG_TTL_MS = 60_000;
/** The status write lost an optimistic-lock race (the claim changed): the claim's event is on its way. */
const STATUS_CONFLICT_RETRY_MS = 100;

export interface ClaimReconcilerOptions {
  readonly client: KubeClient;
  readonly claims: Store<SandboxClaim>;
  readonly pools: Store<SandboxWarmPool>;
  readonly templates: Store<SandboxTemplate>;
  /** The templates' NetworkPolicies: the cold path builds no Sandbox from a Managed template before its policy shows. */
  readonly networkPolicies: Store<NetworkPolicy>;
  /** Labels of the router Pods (`--router-pod-labels`). @default app=sandbox-router */
  readonly routerPodLabels?: { readonly [key: string]: string };
  /** Must carry CONTROLLER_UID_INDEX and UID_INDEX; the pools' warm candidates are indexed from its events. */
  readonly sandboxes: Informer<Sandbox>;
  readonly metrics?: ClaimMetrics;
  readonly allowedLabelDomains?: readonly string[];
  /** --disable-claim-events */
  readonly disableEvents?: boolean;
  /** --disable-claim-observability-annotations */
  readonly disableAnnotations?: boolean;
  readonly now?: () => number;
  /**
   * The clock of intervals this controller measures itself (how long a write may wait for the cache):
   * monotonic in the process, so a wall-clock step neither ends them at once nor stretches them by
   * the step. @default now
   */
  readonly elapsed?: () => number;
  readonly log?: Logger;
  /** Observability annotations held while other claims wait (claims-first). @default - never held */
  readonly annotationsHeld?: HeldAnnotations;
  /** Events held while other claims wait (claims-first). @default - sent at once */
  readonly eventsHeld?: DeferredSends;
}

/** A Sandbox this process adopts (warm) or created (cold) for a claim. */
interface ClaimedSandbox {
  readonly claimUid: string;
  readonly sandboxName: string;
  readonly launchType: (typeof LaunchType)[keyof typeof LaunchType];
}

export class ClaimReconciler implements Reconciler {
  public readonly name = 'sandboxclaim';
  /** When this process first saw each claim: where the controller latency and controller-first-observed-at start. */
  public readonly sightings = new FirstSeen<SandboxClaim>();
  /**
   * The same on the elapsed clock, for claims and Sandboxes: how long this process has watched them
   * (a claim's grace for members without an IP, a member's stuck rule), which a step of the wall
   * clock does not move.
   */
  private readonly watchedClaims = new FirstSeen<SandboxClaim>();
  private readonly watchedSandboxes = new FirstSeen<Sandbox>();
  /** By Sandbox UID. */
  public readonly claimed = new Expectations<ClaimedSandbox, Sandbox>({
    // A member gone from the cache was deleted (it was there when chosen); a created Sandbox not there yet is still to come.
    isShown: (claimed, cached) => (cached ? controllerNameOfKind(cached, KINDS.warmPool) === undefined : claimed.launchType === LaunchType.WARM),
    ttlMs: CACHE_LAG_TTL_MS,
  });
  /** By claim UID. Shown only when the cache itself has them (not our written copy of the claim), or the claim is gone. */
  public readonly annotated = new Expectations<Record<string, string>, SandboxClaim>({
    isShown: (added, cached) => !cached || Object.entries(added).every(([k, v]) => cached.metadata.annotations?.[k] === v),
    // As long as the cache lags: a lapsed entry would let a pass rewrite claim-first-ready-at.
    ttlMs: Infinity,
  });
  /** By claim key. */
  private readonly written = new OwnWrites<SandboxClaim>();
  /** Observability annotations computed at a claim's first Ready and held while other claims wait (claims-first). */
  private readonly heldAnnotations: HeldAnnotations;
  /** Every pool's warm candidates, ranked as the Sandbox cache changes: a pick does not walk the pool. */
  public readonly candidates: WarmCandidateIndex;
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly log: Logger;

  public constructor(private readonly opts: ClaimReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.elapsed = opts.elapsed ?? this.now;
    this.log = opts.log ?? SILENT_LOGGER;
    this.candidates = new WarmCandidateIndex().follow(opts.sandboxes);
    this.heldAnnotations = opts.annotationsHeld ?? new HeldAnnotations();
  }

  /** Settle the expectations and note first sightings from the informers' events. */
  public follow(claims: Informer<SandboxClaim>, sandboxes: Informer<Sandbox>): void {
    this.sightings.follow(claims, this.now);
    this.watchedClaims.follow(claims, this.elapsed);
    this.watchedSandboxes.follow(sandboxes, this.elapsed);
    this.claimed.follow(sandboxes, (sb) => sb.metadata.uid);
    this.annotated.follow(claims, (claim) => claim.metadata.uid);
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const cached = this.opts.claims.get(namespace, name);
    // No finalizer: a deleted claim's Sandbox goes by garbage collection.
    if (!cached || cached.metadata.deletionTimestamp) {
      this.written.forget(key);
      this.heldAnnotations.forget(key);
      return undefined;
    }
    const state = this.observe(key, cached);
    const plan = planClaim(state);
    if (plan.kind === 'wait-for-cache') return { requeueAfterMs: plan.requeueAfterMs };
    // Nothing is awaited between the plan and an adoption's expectation (acquire → adopt, before
    // the write): another claim's pass would run at the await, select the same member and get a 409.
    if (plan.release || plan.repair) await this.cleanUp(key, plan);
    if (plan.kind === 'expire') return this.expire(key, cached, state.claim, plan);

    const acquired = await this.acquire(state.claim, plan.acquisition);
    if (acquired.kind === 'wait') return { requeueAfterMs: minDefined(acquired.requeueAfterMs, plan.requeueAfterMs)! };
    const status = await this.writeStatus(key, cached, servedStatus(state.claim, acquired, this.now(), state.pool));
    if (status === 'gone') return undefined;
    if (status === 'conflict') return { requeueAfterMs: STATUS_CONFLICT_RETRY_MS };
    const annotateAfterMs = await this.annotate(key, cached, state.claim, acquired.kind === 'sandbox' ? acquired.sandbox : undefined, status);
    const requeueAfterMs = minDefined(servedRequeueMs(plan, state.claim, acquired, state.now), annotateAfterMs);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /** Release a claim's extra Sandboxes to garbage collection; restore a missing launch-type label. */
  private async cleanUp(key: string, { release, repair }: ExpirePlan | ServePlan): Promise<void> {
    if (release) {
      const { namespace } = release.keep.metadata;
      await Promise.all(release.extras.map((s) => this.deleteQuietly(RESOURCES.sandboxes, namespace, s.metadata.name, { uid: s.metadata.uid })));
      const released = release.extras.map((s) => s.metadata.name);
      this.log.warn({ claim: key, kept: release.keep.metadata.name, released }, 'claim owned several Sandboxes; released the extras');
    }
    if (repair) {
      await this.opts.client.patch(RESOURCES.sandboxes, repair.sandbox.metadata.namespace, repair.sandbox.metadata.name, 'merge', repair.patch,
        { fieldManager: CLAIM_FIELD_MANAGER });
    }
  }

  /** The claim's state from the caches, with our writes they do not show yet. */
  private observe(key: string, cached: SandboxClaim): ClaimState {
    const now = this.now();
    const at = this.elapsed();
    const claim = this.written.current(key, cached, at);
    const ns = claim.metadata.namespace;
    this.sightings.saw(claim, now);
    const watchedMs = at - this.watchedClaims.saw(claim, at);
    const pool = this.opts.pools.get(ns, claim.spec.warmPoolRef.name);
    const claimed = this.stillClaimed();
    const pendingSandbox = claimed.find(([, c]) => c.claimUid === claim.metadata.uid)?.[1].sandboxName;
    const templateName = pool?.spec.sandboxTemplateRef.name;
    const template = templateName === undefined ? undefined : this.opts.templates.get(ns, templateName);
    return {
      claim,
      pool,
      template,
      ...(template && templateName !== undefined ? {
        templateGate: templateGate(ns ?? '', templateName, template, this.opts.networkPolicies.get(ns, networkPolicyNameFor(templateName)), this.opts.routerPodLabels),
      } : {}),
      sandboxes: this.related(claim, pendingSandbox),
      pendingSandbox,
      rankCandidates: (strategy, context) => this.candidates.candidates(strategy, context),
      beingClaimed: new Set(claimed.map(([uid]) => uid)),
      allowedLabelDomains: this.opts.allowedLabelDomains,
      now,
      watchedMs,
      watchedMember: (sandbox) => at - this.watchedSandboxes.saw(sandbox, at),
    };
  }

  /** Claimed Sandboxes the cache does not show taken yet, by UID. */
  private stillClaimed(): Array<[string, ClaimedSandbox]> {
    return this.claimed.sweep(this.elapsed(), (uid) => this.opts.sandboxes.byIndex(UID_INDEX, uid)[0]);
  }

  /**
   * The Sandboxes recoverBinding needs: those the claim controls, those its status and name point
   * at, and the one this process just adopted for it (the cache may still show it as the pool's).
   */
  private related(claim: SandboxClaim, pendingSandbox?: string): Sandbox[] {
    const { sandboxes } = this.opts;
    const ns = claim.metadata.namespace;
    const out = new Map<string, Sandbox>();
    for (const s of sandboxes.byIndex(CONTROLLER_UID_INDEX, claim.metadata.uid ?? '')) out.set(s.metadata.name, s);
    for (const n of [claim.status?.sandbox?.name, claim.metadata.name, pendingSandbox]) {
      const s = n ? sandboxes.get(ns, n) : undefined;
      if (s) out.set(s.metadata.name, s);
    }
    return [...out.values()];
  }

  /** Perform an acquisition: adoption writes down the candidates until one lands, or a cold create. */
  private async acquire(claim: SandboxClaim, acquisition: Acquisition): Promise<Acquired> {
    let step = acquisition;
    while (step.kind === 'adopt') {
      const adopted = await this.adopt(claim, step);
      if (adopted) return { kind: 'sandbox', sandbox: adopted };
      step = step.afterConflict(new Set(this.stillClaimed().map(([uid]) => uid)), this.now());
    }
    return step.kind === 'create' ? this.create(claim, step) : step;
  }

  /** The one adoption write; undefined when the member changed or vanished since the cache saw it. */
  private async adopt(claim: SandboxClaim, adoption: Adoption): Promise<Sandbox | undefined> {
    const { candidate } = adoption;
    const uid = candidate.metadata.uid ?? '';
    // Kept out of every other claim's selection from now until the cache shows the new owner.
    this.claimed.expect(uid, { claimUid: claim.metadata.uid ?? '', sandboxName: candidate.metadata.name, launchType: LaunchType.WARM }, this.elapsed());
    let adopted: Sandbox;
    try {
      adopted = await this.opts.client.patch<Sandbox>(RESOURCES.sandboxes, candidate.metadata.namespace, candidate.metadata.name,
        'merge', adoption.patch, { fieldManager: CLAIM_FIELD_MANAGER, priority: CLAIM_PRIORITY });
    } catch (error) {
      if (error instanceof ApiError && error.statusCode >= 400 && error.statusCode < 500) {
        this.claimed.forget(uid);
        if (error.conflict || error.notFound) return undefined;
        throw error;
      }
      // A timeout, a reset or a 5xx: the write may have landed. Taking another member now could
      // give this claim two, so ask the server which it was.
      const outcome = await this.adoptedAfterAll(claim, candidate);
      if (outcome === 'unknown') throw error;
      if (outcome === 'not-ours') return undefined;
      adopted = outcome;
    }
    this.emit(claim, ClaimEvents.adopted(adopted.metadata.name));
    this.opts.metrics?.created(claim, adopted, LaunchType.WARM);
    return adopted;
  }

  /**
   * After an adoption write with no answer: the Sandbox if it is ours now; 'not-ours' (the member
   * freed, try the next) if the write did not land; 'unknown' (the expectation stays, the claim
   * waits for the cache) if the server cannot say either.
   */
  private async adoptedAfterAll(claim: SandboxClaim, candidate: Sandbox): Promise<Sandbox | 'not-ours' | 'unknown'> {
    const uid = candidate.metadata.uid ?? '';
    let current: Sandbox;
    try {
      current = await this.opts.client.get<Sandbox>(RESOURCES.sandboxes, candidate.metadata.namespace, candidate.metadata.name);
    } catch (error) {
      if (!(error instanceof ApiError && error.notFound)) return 'unknown';
      this.claimed.forget(uid);
      return 'not-ours';
    }
    if (current.metadata.uid === uid && isControlledBy(current, claim.metadata.uid)) return current;
    this.claimed.forget(uid);
    return 'not-ours';
  }

  private async create(claim: SandboxClaim, creation: Creation): Promise<Acquired> {
    try {
      const created = await this.opts.client.create<Sandbox>(RESOURCES.sandboxes, claim.metadata.namespace, creation.sandbox,
        { fieldManager: CLAIM_FIELD_MANAGER, priority: CLAIM_PRIORITY });
      // Until the cache shows it, later passes wait instead of creating it again.
      this.claimed.expect(created.metadata.uid ?? '', {
        claimUid: claim.metadata.uid ?? '',
        sandboxName: created.metadata.name,
        launchType: LaunchType.COLD,
      },
      this.elapsed());
      this.emit(claim, ClaimEvents.provisioned(created.metadata.name));
      this.opts.metrics?.created(claim, created, LaunchType.COLD);
      return { kind: 'sandbox', sandbox: created };
    } catch (error) {
      if (error instanceof ApiError && error.alreadyExists) return creation.ifTaken;
      throw error;
    }
  }

  /** An expired claim: mark it (once), then apply the shutdown policy; every step is idempotent. */
  private async expire(key: string, cached: SandboxClaim, claim: SandboxClaim, plan: ExpirePlan): Promise<ReconcileResult | void> {
    const written = await this.writeStatus(key, cached, expiredStatus(claim, plan, this.now()));
    if (written === 'gone') return undefined;
    if (written === 'conflict') return { requeueAfterMs: STATUS_CONFLICT_RETRY_MS };
    for (const event of plan.expiry.events) this.emit(claim, event);
    const ns = claim.metadata.namespace;
    const { deleteClaim, deleteSandbox } = plan.expiry;
    if (deleteClaim) {
      await this.deleteQuietly(RESOURCES.claims, ns, claim.metadata.name, deleteClaim);
      this.log.info({ claim: key, propagation: deleteClaim.propagationPolicy }, 'claim expired and deleted');
    }
    if (deleteSandbox) {
      await this.deleteQuietly(RESOURCES.sandboxes, ns, deleteSandbox.name, { uid: deleteSandbox.uid });
      this.log.info({ claim: key, sandbox: deleteSandbox.name }, 'claim expired; its Sandbox deleted (Retain)');
    }
    return undefined;
  }

  /** The claim's status write, when it changed: the status it now has, or why it could not be written. */
  private async writeStatus(key: string, cached: SandboxClaim, decision: StatusDecision): Promise<SandboxClaimStatus | 'gone' | 'conflict'> {
    if (!decision.changed || !decision.patch) return decision.status;
    const { namespace, name } = splitKey(key);
    try {
      const result = await this.opts.client.patch<SandboxClaim>(RESOURCES.claims, namespace, name, 'merge', decision.patch,
        { fieldManager: CLAIM_FIELD_MANAGER, subresource: 'status', priority: CLAIM_PRIORITY });
      this.written.wrote(key, cached, result, this.elapsed());
      return decision.status;
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return 'gone';
      if (error instanceof ApiError && error.conflict) return 'conflict';
      throw error;
    }
  }

  /**
   * Once the status is persisted: the first-Ready latencies and the observability annotations.
   * While other claims wait the annotations are held (claims-first HeldAnnotations); the result is when to look
   * again for them.
   */
  private async annotate(key: string, cached: SandboxClaim, seen: SandboxClaim, sandbox: Sandbox | undefined, status: SandboxClaimStatus)
    : Promise<number | undefined> {
    const now = this.now();
    const uid = seen.metadata.uid ?? '';
    const ours = this.annotated.pending(uid, cached, this.elapsed());
    const claim: SandboxClaim = ours ? { ...seen, metadata: { ...seen.metadata, annotations: { ...seen.metadata.annotations, ...ours } } } : seen;
    const firstObservedAtMs = this.sightings.saw(claim, now);
    const next = afterStatus({ claim, status, firstObservedAtMs, now, disabled: this.opts.disableAnnotations });
    if (next.firstReady) this.opts.metrics?.firstReady(claim, sandbox, now, firstObservedAtMs);
    const computed = (next.patch?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
    // What was held wins: it was computed at the first Ready.
    const step = this.heldAnnotations.next(key, uid, computed, claim.metadata.annotations);
    if (step.kind === 'none') return undefined;
    if (step.kind === 'held') return step.retryAfterMs;
    const { add } = step;
    try {
      // No resourceVersion: it only adds annotations nobody else writes. Off the Ready path, so it
      // waits behind other claims' writes.
      const result = await this.opts.client.patch<SandboxClaim>(RESOURCES.claims, claim.metadata.namespace, claim.metadata.name, 'merge',
        { metadata: { annotations: add } }, { fieldManager: CLAIM_FIELD_MANAGER, priority: 'background' });
      this.heldAnnotations.settled(key);
      this.written.wrote(key, cached, result, this.elapsed());
      this.annotated.expect(uid, { ...ours, ...add }, this.elapsed());
    } catch (error) {
      if (!(error instanceof ApiError && error.notFound)) throw error;
      this.heldAnnotations.settled(key);
    }
    return undefined;
  }

  private emit(claim: SandboxClaim, event: ClaimEvent): void {
    if (this.opts.disableEvents) return;
    const send = () => this.opts.client.event(claim, event.type, event.reason, event.action, event.note);
    if (this.opts.eventsHeld) this.opts.eventsHeld.run(send);
    else send();
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
}
