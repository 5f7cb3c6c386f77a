/**
 * The thin I/O half of the Sandbox controller: read the caches, ask plan.ts, execute the plan
 * with as few writes as the plan allows, and map API errors to requeues or status. What is
 * remembered between passes only covers for a lagging cache (our own writes it has not shown yet)
 * and paces progress statuses, so a restarted operator converges from the API objects alone.
 */
import { ConditionType, SandboxReadyReason } from '#api/conditions';
import { KINDS } from '#api/groups';
import { SandboxAnnotations } from '#api/labels';
import { droppedReservedKeys, FIELD_MANAGER, pvcNameOf, type ChildKind } from './desired';
import { IDLE_SUSPENDED } from './idle';
import { planSandbox, isDeferrable, statusAfterFailure, type Action, type Observed, type Plan } from './plan';
import { isProgressOnly, statusPatch, type Problem } from './status';
import {
  applyMergePatch, CONTROLLER_UID_INDEX, controllerRefOf, isReady, type PersistentVolumeClaim, type Pod, RESOURCES, type Sandbox, type Service,
} from '../../model';
import { RACE_RETRY_MS } from '../../runtime/controller';
import { cacheShows, decideOn, Expectations, OwnWrites, type UnseenWrite } from '../../runtime/expectations';
import { SILENT_LOGGER } from '../../runtime/log';
import type { Logger } from '../../runtime/log';
import {
  ApiError, splitKey, type Informer, type KubeClient, type KubeObject, type Reconciler, type ReconcileResult, type RequestPriority, type Store,
} from '../../runtime/types';
import { CLAIM_PRIORITY, type Deferral } from '../claims-first';


export interface SandboxReconcilerOptions {
  readonly client: KubeClient;
  readonly sandboxes: Store<Sandbox>;
  /** Must carry the CONTROLLER_UID_INDEX index. */
  readonly pods: Store<Pod>;
  readonly services: Store<Service>;
  readonly pvcs: Store<PersistentVolumeClaim>;
  /** For `status.serviceFQDN` (`--cluster-domain`). */
  readonly clusterDomain: string;
  /** Labels of the router Pods (`--router-pod-labels`); a Sandbox asking for all of them is refused. @default app=sandbox-router */
  readonly routerPodLabels?: { readonly [key: string]: string };
  /**
   * `--sandbox-progress-status-window`: how long a not-yet-Ready progress status may wait before
   * it is written (see isProgressOnly); 0 writes every change at once.
   */
  readonly progressStatusWindowMs?: number;
  /**
   * `--sandbox-warm-member-progress-window`: the window for an unclaimed warm pool member, which
   * no client waits on until it is Ready; 0 uses progressStatusWindowMs.
   */
  readonly warmMemberProgressWindowMs?: number;
  readonly now?: () => number;
  /**
   * The clock of intervals this controller measures itself (how long a write may wait for the cache,
   * how long a progress status is held): monotonic in the process, so a wall-clock step neither
   * ends them at once nor stretches them by the step. @default now
   */
  readonly elapsed?: () => number;
  readonly log?: Logger;
  /**
   * Claims waiting elsewhere: a plan that is bookkeeping only (isDeferrable) waits for them, up to
   * the deferral's bound. @default - nothing is deferred
   */
  readonly deferral?: Deferral;
  /** Whether claims wait on pool `namespace/name` and it is short of Ready members: its new members are written sooner (priorityOf). @default - never */
  readonly membersWanted?: (pool: string) => boolean;
  /** Called once per idle suspension written (the metric). */
  readonly idleSuspended?: (sandbox: Sandbox) => void;
}

const RESOURCE_OF: Record<ChildKind, (typeof RESOURCES)[keyof typeof RESOURCES]> = {
  pod: RESOURCES.pods,
  service: RESOURCES.services,
  pvc: RESOURCES.pvcs,
};
const KIND_NAME: Record<ChildKind, string> = { pod: 'Pod', service: 'Service', pvc: 'PersistentVolumeClaim' };

