/**
 * The informer's cache: objects by `namespace/name` plus secondary indexes kept up to date on
 * every write, so `byIndex` (e.g. pods by owner UID) is a map lookup, not a scan.
 */
import { IndexFunc, KubeObject, Store, keyOf } from './types';

export class IndexedStore<T extends KubeObject> implements Store<T> {
  private readonly items = new Map<string, T>();
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  /** index name → index value → keys. */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  /**
   * A throwing index function (a controller bug) must not corrupt the cache: the object is stored
   * and simply not found under that index, and the error goes to this callback.
   */
  public constructor(public onIndexError: (index: string, key: string, err: unknown) => void = () => undefined) {}

  public get size(): number {
    return this.items.size;
  }

  /** Add an index; existing objects are indexed at once. */
  public addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexFuncs.has(name)) throw new Error(`index "${name}" is already defined`);
    this.indexFuncs.set(name, fn);
    this.indexes.set(name, new Map());
    for (const [key, obj] of this.items) this.indexOne(name, fn, key, obj);
  }

  public hasIndex(name: string): boolean {
    return this.indexFuncs.has(name);
  }

  public get(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  public getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  public list(): T[] {
    return [...this.items.values()];
  }

  public keys(): IterableIterator<string> {
    return this.items.keys();
  }

  public byIndex(index: string, value: string): T[] {
    const byValue = this.indexes.get(index);
    if (!byValue) throw new Error(`no index "${index}"; known indexes: ${[...this.indexFuncs.keys()].join(', ') || 'none'}`);
    const keys = byValue.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const key of keys) out.push(this.items.get(key)!);
    return out;
  }

  /** Insert or replace; returns the previous object. */
  public put(obj: T): T | undefined {
    const key = keyOf(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexFuncs) this.indexOne(name, fn, key, obj);
    return old;
  }

  /** Remove by key; returns the removed object. */
  public remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  private values(name: string, fn: IndexFunc<T>, key: string, obj: T): string[] {
    try {
      return fn(obj);
    } catch (err) {
      this.onIndexError(name, key, err);
      return [];
    }
  }

  private indexOne(name: string, fn: IndexFunc<T>, key: string, obj: T): void {
    const byValue = this.indexes.get(name)!;
    for (const value of this.values(name, fn, key, obj)) {
      let keys = byValue.get(value);
      if (!keys) byValue.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexFuncs) {
      const byValue = this.indexes.get(name)!;
      for (const value of this.values(name, fn, key, obj)) {
        const keys = byValue.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) byValue.delete(value);
      }
    }
  }
}
