/**
 * A claim's observability annotations, held while other claims wait (part of claims-first,
 * ./index.ts). They are computed at the claim's first Ready and must be written with the values of
 * that moment: a later pass would compute claim-first-ready-at as `unknown`. So what a pass could
 * not write is kept here, by claim key, and wins over what a later pass computes. Lost on a
 * restart, which then writes `unknown`.
 */
import type { Deferral } from './deferral';

/** What to do with a claim's annotations this pass. */
export type AnnotationStep =
  /** Nothing is left to add. */
  | { readonly kind: 'none' }
  /** Write these now. */
  | { readonly kind: 'write'; readonly add: Record<string, string> }
  /** Held: look again after `retryAfterMs` at the latest. */
  | { readonly kind: 'held'; readonly retryAfterMs: number };

export class HeldAnnotations {
  private readonly held = new Map<string, { readonly uid: string; readonly add: Record<string, string> }>();

  /** `deferral` says when claims wait; without one nothing is ever held. */
  public constructor(private readonly deferral?: Deferral) {}

  /** Claims whose annotations are held now. */
  public get size(): number {
    return this.held.size;
  }

  /**
   * The annotations claim `key` (uid `uid`) should add: `computed` by this pass, under what was held
   * for the same claim (held values win), less those `current` already has; held while claims wait.
   */
  public next(key: string, uid: string, computed: Record<string, string> | undefined, current: Record<string, string> | undefined): AnnotationStep {
    const held = this.held.get(key);
    const add = { ...computed, ...(held?.uid === uid ? held.add : {}) };
    for (const [k, v] of Object.entries(add)) if (current?.[k] === v) delete add[k];
    if (Object.keys(add).length === 0) {
      this.held.delete(key);
      return { kind: 'none' };
    }
    const deferred = this.deferral?.defer(key);
    if (deferred?.defer) {
      this.held.set(key, { uid, add });
      return { kind: 'held', retryAfterMs: deferred.retryAfterMs };
    }
    return { kind: 'write', add };
  }

  /** `key`'s annotations were written, or its claim is gone: nothing is held for it any more. */
  public settled(key: string): void {
    this.held.delete(key);
  }

  /** Claim `key` is gone: forget what was held and its deferral. */
  public forget(key: string): void {
    this.held.delete(key);
    this.deferral?.done(key);
  }
}
