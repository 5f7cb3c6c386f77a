/**
 * The thin I/O half of the SandboxWarmPool controller: classify the pool's members from the cache,
 * plan the pass (plan.ts), perform it, and keep what the plan needs between passes: the member
 * writes the cache has not shown (member-writes.ts) and the pacing state. Writes in order:
 * adoptions and label fixes, deletes, creates (slow-start waves), then the status if it changed.
 */
import { NameHash } from '#api/name-hash';
import { networkPolicyNameFor } from '#api/network-policy-defaults';
import { ApiError, keyOf, splitKey, type Informer, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';
import { CLAIMS_BY_POOL_INDEX, POOL_LABEL_INDEX } from '../extension-informers';
import { classifyMembers } from './classify';
import { buildPoolSandbox, launchTypeLabelPatch, memberName, orphanAdoptionPatch, withMemberName } from './desired';
import { forgetMemberWrites, memberWrites, memberWritesExpireAtMs, pendingMemberWrites, restartMemberWrite, type MemberWrites } from './member-writes';
import { INITIAL_POOL_STATE, planPool, type MemberDelete, type PoolState } from './plan';
import { desiredReplicas, type PoolFlags } from './types';
import { isReady, type NetworkPolicy, RESOURCES, type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool, timeMs } from '../../model';
import { templateGate } from '../../model/template-gate';
import { scaleToZeroPeriodMs } from '../../model/warm-pool-scale';
import { OwnWrites } from '../../runtime/expectations';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';
import { isPoolShort, type ClaimPressure } from '../claims-first';

export const POOL_FIELD_MANAGER = 'sandboxwarmpool-controller';

/** Names are drawn from 27^5 suffixes; a third collision in a row means something else is wrong. */
const MAX_NAME_ATTEMPTS = 3;

/** A pool's pacing between passes, in memory; dropped when the pool is gone or replaced by a namesake. */
interface PoolMemory {
  readonly uid: string;
  state: PoolState;
  /** Members this process has seen not Ready, by UID: since when, on the elapsed clock (the last pass's members only). */
  notReadySince?: Map<string, number>;
}

export interface PoolReconcilerOptions {
  readonly client: KubeClient;
  readonly pools: Store<SandboxWarmPool>;
  readonly templates: Store<SandboxTemplate>;
  /** The templates' NetworkPolicies: no member is built from a Managed template until its policy is here. */
  readonly networkPolicies: Store<NetworkPolicy>;
  /** Labels of the router Pods (`--router-pod-labels`); a template giving its Pods all of them is refused. @default app=sandbox-router */
  readonly routerPodLabels?: { readonly [key: string]: string };
  /** Must carry POOL_LABEL_INDEX. */
  readonly sandboxes: Store<Sandbox>;
  /**
   * Must carry CLAIMS_BY_POOL_INDEX: the claims that move a scale-to-zero pool's idle clock.
   * @default - no claims seen (pools with scaleToZeroAfterSeconds go by status.lastClaimTime alone)
   */
  readonly claims?: Pick<Store<SandboxClaim>, 'byIndex'>;
  readonly flags: PoolFlags;
  readonly now?: () => number;
  /**
   * The clock of intervals this controller measures itself (how long a write may wait for the cache):
   * monotonic in the process, so a wall-clock step neither ends them at once nor stretches them by
   * the step. @default now
   */
  readonly elapsed?: () => number;
  readonly log?: Logger;
  /** Counts members created, by namespace and pool. @default - not counted */
  readonly creations?: { inc(labels: { namespace: string; warmpool: string }): void };
  /** How long a member write the cache has not shown is remembered; tests shorten it. @default MEMBER_WRITE_TTL_MS */
  readonly memberWriteTtlMs?: number;
  /** Claims waiting, per pool: refill gives way to them (controllers/claims-first). @default - refill never waits for claims */
  readonly claimPressure?: Pick<ClaimPressure, 'waitingFor' | 'busyOn' | 'poolShort' | 'membersWanted'>;
}

export class WarmPoolReconciler implements Reconciler {
  public readonly name = 'sandboxwarmpool';
  /** Pacing by pool key. */
  private readonly memory = new Map<string, PoolMemory>();
  /** Member writes of every pool, by the member's key. */
  private readonly writes: MemberWrites;
  /** Our status writes the pool cache has not shown yet: decided on, so the same status is not written twice. */
  private readonly statusWrites = new OwnWrites<SandboxWarmPool>();
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly log: Logger;
  /** Pools whose creates gave way to waiting claims in their last pass. */
  private readonly heldForClaims = new Set<string>();

  public constructor(private readonly opts: PoolReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.elapsed = opts.elapsed ?? this.now;
    this.log = opts.log ?? SILENT_LOGGER;
    this.writes = memberWrites(opts.memberWriteTtlMs);
  }

  /** Refill's lane: with the normal work while claims wait on the pool and it is short of Ready members, else last. */
  private refillPriority(poolKey: string): 'normal' | 'background' {
    return this.opts.claimPressure?.membersWanted(poolKey) ? 'normal' : 'background';
  }

  /** Whether pool `key`'s refill waits for its claims now (a new claim may end the wait: more claims than Ready members). */
  public isHeldForClaims(key: string): boolean {
    return this.heldForClaims.has(key);
  }

  /** The pools whose refill waits for claims, forgotten as they are returned (to be woken when none waits). */
  public takeHeldForClaims(): string[] {
    const keys = [...this.heldForClaims];
    this.heldForClaims.clear();
    return keys;
  }

  /** Settle the member writes from the Sandbox informer's events (`sandboxes` is its cache). */
  public follow(informer: Informer<Sandbox>): void {
    this.writes.follow(informer, keyOf);
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const cached = this.opts.pools.get(namespace, name);
    if (!cached) {
      this.forget(key);
      return;
    }
    if (cached.metadata.deletionTimestamp) return;
    const uid = cached.metadata.uid ?? '';
    // A namesake (deleted and created again) starts afresh, as a new pool.
    if (this.memory.get(key)?.uid !== uid) this.forget(key);
    const memory = this.memory.get(key) ?? { uid, state: INITIAL_POOL_STATE };
    this.memory.set(key, memory);
    const { sandboxes, flags } = this.opts;
    const now = this.now();
    const at = this.elapsed();
    const pool = this.statusWrites.current(key, cached, at);
    const templateName = pool.spec.sandboxTemplateRef.name;
    const template = this.opts.templates.get(namespace, templateName);
    const policy = this.opts.networkPolicies.get(namespace, networkPolicyNameFor(templateName));
    const gate = templateGate(namespace, templateName, template, policy, this.opts.routerPodLabels);
    const candidates = sandboxes.byIndex(POOL_LABEL_INDEX, `${namespace}/${NameHash.of(name)}`);
    const pending = pendingMemberWrites(this.writes, uid, sandboxes, at);
    memory.notReadySince = notReadySeen(candidates, memory.notReadySince, at);
    const seen = memory.notReadySince;
    const members = classifyMembers(pool, template, candidates, now, flags, pending.deletes, (sandbox) => {
      const since = seen.get(sandbox.metadata.uid ?? '');
      return since === undefined ? undefined : at - since;
    });
    // Short: at the low-water mark, or more claims wait than Ready members are left (the refill's hold ends then too).
    const waiting = this.opts.claimPressure?.waitingFor(key) ?? 0;
    this.opts.claimPressure?.poolShort(key, isPoolShort(members.ready.length, desiredReplicas(pool), waiting));
    const plan = planPool({
      pool,
      template,
      gate,
      members,
      pendingCreates: pending.creates,
      // At least 1 while the pool is claimed from at all: claims that took a member but whose status
      // is still to come, and a pool whose claims were served moments ago (the pressure's linger).
      claimsWaiting: this.opts.claimPressure?.busyOn(key) ? Math.max(1, waiting) : 0,
      ...this.newestClaim(pool),
      state: memory.state,
      flags,
      now,
      elapsed: at,
    });
    memory.state = plan.state;
    if (plan.heldForClaims) this.heldForClaims.add(key);
    else this.heldForClaims.delete(key);
    // Refill is background work: a claim waiting for its write goes first (runtime/priority-gate.ts).
    // Refill that waiting claims need (the pool short, above) goes with the normal work, not
    // behind Events, or under a steady load the pool never catches up; the rest is background.
    const write = { fieldManager: POOL_FIELD_MANAGER, priority: this.refillPriority(key) };
    const { client } = this.opts;

    // Adoption and label fixes are conditional on the cached resourceVersion: a claim that took the
    // member meanwhile wins, and the 409 just means the next pass sees the new state.
    await Promise.all([
      ...plan.adopt.map((s) => this.conditional(client.patch(RESOURCES.sandboxes, namespace, s.metadata.name, 'merge', orphanAdoptionPatch(pool, s), write))),
      ...plan.labelLaunchType.map((s) => this.conditional(client.patch(RESOURCES.sandboxes, namespace, s.metadata.name, 'merge', launchTypeLabelPatch(s), write))),
    ]);

    let offset = 0;
    for (const wave of plan.deleteWaves) {
      const batch = plan.deletes.slice(offset, offset + wave);
      offset += wave;
      const results = await Promise.all(batch.map((d) => this.deleteMember(uid, d)));
      if (results.includes(false)) break;
    }

    if (template && plan.creates > 0) {
      const body = buildPoolSandbox(pool, template, flags);
      for (const wave of plan.createWaves) {
        const results = await Promise.all(Array.from({ length: wave }, () => this.createMember(pool, body)));
        if (results.includes(false)) {
          // Slow start: a systematic failure (quota, webhook) costs one wave, not the whole deficit.
          this.log.warn({ pool: key }, 'a member create failed; the rest of this pass is skipped');
          break;
        }
      }
    }

    for (const event of plan.events) {
      client.event(pool, event.type, event.reason, event.action, event.message);
      if (event.type === 'Warning' && !gate.ok && event.reason === gate.reason) this.log.warn({ pool: key, reason: gate.reason }, gate.message);
    }
    if (plan.statusChanged) {
      try {
        // No resourceVersion: the status is this controller's alone, and recomputed every pass.
        const result = await client.patch<SandboxWarmPool>(RESOURCES.warmPools, namespace, name, 'merge', { status: plan.status }, { ...write, subresource: 'status' });
        this.statusWrites.wrote(key, cached, result, this.elapsed());
      } catch (error) {
        if (!(error instanceof ApiError && error.notFound)) throw error;
      }
    }
    // Also when a member write (this pass's too) expires, in case its event was lost: a quiet pool
    // may see no other event to bring it back. At least 1 ms: a requeue of 0 means none.
    const expireAtMs = memberWritesExpireAtMs(this.writes, uid);
    const requeues = [plan.requeueAfterMs, expireAtMs === undefined ? undefined : Math.max(1, expireAtMs - this.elapsed())];
    const requeueAfterMs = Math.min(...requeues.filter((ms): ms is number => ms !== undefined));
    return Number.isFinite(requeueAfterMs) ? { requeueAfterMs } : undefined;
  }

  /** The newest claim of a pool with scaleToZeroAfterSeconds, for its idle clock; other pools do not walk their claims. */
  private newestClaim(pool: SandboxWarmPool): { newestClaimMs?: number } {
    if (!this.opts.claims || scaleToZeroPeriodMs(pool) === undefined) return {};
    let newest: number | undefined;
    for (const claim of this.opts.claims.byIndex(CLAIMS_BY_POOL_INDEX, keyOf(pool))) {
      const created = timeMs(claim.metadata.creationTimestamp);
      if (created !== undefined && (newest === undefined || created > newest)) newest = created;
    }
    return newest === undefined ? {} : { newestClaimMs: newest };
  }

  /** The pool is gone or replaced: forget its pacing, member writes and status writes. */
  private forget(key: string): void {
    this.statusWrites.forget(key);
    this.opts.claimPressure?.poolShort(key, false);
    const memory = this.memory.get(key);
    if (!memory) return;
    this.memory.delete(key);
    forgetMemberWrites(this.writes, memory.uid, this.opts.sandboxes, this.elapsed());
  }

  /** A conditional write whose 409/404 only means the cache was behind; anything else fails the pass. */
  private async conditional(write: Promise<unknown>): Promise<void> {
    try {
      await write;
    } catch (error) {
      if (error instanceof ApiError && (error.conflict || error.notFound)) return;
      throw error;
    }
  }

  /** Delete one member; false when the delete failed for a reason other than the member being gone or changed. */
  private async deleteMember(poolUid: string, d: MemberDelete): Promise<boolean> {
    const namespace = d.sandbox.metadata.namespace;
    const key = keyOf(d.sandbox);
    // Recorded first: the delete's watch event can arrive before the response.
    this.writes.expect(key, { pool: poolUid, deletedUid: d.uid }, this.elapsed());
    try {
      const preconditions = { uid: d.uid, resourceVersion: d.resourceVersion, priority: 'background' } as const;
      await this.opts.client.delete(RESOURCES.sandboxes, namespace, d.sandbox.metadata.name, preconditions);
      this.log.debug({ sandbox: `${namespace}/${d.sandbox.metadata.name}`, cause: d.cause }, 'pool member deleted');
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return true;
      // The member stays: the pass that sees it next decides again.
      this.writes.forget(key);
      // 409: the member changed (a claim adopted it): it is not ours to delete any more.
      if (error instanceof ApiError && error.conflict) return true;
      this.log.error({ sandbox: `${namespace}/${d.sandbox.metadata.name}`, err: error }, 'pool member delete failed');
      return false;
    }
  }

  private async createMember(pool: SandboxWarmPool, body: Sandbox): Promise<boolean> {
    const namespace = pool.metadata.namespace;
    const { sandboxes } = this.opts;
    for (let attempt = 1; ; attempt++) {
      const member = withMemberName(body, memberName(pool));
      const key = keyOf(member);
      // Recorded first, like a delete: the member's watch event can arrive before the response.
      this.writes.expect(key, { pool: pool.metadata.uid ?? '' }, this.elapsed());
      try {
        await this.opts.client.create<Sandbox>(RESOURCES.sandboxes, namespace, member,
          { fieldManager: POOL_FIELD_MANAGER, priority: this.refillPriority(keyOf(pool)) });
        restartMemberWrite(this.writes, key, sandboxes, this.elapsed());
        this.opts.creations?.inc({ namespace: namespace ?? '', warmpool: pool.metadata.name });
        return true;
      } catch (error) {
        // A 4xx means the object was not created; anything else (timeout, 5xx) may have created it.
        const definite = error instanceof ApiError && error.statusCode >= 400 && error.statusCode < 500;
        if (definite) this.writes.forget(key);
        else restartMemberWrite(this.writes, key, sandboxes, this.elapsed());
        // A name collision created nothing: pick another name (as generateName callers do).
        if (error instanceof ApiError && error.alreadyExists && attempt < MAX_NAME_ATTEMPTS) continue;
        if (error instanceof ApiError && error.namespaceTerminating) this.log.debug({ namespace }, 'namespace is being deleted; no pool member created');
        else this.log.error({ namespace, err: error }, 'pool member create failed');
        return false;
      }
    }
  }
}

/**
 * Since when (on the elapsed clock) this process has seen each of `sandboxes` not Ready: the time
 * already noted in `before` for those still not Ready, `at` for those newly so; Ready ones and
 * those gone drop out.
 */
function notReadySeen(sandboxes: readonly Sandbox[], before: ReadonlyMap<string, number> | undefined, at: number): Map<string, number> {
  const seen = new Map<string, number>();
  for (const sandbox of sandboxes) {
    const uid = sandbox.metadata.uid ?? '';
    if (!isReady(sandbox)) seen.set(uid, before?.get(uid) ?? at);
  }
  return seen;
}