/** Event reason: podTemplate metadata keys reserved for the controllers were dropped from the Pod. */
export const RESERVED_METADATA_DROPPED = 'ReservedMetadataDropped';

/** How executing a plan ended. */
type Outcome =
  /** `sandboxVersion`: the resourceVersion the Sandbox's own write (when the plan had exactly one) left. */
  | { readonly kind: 'done'; readonly sandboxVersion?: string }
  /** A create found the name taken: the live object, for one re-decision. */
  | { readonly kind: 'exists'; readonly child: ChildKind; readonly object: KubeObject }
  /** A race with another writer or a stale cache; nothing is wrong, look again. */
  | { readonly kind: 'race'; readonly detail: string }
  /** The Sandbox vanished under us. */
  | { readonly kind: 'gone' }
  | { readonly kind: 'failed'; readonly problem: Problem; readonly error: unknown };

/** Thrown after the status says what went wrong, so the work queue retries with backoff. */
export class SandboxReconcileError extends Error {
  public constructor(message: string, public readonly cause?: unknown) {
    super(message);
    this.name = 'SandboxReconcileError';
  }
}

export class SandboxReconciler implements Reconciler {
  public readonly name = 'sandbox';
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly log: Logger;
  /**
   * Child creates and deletes the caches have not shown yet, by `kind/namespace/name`. Without them
   * a Sandbox event arriving between our create call and the child's own watch event (our pod-name
   * annotation patch causes exactly that) would have the pass create the child again, get
   * AlreadyExists and fetch it: two wasted requests per Sandbox under load; and a deleted Pod would
   * be deleted again. Any informer event showing the child ends its entry (see follow).
   */
  private readonly childWrites = new Expectations<UnseenWrite>({ isShown: cacheShows });
  /** Sandbox key -> when a progress status was first held back; the window runs from there. */
  private readonly progressHeldSince = new Map<string, number>();
  /** Our writes to the Sandbox the cache has not shown yet: decided on, so they are not made twice. */
  private readonly written = new OwnWrites<Sandbox>();

