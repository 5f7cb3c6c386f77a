/**
 * A list-then-watch cache of one resource type, with client-go reflector semantics and the
 * robustness @kubernetes/client-node 1.x's ListWatch lacks (no relist on 410 Gone, no watchdog):
 * - list (paginated), then watch from the list's resourceVersion with bookmarks;
 * - 410 Gone (HTTP or ERROR event) → relist; a relist diffs against the store, so deletes missed
 *   while disconnected still reach onDelete;
 * - any other error or end of stream → reconnect from the last seen resourceVersion after a
 *   jittered exponential backoff (never a hot loop; reset once a watch has run a while). While the
 *   API server cannot be reached at all (connections refused or reset, which cost it nothing) the
 *   backoff stays short, and the first HTTP error after that starts a fresh backoff, so a restarted
 *   API server is seen within seconds; `wake()` ends a backoff early (the factory calls it on every
 *   informer when one of them gets through again);
 * - a watchdog restarts a watch that has been silent too long (the API server sends a bookmark
 *   about every minute, so silence means a dead connection that TCP has not noticed), and a watch
 *   still open well after the server-side timeout it asked for (the server ends every watch then,
 *   with a bookmark 2 s before): a path that stopped carrying bytes without closing is found within
 *   that timeout plus a grace, about as fast as client-go's HTTP/2 health check. The idle
 *   keep-alive connections are dropped then too, since they share the path.
 */
import { Clock, MONOTONIC_CLOCK, TimerHandle, sleep } from './clock';
import { apiErrorFromStatus } from './kube-request';
import { Logger, SILENT_LOGGER } from './log';
import { IndexedStore } from './store';
import {
  ApiError, IndexFunc, Informer, InformerHandlers, KubeClient, KubeObject, ResourceType, WatchEvent, WatchHandle, keyOf,
} from './types';

/** Hooks for informer metrics; all optional. */
export interface InformerMetrics {
  /** A watch ended and will be reopened; reason: closed, gone, stalled, peer-stalled, error, error-event, list-error. */
  watchRestarted?(reason: string): void;
  relisted?(objects: number, ms: number): void;
  /** One watch event applied: transform, cache update and every handler (the queue adds), in ms. */
  eventHandled?(ms: number): void;
}

export interface InformerOptions<T extends KubeObject> {
  /** Watch one namespace; default all namespaces. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Applied to every object before it is stored, e.g. to drop managedFields and save memory. */
  readonly transform?: (obj: T) => T;
  readonly indexes?: { readonly [name: string]: IndexFunc<T> };
  /** @default 500 */
  readonly pageSize?: number;
  /** Server-side watch timeout; each watch draws from [t, 1.2 t) so replicas do not reconnect in step. @default 30 */
  readonly watchTimeoutSeconds?: number;
  /** Restart a watch silent for this long; bookmarks count. @default 150_000 */
  readonly watchdogMs?: number;
  /** Restart a watch still open this long after its server-side timeout: it stalled. @default 10_000 */
  readonly watchEndGraceMs?: number;
  /** @default 500 */
  readonly backoffInitialMs?: number;
  /** @default 30_000 */
  readonly backoffMaxMs?: number;
  /** Longest backoff while the API server cannot be reached at all (no HTTP answer). @default 2_000 */
  readonly unreachableBackoffMaxMs?: number;
  /** Called when a list or watch works again after failures. */
  readonly onRecovered?: () => void;
  /** Called when this informer found its watch stalled (the factory restarts its peers' watches: they share the path). */
  readonly onStalled?: () => void;
  /** A watch that ran this long was healthy: the next failure starts the backoff over. @default 10_000 */
  readonly healthyWatchMs?: number;
  readonly clock?: Clock;
  readonly log?: Logger;
  readonly metrics?: InformerMetrics;
  /** Source of jitter, for deterministic tests. */
  readonly random?: () => number;
}

/** A watch that takes this long to reopen is logged at info. */
export const SLOW_REESTABLISH_MS = 250;
/** A list that takes this long is logged at info. */
export const SLOW_LIST_MS = 1000;

export class SharedInformer<T extends KubeObject> implements Informer<T> {
  public readonly synced: Promise<void>;
  private readonly store: IndexedStore<T>;
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private markSynced!: () => void;
  private hasSyncedFlag = false;
  private resourceVersion?: string;
  private running = false;
  private stopper = new AbortController();
  private currentWatch?: WatchHandle;
  /** Ends the current watch as restartWatch() asks; set while one is open. */
  private restartCurrent?: () => void;
  /** When the current run of failed lists/watches began; undefined while connected. */
  private failingSince?: number;
  /** How the last open watch ended, and the failed attempts since, until the next one opens. */
  private lastWatchEnd?: { atMs: number; reason: string; lastedMs: number; retries: number; lastRetry?: string };
  private wakeUp?: () => void;

