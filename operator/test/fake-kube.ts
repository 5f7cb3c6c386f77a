/**
 * In-memory stand-ins for the informer stores and the API client, for testing the reconcilers'
 * I/O decisions (which writes, how errors map) without a server. Behaviour against the real API
 * server is tested in test/integration/operator/sandbox.test.ts.
 */
import { ApiError, type IndexFunc, type KubeClient, type KubeObject, type ResourceType, type Store } from '../src/runtime/types';

export class FakeStore<T extends KubeObject> implements Store<T> {
  private readonly objects = new Map<string, T>();

  public constructor(private readonly indexes: Record<string, IndexFunc<T>> = {}) {}

  public put(...objs: T[]): this {
    for (const o of objs) this.objects.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    return this;
  }

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
  readonly verb: 'get' | 'create' | 'patch' | 'delete' | 'event';
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

export class FakeClient implements KubeClient {
  public readonly calls: Call[] = [];
  /** Objects `get` returns (by `resource/name`). */
  public readonly live = new Map<string, KubeObject>();
  private failures: Failure[] = [];

  public failOnce(...failures: Failure[]): this {
    this.failures.push(...failures);
    return this;
  }

  /** Calls other than events, as `verb resource name[/subresource]`. */
  public get writes(): string[] {
    return this.calls.filter((c) => c.verb !== 'get' && c.verb !== 'event')
      .map((c) => `${c.verb} ${c.resource} ${c.name}${c.options?.subresource ? `/${c.options.subresource}` : ''}`);
  }

  public async get<T extends KubeObject>(type: ResourceType, _ns: string | undefined, name: string): Promise<T> {
    this.record({ verb: 'get', resource: type.resource, name });
    const obj = this.live.get(`${type.resource}/${name}`);
    if (!obj) throw apiError(404, 'NotFound');
    return obj as T;
  }

  public async list(): Promise<never> {
    throw new Error('the Sandbox controller reads lists from informers, never from the client');
  }

  public async create<T extends KubeObject>(type: ResourceType, _ns: string | undefined, body: object, options?: object): Promise<T> {
    this.record({ verb: 'create', resource: type.resource, name: (body as KubeObject).metadata.name, body, options });
    return body as T;
  }

  public async update<T extends KubeObject>(): Promise<T> {
    throw new Error('the Sandbox controller never sends full updates');
  }

  public async patch<T extends KubeObject>(
    type: ResourceType, _ns: string | undefined, name: string, patchType: string, body: unknown, options?: object,
  ): Promise<T> {
    this.record({ verb: 'patch', resource: type.resource, name, body, options: { ...options, patchType } });
    return {} as T;
  }

  public async delete(type: ResourceType, _ns: string | undefined, name: string, options?: object): Promise<void> {
    this.record({ verb: 'delete', resource: type.resource, name, options });
  }

  public watch(): never {
    throw new Error('not used');
  }

  public event(regarding: KubeObject, type: string, reason: string, action: string, note: string): void {
    this.calls.push({ verb: 'event', resource: regarding.kind ?? '', name: regarding.metadata.name, body: { type, reason, action, note } });
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
