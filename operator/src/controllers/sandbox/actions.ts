/**
 * The writes and events a Sandbox plan is made of (plan.ts), apart so that the topic files that
 * contribute steps (idle.ts) need not import the plan that imports them.
 */
import type { ChildKind } from './desired';
import type { KubeObject } from '../../runtime/types';

export type Action =
  | { readonly op: 'create'; readonly kind: ChildKind; readonly object: KubeObject }
  | { readonly op: 'patch'; readonly kind: ChildKind; readonly name: string; readonly patch: object }
  | { readonly op: 'delete'; readonly kind: ChildKind; readonly name: string; readonly uid: string }
  /** Merge patch of the Sandbox's own metadata (the pod-name annotation). */
  | { readonly op: 'patch-sandbox'; readonly patch: object }
  | { readonly op: 'delete-sandbox'; readonly uid: string };

export interface PlanEvent {
  /** Warning (the default) is recorded whatever the actions did; Normal reports a write, so only when the actions succeeded. */
  readonly type?: 'Normal' | 'Warning';
  readonly reason: string;
  /** @default Reconciling */
  readonly action?: string;
  readonly note: string;
}