  public constructor(private readonly opts: SandboxReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.elapsed = opts.elapsed ?? this.now;
    this.log = opts.log ?? SILENT_LOGGER;
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const cached = this.opts.sandboxes.get(namespace, name);
    // No finalizers: a deleted Sandbox's children go by garbage collection.
    if (!cached || cached.metadata.deletionTimestamp) {
      this.progressHeldSince.delete(key);
      this.written.forget(key);
      this.opts.deferral?.done(key);
      return;
    }
    const sandbox = this.written.current(key, cached, this.elapsed());

    let observed = this.observe(sandbox);
    let plan = planSandbox(observed);
    if (plan.inspectPod !== undefined) {
      // An adoption candidate: the cache keeps no Pod spec, and the spec decides.
      const live = await this.getLive('pod', namespace, plan.inspectPod);
      observed = live ? withLiveChild(observed, 'pod', live) : { ...observed, pods: observed.pods.filter((p) => p.metadata.name !== plan.inspectPod) };
      plan = planSandbox(observed);
      if (plan.inspectPod !== undefined) return { requeueAfterMs: RACE_RETRY_MS };
    }
    // A claimed member's relabel and observedGeneration rewrite give way to waiting claims.
    const bookkeeping = isDeferrable(sandbox, plan);
    const deferred = this.opts.deferral && bookkeeping ? this.opts.deferral.defer(key) : undefined;
    if (deferred?.defer) return { requeueAfterMs: Math.min(deferred.retryAfterMs, plan.requeueAfterMs ?? Infinity) };
    this.opts.deferral?.done(key);
    // Bookkeeping (a claimed Pod's relabel, an observedGeneration rewrite) serves no one waiting:
    // it goes in the background lane, which the API server's latency keeps small (priority-gate.ts).
    const priority = bookkeeping ? 'background' : priorityOf(sandbox, this.opts.membersWanted);
    const created: Array<{ kind: ChildKind; object: KubeObject }> = [];
    let outcome = await this.execute(sandbox, plan.actions, created, priority);
    if (outcome.kind === 'exists') {
      // The cache missed an object we tried to create (label-less, or our own create not yet
      // seen): decide once more with the live object, e.g. adopt it or refuse it, and with what
      // this pass did create, so it is not created twice.
      for (const c of created) observed = withLiveChild(observed, c.kind, c.object);
      observed = withLiveChild(observed, outcome.child, outcome.object);
      plan = planSandbox(observed);
      outcome = await this.execute(sandbox, plan.actions, created, priority);
      if (outcome.kind === 'exists') outcome = { kind: 'race', detail: `${outcome.child} ${outcome.object.metadata.name} still conflicts` };
    }
    if (outcome.kind === 'gone') return;
    // Our own metadata writes (the pod-name annotation) count as seen from now on.
    let after = sandbox;
    if (outcome.kind === 'done') {
      for (const a of plan.actions) if (a.op === 'patch-sandbox') after = applyMergePatch(after, a.patch);
      // The server's version, not the patch's: an idle suspension carries the version it was
      // conditional on, which the write has just replaced.
      if (outcome.sandboxVersion !== undefined) after = { ...after, metadata: { ...after.metadata, resourceVersion: outcome.sandboxVersion } };
      if (after !== sandbox) this.written.wrote(key, cached, after, this.elapsed());
    }
    if (outcome.kind === 'race') {
      this.log.debug({ sandbox: key, detail: outcome.detail }, 'cache race, retrying');
      return { requeueAfterMs: RACE_RETRY_MS };
    }

    let { status, writeStatus } = plan;
    let problem = plan.problem;
    if (outcome.kind === 'failed') {
      problem = outcome.problem;
      ({ status, writeStatus } = statusAfterFailure(observed, plan, problem));
    }
    const { event } = plan;
    if (event && (event.type !== 'Normal' || outcome.kind === 'done')) {
      this.opts.client.event(sandbox, event.type ?? 'Warning', event.reason, event.action ?? 'Reconciling', event.note);
      if (event.reason === IDLE_SUSPENDED) this.opts.idleSuspended?.(sandbox);
    }
    if (writeStatus && outcome.kind === 'done') {
      const holdMs = this.progressHoldMs(key, sandbox, status);
      if (holdMs > 0) return { requeueAfterMs: Math.min(holdMs, plan.requeueAfterMs ?? holdMs) };
    }
    this.progressHeldSince.delete(key);
    if (writeStatus) {
      const result = await this.writeStatus(sandbox, status, priority);
      if (!result) return;
      // The response's resourceVersion tells when the cache has caught up with this write.
      const version = result.metadata?.resourceVersion ?? after.metadata.resourceVersion;
      this.written.wrote(key, cached, { ...after, metadata: { ...after.metadata, resourceVersion: version }, status }, this.elapsed());
    }

    if (problem?.reason === SandboxReadyReason.RECONCILER_ERROR) {
      // Backoff, not a hot loop: the work queue's per-key exponential limiter paces the retries.
      throw new SandboxReconcileError(`sandbox ${key}: ${problem.message}`, outcome.kind === 'failed' ? outcome.error : undefined);
    }
    // InvalidConfiguration and MultiplePods wait for a spec edit or a Pod event; only the
    // shutdownTime timer brings the Sandbox back by itself.
    return plan.requeueAfterMs === undefined ? undefined : { requeueAfterMs: plan.requeueAfterMs };
  }

  /** Settle the expectations about children of `kind` from their informer's events. */
  public follow<T extends KubeObject>(kind: ChildKind, informer: Informer<T>): void {
    this.childWrites.follow(informer, (obj) => childKey(kind, obj.metadata.namespace, obj.metadata.name));
  }