  public constructor(private readonly client: KubeClient, public readonly type: ResourceType, private readonly options: InformerOptions<T> = {}) {
    this.clock = options.clock ?? MONOTONIC_CLOCK;
    this.log = (options.log ?? SILENT_LOGGER).child({ informer: type.group ? `${type.resource}.${type.group}` : type.resource });
    this.random = options.random ?? Math.random;
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
    this.store = new IndexedStore<T>((index, key, err) => this.log.error({ err, index, key }, 'an index function threw; the object is not indexed'));
    for (const [name, fn] of Object.entries(options.indexes ?? {})) this.store.addIndex(name, fn);
  }

  public get hasSynced(): boolean {
    return this.hasSyncedFlag;
  }

  /** The resourceVersion the next watch resumes from; undefined means the next step is a relist. */
  public get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  public get size(): number {
    return this.store.size;
  }

  /** How long lists and watches have been failing without a success in between; 0 when connected. */
  public get disconnectedForMs(): number {
    return this.failingSince === undefined ? 0 : this.clock.now() - this.failingSince;
  }

  /** End the current backoff, if any, and try again now. */
  public wake(): void {
    this.wakeUp?.();
  }

  /**
   * End the current watch, if one is open, and reopen it from the last resourceVersion (no relist):
   * a peer's watch on the same connection path stalled, so this one most likely did too, and
   * would otherwise wait for its own deadline, serving a stale cache meanwhile.
   */
  public restartWatch(): void {
    this.restartCurrent?.();
  }

