/**
 * The seams between the operator's runtime (API client, informers, work queues, leader election)
 * and its controllers. Controllers depend only on these interfaces, so their reconcile logic can
 * be unit-tested with in-memory fakes and run for real against the API server.
 */

/** The parts of an object every controller reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: any;
  status?: any;
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  generateName?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: unknown[];
}

/** A resource type the client can address (core group is ''). */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural, e.g. `pods`, `sandboxes`. */
  readonly resource: string;
  readonly namespaced: boolean;
}

/** How a PATCH body is interpreted. */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

/**
 * How urgent a request is, for the client's waiting line when its in-flight bound is reached
 * (priority-gate.ts): `urgent` for the writes someone is waiting on, `background` for work nobody
 * waits for (Events, catching up), `normal` for the rest. Which writes are which is the callers'
 * business.
 */
export type RequestPriority = 'urgent' | 'normal' | 'background';

export interface WriteOptions {
  /** Place in the client's waiting line. @default 'normal' */
  priority?: RequestPriority;
  /** Field manager recorded by the API server. */
  fieldManager?: string;
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean;
  /** Operate on a subresource such as `status` or `scale`. */
  subresource?: string;
}

export interface DeleteOptions {
  /** Place in the client's waiting line. @default 'normal' */
  priority?: RequestPriority;
  /** Only delete this exact object (guards against deleting a re-created namesake). */
  uid?: string;
  /** Only delete when the object still has this resourceVersion. */
  resourceVersion?: string;
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface ObjectList<T extends KubeObject = KubeObject> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

/** An open watch stream; `done` settles when the stream ends (error or server close). */
export interface WatchHandle {
  readonly done: Promise<void>;
  abort(): void;
}

/**
 * An HTTP error from the API server, with its Status reason (`NotFound`, `Conflict`,
 * `AlreadyExists`, `Invalid`, `Expired`/410 Gone, ...).
 */
export class ApiError extends Error {
  public constructor(
    public readonly statusCode: number,
    public readonly reason: string,
    message: string,
    public readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  public get notFound(): boolean { return this.statusCode === 404; }
  public get conflict(): boolean { return this.statusCode === 409 && this.reason === 'Conflict'; }
  public get alreadyExists(): boolean { return this.statusCode === 409 && this.reason === 'AlreadyExists'; }
  public get gone(): boolean { return this.statusCode === 410; }
  public get invalid(): boolean { return this.statusCode === 422; }
  /** A create refused because the namespace is being deleted (403 with cause NamespaceTerminating). */
  public get namespaceTerminating(): boolean {
    const causes = (this.body as { details?: { causes?: Array<{ reason?: string }> } } | undefined)?.details?.causes;
    return this.statusCode === 403 && (causes ?? []).some((c) => c.reason === 'NamespaceTerminating');
  }
}

/** The API client controllers use. Every method rejects with ApiError on an HTTP error. */
export interface KubeClient {
  get<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T>;
  list<T extends KubeObject>(type: ResourceType, namespace: string | undefined, options?: ListOptions): Promise<ObjectList<T>>;
  create<T extends KubeObject>(type: ResourceType, namespace: string | undefined, body: object, options?: WriteOptions): Promise<T>;
  /** Full replace; `body.metadata.resourceVersion` makes it conditional. */
  update<T extends KubeObject>(type: ResourceType, namespace: string | undefined, body: KubeObject, options?: WriteOptions): Promise<T>;
  patch<T extends KubeObject>(
    type: ResourceType, namespace: string | undefined, name: string, patchType: PatchType, body: unknown, options?: WriteOptions,
  ): Promise<T>;
  delete(type: ResourceType, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<void>;
  /** Watch from `resourceVersion` with bookmarks; events arrive in order on `onEvent`. */
  watch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    options: ListOptions & { resourceVersion: string; timeoutSeconds?: number; onOpen?: () => void },
    onEvent: (event: WatchEvent<T>) => void,
  ): WatchHandle;
  /** Emit a Kubernetes Event (events.k8s.io/v1) about an object; never throws. */
  event(regarding: KubeObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void;
  /**
   * Close the idle keep-alive connections, so the next requests open fresh ones: called when a
   * watch stalled without closing, a sign that the network path may have dropped connections
   * silently (the idle ones would hang the next request for a whole request timeout).
   */
  dropIdleConnections?(): void;
}

/** What an informer keeps: a read-only cache of one resource type, with secondary indexes. */
export interface Store<T extends KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
  /** Objects whose index function returned `value` (e.g. index `owner-uid`, value a UID). */
  byIndex(index: string, value: string): T[];
}

export type IndexFunc<T extends KubeObject> = (obj: T) => string[];

export interface InformerHandlers<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface Informer<T extends KubeObject> extends Store<T> {
  /** Resolves after the first full list has been delivered to the store and the handlers. */
  readonly synced: Promise<void>;
  addHandlers(handlers: InformerHandlers<T>): void;
  start(): void;
  stop(): void;
}

/** client-go work queue semantics: a key is queued at most once and never processed concurrently. */
export interface WorkQueue {
  readonly length: number;
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
  /** Re-add with this key's exponential backoff (and the overall token bucket). */
  addRateLimited(key: string): void;
  /** Reset this key's backoff after a success. */
  forget(key: string): void;
  /** Next key to process; undefined once the queue is shut down and drained. */
  get(): Promise<string | undefined>;
  done(key: string): void;
  shutDown(): void;
}

/** What a reconcile asks of its queue afterwards. */
export interface ReconcileResult {
  /** Reconcile again after this many milliseconds (deadlines: shutdownTime, TTLs). */
  requeueAfterMs?: number;
}

/** A controller the runtime drives: keys are `namespace/name`. */
export interface Reconciler {
  readonly name: string;
  reconcile(key: string): Promise<ReconcileResult | void>;
}

/** Split a `namespace/name` queue key. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The queue key of an object. */
export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}