  /**
   * How much longer a progress-only status may wait, starting the window on first sight; 0 means
   * write now (no window, not progress-only, or the window has run out).
   */
  private progressHoldMs(key: string, sandbox: Sandbox, next: NonNullable<Sandbox['status']>): number {
    const windowMs = this.progressWindowMs(sandbox);
    if (windowMs <= 0 || !isProgressOnly(sandbox.status, next)) return 0;
    const now = this.elapsed();
    const since = this.progressHeldSince.get(key) ?? now;
    this.progressHeldSince.set(key, since);
    return Math.max(0, since + windowMs - now);
  }

  /**
   * How long `sandbox`'s progress status may wait. An unclaimed warm member gets the longer window:
   * claims adopt Ready members only, so until it is Ready its status tells no client anything, and
   * a member Ready within the window is refilled with three writes (its create, its Pod's, one status).
   */
  private progressWindowMs(sandbox: Sandbox): number {
    const base = this.opts.progressStatusWindowMs ?? 0;
    const warm = this.opts.warmMemberProgressWindowMs ?? 0;
    return warm > 0 && controllerRefOf(sandbox)?.kind === KINDS.warmPool.kind ? Math.max(base, warm) : base;
  }

  /** Everything planSandbox needs, from the caches and our child writes they have not shown yet. */
  private observe(sandbox: Sandbox): Observed {
    const { namespace = '', name, uid = '' } = sandbox.metadata;
    const nowMs = this.now();
    const podNames = new Set(this.opts.pods.byIndex(CONTROLLER_UID_INDEX, uid).map((pod) => pod.metadata.name));
    podNames.add(sandbox.metadata.annotations?.[SandboxAnnotations.POD_NAME] ?? name).add(name);
    const pods: Pod[] = [];
    for (const podName of podNames) {
      const pod = this.resolve('pod', namespace, podName, this.opts.pods.get(namespace, podName), nowMs);
      if (pod) pods.push(pod);
    }
    const pvcs = new Map<string, PersistentVolumeClaim>();
    for (const vct of sandbox.spec.volumeClaimTemplates ?? []) {
      const pvcName = pvcNameOf(vct, sandbox);
      const pvc = this.resolve('pvc', namespace, pvcName, this.opts.pvcs.get(namespace, pvcName), nowMs);
      if (pvc) pvcs.set(pvc.metadata.name, pvc);
    }
    return {
      sandbox,
      pods,
      service: this.resolve('service', namespace, name, this.opts.services.get(namespace, name), nowMs),
      pvcs,
      nowMs,
      clusterDomain: this.opts.clusterDomain,
      ...(this.opts.routerPodLabels ? { routerPodLabels: this.opts.routerPodLabels } : {}),
    };
  }

  /** The child to decide on: the cached one, unless a write of ours is not in the cache yet. */
  private resolve<T extends KubeObject>(kind: ChildKind, namespace: string, name: string, cached: T | undefined, nowMs: number): T | undefined {
    return decideOn(cached, this.childWrites.pending(childKey(kind, namespace, name), cached, this.elapsed()) as UnseenWrite<T> | undefined, nowMs);
  }

  /**
   * Runs the actions in dependency order: PVCs, then Pod and Service together (independent of each
   * other), then the Sandbox's own writes. Stops at the first stage that fails.
   */
  private async execute(sandbox: Sandbox, actions: readonly Action[], created: Array<{ kind: ChildKind; object: KubeObject }>,
    priority: RequestPriority): Promise<Outcome> {
    const stages = [
      actions.filter((a) => 'kind' in a && a.kind === 'pvc'),
      actions.filter((a) => 'kind' in a && a.kind !== 'pvc'),
      actions.filter((a) => a.op === 'patch-sandbox' || a.op === 'delete-sandbox'),
    ];
    let sandboxVersion: string | undefined;
    for (const stage of stages) {
      const outcomes = await Promise.all(stage.map((a) => this.run(sandbox, a, created, priority)));
      const bad = outcomes.find((o) => o.kind === 'gone') ?? outcomes.find((o) => o.kind === 'failed')
        ?? outcomes.find((o) => o.kind === 'exists') ?? outcomes.find((o) => o.kind === 'race');
      if (bad) return bad;
      // Two writes in flight at once leave versions in an order nobody knows: then none is kept.
      const versions = outcomes.map((o) => (o.kind === 'done' ? o.sandboxVersion : undefined)).filter((v) => v !== undefined);
      if (versions.length > 0) sandboxVersion = stage.length === 1 ? versions[0] : undefined;
    }
    return { kind: 'done', ...(sandboxVersion !== undefined ? { sandboxVersion } : {}) };
  }