  public get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(namespace, name);
  }

  public list(): T[] {
    return this.store.list();
  }

  public byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }

  public addIndex(name: string, fn: IndexFunc<T>): void {
    this.store.addIndex(name, fn);
  }

  public hasIndex(name: string): boolean {
    return this.store.hasIndex(name);
  }

  /**
   * Handlers added after the first list get onAdd for every cached object (client-go's
   * AddEventHandler), so a late controller sees the same world as an early one.
   */
  public addHandlers(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
    if (this.hasSyncedFlag) for (const obj of this.store.list()) this.call(handlers, 'onAdd', obj);
  }

  public start(): void {
    if (this.running) return;
    this.running = true;
    this.stopper = new AbortController();
    void this.run();
  }

  public stop(): void {
    if (!this.running) return;
    this.running = false;
    this.stopper.abort();
    this.currentWatch?.abort();
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    let failures = 0;
    let unreachable = false;
    while (!signal.aborted) {
      const started = this.clock.now();
      let reason: string;
      try {
        if (this.resourceVersion === undefined) await this.relist(signal);
        if (signal.aborted) break;
        reason = await this.watchOnce();
        unreachable = false;
      } catch (err) {
        if (signal.aborted) break;
        this.failingSince ??= this.clock.now();
        // Refused or reset connections and HTTP errors back off separately: a server that is back
        // but busy starting (503, 429) starts a fresh backoff instead of inheriting the long one.
        const noAnswer = !(err instanceof ApiError);
        if (noAnswer !== unreachable) failures = 0;
        unreachable = noAnswer;
        if (err instanceof ApiError && err.gone) {
          this.resourceVersion = undefined;
          reason = 'gone';
        } else {
          reason = this.resourceVersion === undefined ? 'list-error' : 'error';
        }
        // A 404 on the collection means the type is not served at all, typically a missing CRD.
        const hint = err instanceof ApiError && err.notFound ? `${this.type.resource}.${this.type.group || 'core'}/${this.type.version} is not served; is its CRD installed?` : undefined;
        this.log.warn({ err, reason, hint }, 'list/watch failed; retrying');
      }
      if (signal.aborted) break;
      if (this.lastWatchEnd) {
        this.lastWatchEnd.retries++;
        this.lastWatchEnd.lastRetry = reason;
      } else {
        this.lastWatchEnd = { atMs: this.clock.now(), reason, lastedMs: Math.round(this.clock.now() - started), retries: 0 };
      }
      this.options.metrics?.watchRestarted?.(reason);
      const healthy = this.clock.now() - started >= (this.options.healthyWatchMs ?? 10_000);
      // Restarted for a peer's stall, this watch did not fail: reopen at once, however young it was.
      failures = healthy || reason === 'peer-stalled' ? 0 : failures + 1;
      if (failures > 0) {
        const delay = this.backoff(failures, unreachable);
        this.log.debug({ reason, failures, delayMs: Math.round(delay) }, 'backing off before the next list/watch');
        const woken = new AbortController();
        this.wakeUp = () => woken.abort();
        await sleep(this.clock, delay, signal, woken.signal);
        this.wakeUp = undefined;
      }
    }
  }

  /** A list or a watch got through: the failure run, if any, is over. */
  private connected(): void {
    if (this.failingSince === undefined) return;
    this.log.info({ disconnectedMs: this.clock.now() - this.failingSince }, 'list/watch works again');
    this.failingSince = undefined;
    this.options.onRecovered?.();
  }

  /**
   * A new watch is open. The routine case (the server ended the last one at its timeout, and this
   * one opened at once) is logged at debug; any other end, failed attempts in between, or a reopen
   * that took SLOW_REESTABLISH_MS or more, at info: while it lasts, the cache sees no change.
   */
  private reestablished(): void {
    const end = this.lastWatchEnd;
    if (!end) return;
    this.lastWatchEnd = undefined;
    const reopenMs = Math.round(this.clock.now() - end.atMs);
    const retried = end.retries > 0 ? { retries: end.retries, lastRetry: end.lastRetry } : {};
    const fields = { reason: end.reason, lastedMs: end.lastedMs, reopenMs, ...retried };
    if (end.reason !== 'closed' || end.retries > 0 || reopenMs >= SLOW_REESTABLISH_MS) this.log.info(fields, 'watch re-established');
    else this.log.debug(fields, 'watch re-established');
  }

  /** Jittered exponential backoff: half fixed, half random, so replicas spread out. */
  private backoff(failures: number, unreachable: boolean): number {
    const initial = this.options.backoffInitialMs ?? 500;
    const httpMax = this.options.backoffMaxMs ?? 30_000;
    const max = unreachable ? Math.min(this.options.unreachableBackoffMaxMs ?? 2_000, httpMax) : httpMax;
    const delay = Math.min(max, initial * 2 ** Math.min(failures - 1, 30));
    return delay / 2 + (this.random() * delay) / 2;
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const started = this.clock.now();
    const { namespace, labelSelector, fieldSelector } = this.options;
    const items: T[] = [];
    let resourceVersion = '';
    let next: string | undefined;
    do {
      let page;
      try {
        page = await this.client.list<T>(this.type, namespace, { labelSelector, fieldSelector, limit: this.options.pageSize ?? 500, continue: next });
      } catch (err) {
        // An expired continue token (the list took longer than etcd keeps history): one full list.
        if (!(err instanceof ApiError && err.gone && next)) throw err;
        this.log.info('continue token expired during a paginated list; listing everything at once');
        page = await this.client.list<T>(this.type, namespace, { labelSelector, fieldSelector });
        items.length = 0;
      }
      if (signal.aborted) return;
      const kind = typeof (page as any).kind === 'string' ? (page as any).kind.replace(/List$/, '') : undefined;
      const apiVersion = (page as any).apiVersion as string | undefined;
      for (const item of page.items) {
        // List items carry no apiVersion/kind for built-in types; watch events do. Make them agree.
        items.push(this.transform({ apiVersion, kind, ...item }));
      }
      resourceVersion = page.metadata.resourceVersion;
      next = page.metadata.continue || undefined;
    } while (next);
    this.connected();
    this.replace(items, resourceVersion);
    this.options.metrics?.relisted?.(items.length, this.clock.now() - started);
    const ms = Math.round(this.clock.now() - started);
    // A long list holds back every event of the type (and a relist replaces the whole cache).
    if (ms >= SLOW_LIST_MS) this.log.info({ objects: items.length, resourceVersion, ms }, 'listed');
    else this.log.debug({ objects: items.length, resourceVersion, ms }, 'listed');
  }

  /** Make the store equal the list, telling handlers what changed, including missed deletes. */
  private replace(items: T[], resourceVersion: string): void {
    const seen = new Set<string>();
    for (const obj of items) {
      seen.add(keyOf(obj));
      const old = this.store.put(obj);
      if (!old) this.dispatch('onAdd', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.dispatch('onUpdate', old, obj);
    }
    for (const key of [...this.store.keys()]) {
      if (seen.has(key)) continue;
      const gone = this.store.remove(key)!;
      this.dispatch('onDelete', gone);
    }
    this.resourceVersion = resourceVersion;
    if (!this.hasSyncedFlag) {
      this.hasSyncedFlag = true;
      this.markSynced();
    }
  }

  /** One watch; resolves with why it ended, rejects on HTTP/transport errors. */
  private watchOnce(): Promise<string> {
    const limit = this.options.watchdogMs ?? 150_000;
    const baseTimeout = this.options.watchTimeoutSeconds ?? 30;
    const timeoutSeconds = Math.floor(baseTimeout * (1 + this.random() * 0.2));
    let lastActivity = this.clock.now();
    // The server ends the watch after timeoutSeconds; still open well after that, it stalled.
    const endBy = lastActivity + timeoutSeconds * 1000 + (this.options.watchEndGraceMs ?? 10_000);
    let outcome: string | undefined;
    let watchdog: TimerHandle | undefined;
    const handle = this.client.watch<T>(this.type, this.options.namespace, {
      labelSelector: this.options.labelSelector,
      fieldSelector: this.options.fieldSelector,
      resourceVersion: this.resourceVersion!,
      timeoutSeconds,
      onOpen: () => {
        this.connected();
        this.reestablished();
      },
    }, (event) => {
      lastActivity = this.clock.now();
      const end = this.apply(event);
      this.options.metrics?.eventHandled?.(this.clock.now() - lastActivity);
      if (end) {
        outcome = end;
        handle.abort();
      }
    });
    this.currentWatch = handle;
    this.restartCurrent = () => {
      outcome ??= 'peer-stalled';
      handle.abort();
    };
    // One timer per watch, re-armed only when it fires: per-event timers would cost too much.
    const check = () => {
      const now = this.clock.now();
      const silentFor = now - lastActivity;
      if (silentFor >= limit || now >= endBy) {
        outcome = 'stalled';
        this.log.warn({ silentMs: silentFor, timeoutSeconds }, silentFor >= limit
          ? 'watch silent for too long; restarting it'
          : 'watch still open past its server-side timeout; restarting it');
        handle.abort();
        this.client.dropIdleConnections?.();
        this.options.onStalled?.();
      } else {
        watchdog = this.clock.setTimeout(check, Math.min(limit - silentFor, endBy - now));
      }
    };
    watchdog = this.clock.setTimeout(check, Math.min(limit, endBy - lastActivity));
    return handle.done.then(() => outcome ?? 'closed').finally(() => {
      this.clock.clearTimeout(watchdog);
      if (this.currentWatch === handle) {
        this.currentWatch = undefined;
        this.restartCurrent = undefined;
      }
    });
  }

  /** Apply one event; returns a reason when the watch must end. */
  private apply(event: WatchEvent<T>): string | undefined {
    if (event.type === 'ERROR') {
      const err = apiErrorFromStatus(event.object, 'watch');
      if (err.gone) {
        this.resourceVersion = undefined;
        this.log.info({ message: err.message }, 'watch expired (410 Gone); relisting');
        return 'gone';
      }
      this.log.warn({ err }, 'watch ERROR event; reconnecting');
      return 'error-event';
    }
    const rv = event.object?.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return undefined;
    }
    const obj = this.transform(event.object);
    if (event.type === 'DELETED') {
      const old = this.store.remove(keyOf(obj));
      this.dispatch('onDelete', old ?? obj);
    } else {
      const old = this.store.put(obj);
      if (old) this.dispatch('onUpdate', old, obj);
      else this.dispatch('onAdd', obj);
    }
    if (rv) this.resourceVersion = rv;
    return undefined;
  }

  /** A throwing transform (a controller bug) costs memory, not the cache: the object is kept whole. */
  private transform(obj: T): T {
    if (!this.options.transform) return obj;
    try {
      return this.options.transform(obj);
    } catch (err) {
      this.log.error({ err, key: keyOf(obj) }, 'the informer transform threw; caching the object untransformed');
      return obj;
    }
  }

  private dispatch(kind: 'onAdd' | 'onDelete', obj: T): void;
  private dispatch(kind: 'onUpdate', oldObj: T, newObj: T): void;
  private dispatch(kind: keyof InformerHandlers<T>, a: T, b?: T): void {
    for (const h of this.handlers) this.call(h, kind, a, b);
  }

  /** A throwing handler is logged, never allowed to break the informer or the other handlers. */
  private call(h: InformerHandlers<T>, kind: keyof InformerHandlers<T>, a: T, b?: T): void {
    try {
      if (kind === 'onUpdate') h.onUpdate?.(a, b!);
      else h[kind]?.(a);
    } catch (err) {
      this.log.error({ err, handler: kind }, 'an informer event handler threw');
    }
  }
}
