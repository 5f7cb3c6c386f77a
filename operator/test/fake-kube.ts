/**
 * In-memory stand-ins for the informer stores and the API server, shared by every reconciler's
 * unit tests: which writes a pass makes, how errors map, what a lagging cache or a crash between
 * two writes does. Behaviour against the real API server is tested in test/integration/operator.
 */
import { applyMergePatch } from '../src/model';
import {
  ApiError, type DeleteOptions, type IndexFunc, type Informer, type InformerHandlers, type KubeClient, type KubeObject, type ListOptions,
  type ObjectList, type ResourceType,
} from '../src/runtime/types';

/** An informer's cache, filled by the test; every change is also delivered to the handlers as the informer's event. */
export class FakeStore<T extends KubeObject> implements Informer<T> {
  public readonly synced = Promise.resolve();
  private readonly objects = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];

  public constructor(private readonly indexes: Record<string, IndexFunc<T>> = {}) {}

  public put(...objs: T[]): this {
    for (const o of objs) {
      const key = `${o.metadata.namespace}/${o.metadata.name}`;
      const old = this.objects.get(key);
      this.objects.set(key, o);
      for (const h of this.handlers) {
        if (old) h.onUpdate?.(old, o);
        else h.onAdd?.(o);
      }
    }
    return this;
  }

  public remove(namespace: string | undefined, name: string): this {
    const old = this.objects.get(`${namespace}/${name}`);
    this.objects.delete(`${namespace}/${name}`);
    if (old) for (const h of this.handlers) h.onDelete?.(old);
    return this;
  }

  /** The watch caught up: the cache shows exactly the server's objects of `resource`. */
  public syncFrom(client: FakeClient, resource: string): this {
    const live = [...client.live].filter(([key]) => key.startsWith(`${resource}/`)).map(([, obj]) => obj as T);
    const names = new Set(live.map((o) => o.metadata.name));
    for (const o of this.list()) if (!names.has(o.metadata.name)) this.remove(o.metadata.namespace, o.metadata.name);
    for (const o of live) {
      const cached = this.get(o.metadata.namespace, o.metadata.name);
      if (!cached || cached.metadata.resourceVersion !== o.metadata.resourceVersion) this.put(structuredClone(o));
    }
    return this;
  }

  public addHandlers(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  public start(): void {}

  public stop(): void {}

  public get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }

  public list(): T[] {
    return [...this.objects.values()];
  }

  public byIndex(index: string, value: string): T[] {
    const fn = this.indexes[index];
    if (!fn) throw new Error(`no index ${index}`);
    return this.list().filter((o) => fn(o).includes(value));
  }
}

export interface Call {
  readonly verb: 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'event';
  readonly resource: string;
  readonly name: string;
  readonly body?: any;
  readonly options?: any;
}

/** Scripted failure: the first call matching `verb resource` (and name, if given) throws `error`. */
export interface Failure {
  readonly verb: Call['verb'];
  readonly resource: string;
  readonly name?: string;
  readonly error: ApiError | Error;
}

export function apiError(statusCode: number, reason: string, message = reason): ApiError {
  return new ApiError(statusCode, reason, message);
}

/**
 * An API client over an in-memory server: `live` holds the server's objects (by `resource/name`;
 * unit tests use one namespace), and every call behaves as the API server would for it: creates
 * assign a UID, resourceVersion and creationTimestamp (and a name from generateName) and refuse a
 * taken name, merge patches bump the resourceVersion and refuse a stale resourceVersion
 * precondition with 409 Conflict, a /status patch changes only status, deletes honour UID and
 * resourceVersion preconditions, and a missing object is 404. The informer caches are FakeStores
 * the test fills separately, so a test decides how far the cache lags behind `live`.
 */
export class FakeClient implements KubeClient {
  public readonly calls: Call[] = [];
  /** The server's objects, by `resource/name`. */
  public readonly live = new Map<string, KubeObject>();
  private failures: Failure[] = [];
  private lostResponses: Failure[] = [];
  private version = 100;

