/**
 * The thin I/O half of the SandboxWarmPool controller: classify the pool's members from the cache,
 * plan the pass (plan.ts), perform it, and keep the per-pool memory (expectations, pacing state)
 * that the plan needs. Writes in order: adoptions and label fixes, deletes, creates (slow-start
 * waves), then the status if it changed.
 */
import { NameHash } from '../../../../src/api/name-hash';
import { ApiError, splitKey, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';
import { POOL_LABEL_INDEX, UID_INDEX } from '../extension-informers';
import { classifyMembers } from './classify';
import { buildPoolSandbox, launchTypeLabelPatch, memberName, orphanAdoptionPatch, withMemberName } from './desired';
import { PoolExpectations } from './expectations';
import { INITIAL_POOL_STATE, planPool, type MemberDelete, type PoolState } from './plan';
import { type PoolFlags } from './types';
import { controllerRefOf, RESOURCES, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../model';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';

export const POOL_FIELD_MANAGER = 'sandboxwarmpool-controller';

/** Names are drawn from 27^5 suffixes; a third collision in a row means something else is wrong. */
const MAX_NAME_ATTEMPTS = 3;

/** What a pool remembers between passes, in memory; dropped with the pool (by UID). */
interface PoolMemory {
  readonly expectations: PoolExpectations;
  state: PoolState;
}

export interface PoolReconcilerOptions {
  readonly client: KubeClient;
  readonly pools: Store<SandboxWarmPool>;
  readonly templates: Store<SandboxTemplate>;
  /** Must carry POOL_LABEL_INDEX and UID_INDEX. */
  readonly sandboxes: Store<Sandbox>;
  readonly flags: PoolFlags;
  readonly now?: () => number;
  readonly log?: Logger;
  /** Expectation expiry; tests shorten it. */
  readonly expectationsTimeoutMs?: number;
}

export class WarmPoolReconciler implements Reconciler {
  public readonly name = 'sandboxwarmpool';
  private readonly memory = new Map<string, PoolMemory>();
  private readonly now: () => number;
  private readonly log: Logger;

  public constructor(private readonly opts: PoolReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? SILENT_LOGGER;
  }

  /**
   * An informer event showed `sandbox`: settle what the pool that controls it expected. Called for
   * the old and the new object of an update, so a member a claim just took still settles its
   * pool's create expectation.
   */
  public observe(sandbox: Sandbox, deleted: boolean): void {
    const ownerUid = controllerRefOf(sandbox)?.uid;
    const memory = ownerUid ? this.memory.get(ownerUid) : undefined;
    memory?.expectations.observe(sandbox.metadata.uid ?? '', deleted);
  }

  /** The pool with `uid` is gone: forget its expectations and pacing. */
  public forget(uid: string | undefined): void {
    if (uid) this.memory.delete(uid);
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const pool = this.opts.pools.get(namespace, name);
    if (!pool || pool.metadata.deletionTimestamp) return;
    const uid = pool.metadata.uid ?? '';
    let memory = this.memory.get(uid);
    if (!memory) {
      memory = { expectations: new PoolExpectations(this.opts.expectationsTimeoutMs), state: INITIAL_POOL_STATE };
      this.memory.set(uid, memory);
    }
    const { expectations } = memory;
    const { sandboxes, flags } = this.opts;
    const now = this.now();
    const template = this.opts.templates.get(namespace, pool.spec.sandboxTemplateRef.name);
    const candidates = sandboxes.byIndex(POOL_LABEL_INDEX, `${namespace}/${NameHash.of(name)}`);
    const inCache = (id: string) => sandboxes.byIndex(UID_INDEX, id).length > 0;
    const pendingDeletes = expectations.pendingDeletes(now, inCache);
    const members = classifyMembers(pool, template, candidates, now, flags, pendingDeletes);
    const plan = planPool({
      pool,
      template,
      members,
      pendingCreates: expectations.pendingCreates(now, inCache),
      expectationsExpireAtMs: expectations.nextExpiryAtMs(),
      state: memory.state,
      flags,
      now,
    });
    memory.state = plan.state;
    // Refill is background work: a claim waiting for its write goes first (runtime/priority-gate.ts).
    const write = { fieldManager: POOL_FIELD_MANAGER, priority: 'background' } as const;
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
      const results = await Promise.all(batch.map((d) => this.deleteMember(expectations, d, namespace)));
      if (results.includes(false)) break;
    }

    if (template && plan.creates > 0) {
      const body = buildPoolSandbox(pool, template, flags);
      for (const wave of plan.createWaves) {
        const tokens = expectations.expectCreates(wave, this.now());
        const results = await Promise.all(tokens.map((token) => this.createMember(expectations, token, pool, body)));
        if (results.includes(false)) {
          // Slow start: a systematic failure (quota, webhook) costs one wave, not the whole deficit.
          this.log.warn({ pool: key }, 'a member create failed; the rest of this pass is skipped');
          break;
        }
      }
    }

    for (const event of plan.events) client.event(pool, event.type, event.reason, event.action, event.message);
    if (plan.statusChanged) {
      try {
        // No resourceVersion: the status is this controller's alone, and recomputed every pass.
        await client.patch(RESOURCES.warmPools, namespace, name, 'merge', { status: plan.status }, { ...write, subresource: 'status' });
      } catch (error) {
        if (!(error instanceof ApiError && error.notFound)) throw error;
      }
    }
    return plan.requeueAfterMs === undefined ? undefined : { requeueAfterMs: plan.requeueAfterMs };
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
  private async deleteMember(expectations: PoolExpectations, d: MemberDelete, namespace: string): Promise<boolean> {
    // Recorded first: the delete's watch event can arrive before the response.
    expectations.expectDelete(d.uid, this.now());
    try {
      const preconditions = { uid: d.uid, resourceVersion: d.resourceVersion, priority: 'background' } as const;
      await this.opts.client.delete(RESOURCES.sandboxes, namespace, d.sandbox.metadata.name, preconditions);
      this.log.debug({ sandbox: `${namespace}/${d.sandbox.metadata.name}`, cause: d.cause }, 'pool member deleted');
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return true;
      expectations.deleteFailed(d.uid);
      // 409: the member changed (a claim adopted it): it is not ours to delete any more.
      if (error instanceof ApiError && error.conflict) return true;
      this.log.error({ sandbox: `${namespace}/${d.sandbox.metadata.name}`, err: error }, 'pool member delete failed');
      return false;
    }
  }

  private async createMember(expectations: PoolExpectations, token: number, pool: SandboxWarmPool, body: Sandbox): Promise<boolean> {
    const namespace = pool.metadata.namespace;
    for (let attempt = 1; ; attempt++) {
      try {
        const member = withMemberName(body, memberName(pool));
        const created = await this.opts.client.create<Sandbox>(RESOURCES.sandboxes, namespace, member, { fieldManager: POOL_FIELD_MANAGER, priority: 'background' });
        expectations.createSucceeded(token, created.metadata.uid ?? '', this.now());
        return true;
      } catch (error) {
        // A name collision created nothing: pick another name (as generateName callers do).
        if (error instanceof ApiError && error.alreadyExists && attempt < MAX_NAME_ATTEMPTS) continue;
        // A 4xx means the object was not created; anything else (timeout, 5xx) may have created it.
        const definite = error instanceof ApiError && error.statusCode >= 400 && error.statusCode < 500;
        expectations.createFailed(token, definite, this.now());
        this.log.error({ namespace, err: error }, 'pool member create failed');
        return false;
      }
    }
  }
}