  private async run(sandbox: Sandbox, action: Action, created: Array<{ kind: ChildKind; object: KubeObject }>,
    priority: RequestPriority): Promise<Outcome> {
    const { client } = this.opts;
    const ns = sandbox.metadata.namespace;
    const write = { fieldManager: FIELD_MANAGER, priority };
    try {
      switch (action.op) {
        case 'create': {
          const object = await client.create(RESOURCE_OF[action.kind], ns, action.object, write);
          this.childWrites.expect(childKey(action.kind, ns, object.metadata.name), { result: object }, this.elapsed());
          created.push({ kind: action.kind, object });
          if (action.kind === 'pod') this.reportDroppedKeys(sandbox);
          break;
        }
        case 'patch':
          await client.patch(RESOURCE_OF[action.kind], ns, action.name, 'merge', action.patch, write);
          break;
        case 'delete':
          // The uid precondition never deletes a namesake created after our cache saw the object.
          await client.delete(RESOURCE_OF[action.kind], ns, action.name, { uid: action.uid });
          this.deleted(action.kind, ns, action.name, action.uid);
          break;
        case 'patch-sandbox': {
          const result = await client.patch<Sandbox>(RESOURCES.sandboxes, ns, sandbox.metadata.name, 'merge', action.patch, write);
          const sandboxVersion = result?.metadata?.resourceVersion;
          return sandboxVersion === undefined ? { kind: 'done' } : { kind: 'done', sandboxVersion };
        }
        case 'delete-sandbox':
          await client.delete(RESOURCES.sandboxes, ns, sandbox.metadata.name, { uid: action.uid, propagationPolicy: 'Background' });
          this.log.info({ sandbox: `${ns}/${sandbox.metadata.name}` }, 'sandbox expired and deleted (shutdownPolicy Delete)');
          break;
      }
      return { kind: 'done' };
    } catch (error) {
      return this.classify(sandbox, action, error);
    }
  }

  /** Reserved keys in the podTemplate never reach the Pod; say so once, when the Pod is created. */
  private reportDroppedKeys(sandbox: Sandbox): void {
    const dropped = droppedReservedKeys(sandbox);
    if (dropped.length === 0) return;
    this.opts.client.event(sandbox, 'Warning', RESERVED_METADATA_DROPPED, 'CreatingPod',
      `spec.podTemplate.metadata keys reserved for the agent-sandbox controllers were not copied to the Pod: ${dropped.join(', ')}; remove them from the Sandbox (or its template)`);
  }