  public constructor(private readonly nowMs: () => number = () => Date.parse('2026-01-01T00:00:00Z')) {}

  /** Put objects on the server as they are (a test's starting state); resources from `resourceOf`. */
  public seed(resourceOf: (obj: KubeObject) => string, ...objects: KubeObject[]): this {
    for (const obj of objects) this.live.set(`${resourceOf(obj)}/${obj.metadata.name}`, structuredClone(obj));
    return this;
  }

  /** The first matching write is applied, then its response is lost: `error` is thrown instead (a timeout, a reset, a 5xx). */
  public loseResponseOnce(...failures: Failure[]): this {
    this.lostResponses.push(...failures);
    return this;
  }

  public failOnce(...failures: Failure[]): this {
    this.failures.push(...failures);
    return this;
  }

  /** Calls other than events, as `verb resource name[/subresource]`. */
  public get writes(): string[] {
    return this.calls.filter((c) => c.verb !== 'get' && c.verb !== 'list' && c.verb !== 'event')
      .map((c) => `${c.verb} ${c.resource} ${c.name}${c.options?.subresource ? `/${c.options.subresource}` : ''}`);
  }

  public async get<T extends KubeObject>(type: ResourceType, _ns: string | undefined, name: string): Promise<T> {
    this.record({ verb: 'get', resource: type.resource, name });
    return structuredClone(this.existing(type, name)) as T;
  }

  /** The live objects of `type`, filtered by an equality label selector (`k=v,k2=v2`), up to `limit`. */
  public async list<T extends KubeObject>(type: ResourceType, _ns: string | undefined, options: ListOptions = {}): Promise<ObjectList<T>> {
    this.record({ verb: 'list', resource: type.resource, name: '', options });
    const wanted = (options.labelSelector ?? '').split(',').filter(Boolean).map((term) => {
      const [key, value] = term.split('=');
      if (value === undefined) throw new Error(`the fake server takes equality label selectors only (got ${term})`);
      return [key, value] as const;
    });
    const items = [...this.live.entries()]
      .filter(([k, o]) => k.startsWith(`${type.resource}/`) && wanted.every(([key, value]) => o.metadata.labels?.[key] === value))
      .map(([, o]) => structuredClone(o) as T);
    return { items: options.limit ? items.slice(0, options.limit) : items, metadata: { resourceVersion: String(this.version) } };
  }

