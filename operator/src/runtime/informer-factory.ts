/**
 * Shared informers: one cache and one watch per resource type however many controllers read it
 * (client-go's SharedInformerFactory). The first request fixes the scope (namespace, selectors,
 * transform); later requests must agree, and may add indexes. When one informer gets through to
 * the API server again after failures, every other informer's backoff is cut short: they all
 * share the one server, so after a restart of kube-apiserver the caches catch up together instead
 * of each waiting out its own backoff.
 */
import { Clock, MONOTONIC_CLOCK } from './clock';
import { InformerMetrics, InformerOptions, SharedInformer } from './informer';
import { Logger, SILENT_LOGGER } from './log';
import { IndexFunc, KubeClient, KubeObject, ResourceType } from './types';

export interface InformerRequest<T extends KubeObject> {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Slim objects before caching (applied after managedFields are dropped). */
  readonly transform?: (obj: T) => T;
  readonly indexes?: { readonly [name: string]: IndexFunc<T> };
}

export interface InformerFactoryOptions {
  readonly clock?: Clock;
  readonly log?: Logger;
  /** Metrics hooks for the informer of one resource (label value such as `pods` or `sandboxes.agents.x-k8s.io`). */
  readonly metricsFor?: (resource: string) => InformerMetrics;
  /** Overrides for every informer (timeouts, backoff); tests shorten them. */
  readonly informerDefaults?: Partial<InformerOptions<KubeObject>>;
}

/** Drops metadata.managedFields: often half an object's size, and no controller reads it. */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

export function resourceLabel(type: ResourceType): string {
  return type.group ? `${type.resource}.${type.group}` : type.resource;
}

interface Entry {
  readonly informer: SharedInformer<any>;
  readonly request: InformerRequest<any>;
}

export class InformerFactory {
  private readonly entries = new Map<string, Entry>();
  private started = false;

  public constructor(private readonly client: KubeClient, private readonly options: InformerFactoryOptions = {}) {}

  /** The shared informer of `type`, created on first request; started at once if the factory runs. */
  public forResource<T extends KubeObject>(type: ResourceType, request: InformerRequest<T> = {}): SharedInformer<T> {
    const id = `${type.group}/${type.version}/${type.resource}`;
    const existing = this.entries.get(id);
    if (existing) {
      this.checkCompatible(id, existing.request, request);
      for (const [name, fn] of Object.entries(request.indexes ?? {})) {
        if (!existing.informer.hasIndex(name)) existing.informer.addIndex(name, fn);
      }
      return existing.informer as SharedInformer<T>;
    }
    const custom = request.transform;
    const label = resourceLabel(type);
    const informer = new SharedInformer<T>(this.client, type, {
      ...(this.options.informerDefaults as Partial<InformerOptions<T>>),
      namespace: request.namespace,
      labelSelector: request.labelSelector,
      fieldSelector: request.fieldSelector,
      indexes: request.indexes,
      transform: custom ? (obj) => custom(stripManagedFields(obj)) : stripManagedFields,
      clock: this.options.clock ?? MONOTONIC_CLOCK,
      log: this.options.log ?? SILENT_LOGGER,
      metrics: this.options.metricsFor?.(label),
      onRecovered: () => {
        for (const other of this.informers) other.wake();
      },
      // The watches share the API server connection path: a stall of one means the others' are
      // likely frozen too, each otherwise found only at its own deadline (up to its 36 s timeout plus grace).
      onStalled: () => {
        for (const other of this.informers) if ((other as unknown) !== informer) other.restartWatch();
      },
    });
    this.entries.set(id, { informer, request });
    if (this.started) informer.start();
    return informer;
  }

  public get informers(): SharedInformer<KubeObject>[] {
    return [...this.entries.values()].map((e) => e.informer);
  }

  /** True once every informer requested so far has listed once. */
  public get hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  /**
   * Informers whose lists and watches have failed for at least `thresholdMs` without a success in
   * between, with how long (for readiness: the caches may be that stale).
   */
  public disconnected(thresholdMs: number): Array<{ resource: string; forMs: number }> {
    return this.informers
      .map((i) => ({ resource: resourceLabel(i.type), forMs: i.disconnectedForMs }))
      .filter((d) => d.forMs > 0 && d.forMs >= thresholdMs);
  }

  /** Resolves once every informer requested so far has listed once. */
  public synced(): Promise<void> {
    return Promise.all(this.informers.map((i) => i.synced)).then(() => undefined);
  }

  public start(): void {
    this.started = true;
    for (const informer of this.informers) informer.start();
  }

  public stop(): void {
    this.started = false;
    for (const informer of this.informers) informer.stop();
  }

  private checkCompatible(id: string, first: InformerRequest<any>, next: InformerRequest<any>): void {
    for (const field of ['namespace', 'labelSelector', 'fieldSelector', 'transform'] as const) {
      if (next[field] !== undefined && next[field] !== first[field]) {
        throw new Error(`the shared informer for ${id} was created with a different ${field}; `
          + 'controllers sharing a resource type must request the same scope (or leave it unset)');
      }
    }
  }
}
