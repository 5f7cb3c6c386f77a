/**
 * When this process first saw each object of an informer (by UID): taken at the informer's add,
 * so time an object then waits in the work queue behind others counts (latency measured from
 * "first observed", as upstream's controllers take it in their watch predicates). Forgotten when
 * the object is deleted. Nothing here waits for the cache to show a write, so it is a plain map,
 * not an Expectations.
 */
import type { Informer, KubeObject } from './types';

export class FirstSeen<T extends KubeObject> {
  private readonly atMs = new Map<string, number>();

  public get size(): number {
    return this.atMs.size;
  }

  /** The object's first sighting, noting `nowMs` if it has none (a pass may see it before its add event). */
  public saw(obj: T, nowMs: number): number {
    const uid = obj.metadata.uid ?? '';
    const at = this.atMs.get(uid) ?? nowMs;
    this.atMs.set(uid, at);
    return at;
  }

  /** Note adds and forget deletes of `informer`'s objects. */
  public follow(informer: Informer<T>, now: () => number): void {
    informer.addHandlers({
      onAdd: (obj) => this.saw(obj, now()),
      onDelete: (obj) => this.atMs.delete(obj.metadata.uid ?? ''),
    });
  }
}