  private async classify(sandbox: Sandbox, action: Action, error: unknown): Promise<Outcome> {
    const sandboxWrite = action.op === 'patch-sandbox' || action.op === 'delete-sandbox';
    const what = sandboxWrite ? `Sandbox "${sandbox.metadata.name}"` : `${KIND_NAME[action.kind]} "${action.op === 'create' ? action.object.metadata.name : action.name}"`;
    if (!(error instanceof ApiError)) {
      return { kind: 'failed', problem: { reason: SandboxReadyReason.RECONCILER_ERROR, message: `${what}: ${String(error)}`, podStep: isPodStep(action) }, error };
    }
    if (error.notFound) {
      // A delete of something already gone did its job; a vanished Sandbox ends the pass.
      if (action.op === 'delete') {
        this.deleted(action.kind, sandbox.metadata.namespace, action.name, action.uid);
        return { kind: 'done' };
      }
      if (sandboxWrite) return action.op === 'delete-sandbox' ? { kind: 'done' } : { kind: 'gone' };
      return { kind: 'race', detail: `${what}: ${error.message}` };
    }
    // The namespace is being deleted: everything in it, this Sandbox too, is about to go.
    if (error.namespaceTerminating) return { kind: 'gone' };
    if (error.alreadyExists && action.op === 'create') {
      const live = await this.getLive(action.kind, sandbox.metadata.namespace, action.object.metadata.name);
      return live ? { kind: 'exists', child: action.kind, object: live } : { kind: 'race', detail: `${what} existed, then vanished` };
    }
    // Conflict: a stale resourceVersion (adoption) or uid precondition (delete). Both mean the
    // cache is behind the server; the object's watch event is on its way.
    if (error.conflict || error.statusCode === 409) return { kind: 'race', detail: `${what}: ${error.message}` };
    if (error.invalid) {
      return {
        kind: 'failed',
        problem: { reason: SandboxReadyReason.INVALID_CONFIGURATION, message: `the API server rejected ${what}: ${error.message}`, podStep: isPodStep(action) },
        error,
      };
    }
    return { kind: 'failed', problem: { reason: SandboxReadyReason.RECONCILER_ERROR, message: `${what}: ${error.message}`, podStep: isPodStep(action) }, error };
  }

  /** Our delete of the child was accepted, or found it gone: no pass deletes it again until the cache shows that. */
  private deleted(kind: ChildKind, namespace: string | undefined, name: string, uid: string): void {
    this.childWrites.expect(childKey(kind, namespace, name), { deletedUid: uid }, this.elapsed());
  }

  private async getLive(kind: ChildKind, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    try {
      return await this.opts.client.get(RESOURCE_OF[kind], namespace, name);
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /** Merge patch on /status, without a resourceVersion: this controller is its only writer. Undefined when the Sandbox is gone. */
  private async writeStatus(sandbox: Sandbox, status: NonNullable<Sandbox['status']>, priority: RequestPriority): Promise<Partial<Sandbox> | undefined> {
    try {
      return await this.opts.client.patch<Sandbox>(RESOURCES.sandboxes, sandbox.metadata.namespace, sandbox.metadata.name, 'merge',
        statusPatch(sandbox.status, status), { fieldManager: FIELD_MANAGER, subresource: 'status', priority });
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return undefined;
      throw error;
    }
  }
}

/**
 * Whose wait a write to this Sandbox's objects ends: a claim's (a claimed Sandbox not Ready yet, a
 * cold start) goes first, a warm-pool member's (refill nobody waits for) last. A member not Ready
 * yet of a pool that claims wait on while it is short of Ready members (`membersWanted` of its
 * `namespace/pool`) is what those claims wait for: it goes with the normal work, not behind Events
 * and idle refill, or under a steady claim load the pool drains and every claim starts cold.
 */
export function priorityOf(sandbox: Sandbox, membersWanted?: (pool: string) => boolean): RequestPriority {
  const owner = controllerRefOf(sandbox);
  if (owner?.kind === KINDS.warmPool.kind) {
    const wanted = !isReady(sandbox) && (membersWanted?.(`${sandbox.metadata.namespace}/${owner.name}`) ?? false);
    return wanted ? 'normal' : 'background';
  }
  return owner?.kind === KINDS.claim.kind && !isReady(sandbox) ? CLAIM_PRIORITY : 'normal';
}

function childKey(kind: ChildKind, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

function isPodStep(action: Action): boolean {
  return 'kind' in action && action.kind === 'pod';
}

/** `observed` with a live object the cache did not have. */
function withLiveChild(observed: Observed, child: ChildKind, object: KubeObject): Observed {
  switch (child) {
    case 'pod':
      return { ...observed, pods: [...observed.pods.filter((p) => p.metadata.name !== object.metadata.name), object as Pod] };
    case 'service':
      return { ...observed, service: object as Service };
    case 'pvc':
      return { ...observed, pvcs: new Map([...observed.pvcs, [object.metadata.name, object]]) };
  }
}