  public async create<T extends KubeObject>(type: ResourceType, _ns: string | undefined, body: object, options?: object): Promise<T> {
    const obj = structuredClone(body) as KubeObject;
    const name = obj.metadata.name || `${obj.metadata.generateName ?? ''}${++this.version}`;
    this.record({ verb: 'create', resource: type.resource, name, body, options });
    if (this.live.has(`${type.resource}/${name}`)) throw apiError(409, 'AlreadyExists', `${type.resource} "${name}" already exists`);
    obj.metadata = {
      ...obj.metadata,
      name,
      uid: `uid-${type.resource}-${name}-${++this.version}`,
      resourceVersion: String(++this.version),
      creationTimestamp: new Date(this.nowMs()).toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    this.live.set(`${type.resource}/${name}`, asServed(obj));
    this.respond('create', type.resource, name);
    return structuredClone(this.live.get(`${type.resource}/${name}`)) as T;
  }

  /** A full replace; `body.metadata.resourceVersion`, when set, must be the current one. */
  public async update<T extends KubeObject>(type: ResourceType, _ns: string | undefined, body: KubeObject, options?: object): Promise<T> {
    const name = body.metadata.name;
    this.record({ verb: 'update', resource: type.resource, name, body, options });
    const current = this.existing(type, name);
    const precondition = body.metadata.resourceVersion;
    if (precondition !== undefined && precondition !== current.metadata.resourceVersion) {
      throw apiError(409, 'Conflict', `Operation cannot be fulfilled on ${type.resource} "${name}": the object has been modified`);
    }
    const next = structuredClone(body);
    const { uid, creationTimestamp } = current.metadata;
    next.metadata = { ...next.metadata, uid, creationTimestamp, resourceVersion: String(++this.version) };
    this.live.set(`${type.resource}/${name}`, asServed(next));
    this.respond('update', type.resource, name);
    return structuredClone(this.live.get(`${type.resource}/${name}`)) as T;
  }

  public async patch<T extends KubeObject>(
    type: ResourceType, _ns: string | undefined, name: string, patchType: string, body: unknown, options?: { subresource?: string },
  ): Promise<T> {
    this.record({ verb: 'patch', resource: type.resource, name, body, options: { ...options, patchType } });
    if (patchType !== 'merge') throw new Error(`the fake server applies merge patches only (got ${patchType})`);
    const current = this.existing(type, name);
    const patch = body as { metadata?: { resourceVersion?: string }; status?: unknown };
    const precondition = patch.metadata?.resourceVersion;
    if (precondition !== undefined && precondition !== current.metadata.resourceVersion) {
      throw apiError(409, 'Conflict', `Operation cannot be fulfilled on ${type.resource} "${name}": the object has been modified`);
    }
    const change = options?.subresource === 'status' ? { status: patch.status } : body;
    const next = applyMergePatch(current, change);
    next.metadata = { ...next.metadata, resourceVersion: String(++this.version) };
    this.live.set(`${type.resource}/${name}`, asServed(next));
    this.respond('patch', type.resource, name);
    return structuredClone(this.live.get(`${type.resource}/${name}`)) as T;
  }

  public async delete(type: ResourceType, _ns: string | undefined, name: string, options?: DeleteOptions): Promise<void> {
    this.record({ verb: 'delete', resource: type.resource, name, options });
    const current = this.existing(type, name);
    if ((options?.uid !== undefined && options.uid !== current.metadata.uid)
      || (options?.resourceVersion !== undefined && options.resourceVersion !== current.metadata.resourceVersion)) {
      throw apiError(409, 'Conflict', `Precondition failed for ${type.resource} "${name}"`);
    }
    this.live.delete(`${type.resource}/${name}`);
    this.respond('delete', type.resource, name);
  }

  public watch(): never {
    throw new Error('not used');
  }

  public event(regarding: KubeObject, type: string, reason: string, action: string, note: string): void {
    this.calls.push({ verb: 'event', resource: regarding.kind ?? '', name: regarding.metadata.name, body: { type, reason, action, note } });
  }

  private existing(type: ResourceType, name: string): KubeObject {
    const obj = this.live.get(`${type.resource}/${name}`);
    if (!obj) throw apiError(404, 'NotFound', `${type.resource} "${name}" not found`);
    return obj;
  }

  /** After a write was applied: throw a scripted lost response, if one matches. */
  private respond(verb: Call['verb'], resource: string, name: string): void {
    const i = this.lostResponses.findIndex((f) => f.verb === verb && f.resource === resource && (f.name === undefined || f.name === name));
    if (i >= 0) throw this.lostResponses.splice(i, 1)[0].error;
  }

  private record(call: Call): void {
    this.calls.push(call);
    const i = this.failures.findIndex((f) => f.verb === call.verb && f.resource === call.resource && (f.name === undefined || f.name === call.name));
    if (i >= 0) {
      const [failure] = this.failures.splice(i, 1);
      throw failure.error;
    }
  }
}

/**
 * An object as the API server stores and returns a custom resource: Go's encoding/json writes an
 * unstructured object's keys sorted, whatever order they were sent in. Code that compares its own
 * objects with the server's by JSON text sees a change that is not there; this makes tests see it.
 */
function asServed<T>(value: T): T {
  if (Array.isArray(value)) return value.map(asServed) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, asServed((value as Record<string, unknown>)[k])])) as T;
  }
  return value;
}
