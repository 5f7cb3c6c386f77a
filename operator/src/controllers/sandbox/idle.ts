/**
 * The idle lifecycle's part of the Sandbox decision (ours): suspend a Sandbox its idle policy says
 * nobody has used for long enough, else arm a timer for the moment it will be (no polling). The
 * idle clock itself is model/idle.ts, the reading the router's activity stamps share.
 */
import { OperatingMode } from '#api/enums';
import { SandboxAnnotations } from '#api/labels';
import type { Action, PlanEvent } from './actions';
import { activityStamp, idleDeadlineMs, idlePolicyOf, type Sandbox } from '../../model';

/** Event reason (Normal): the operator suspended the Sandbox for idleness. */
export const IDLE_SUSPENDED = 'IdleSuspended';

export type IdleStep =
  /** Due: the one conditional write that suspends the Sandbox, and the event that says why. */
  | { readonly suspend: Action; readonly event: PlanEvent }
  | {
    readonly suspend?: undefined;
    /** Time left until the idle deadline, when one runs. */
    readonly requeueAfterMs?: number;
    /** A resumed Sandbox still marked idle-suspended: the write that clears the mark. */
    readonly resumed?: Action;
  };

export function idleStep(sandbox: Sandbox, nowMs: number): IdleStep {
  const suspendedAt = sandbox.metadata.annotations?.[SandboxAnnotations.IDLE_SUSPENDED_AT];
  if (suspendedAt !== undefined && sandbox.spec.operatingMode !== OperatingMode.SUSPENDED) {
    // Resumed (by the SDK, kubectl, or a router that left the mark): a resume is use, so the idle
    // clock restarts now. This also covers a resume that lands before our status says the Pod is
    // gone: its Ready condition still dates from before the suspension and would read as overdue.
    const stamp = idlePolicyOf(sandbox) ? { [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(nowMs) } : {};
    const patch = { metadata: { annotations: { [SandboxAnnotations.IDLE_SUSPENDED_AT]: null, ...stamp } } };
    return { resumed: { op: 'patch-sandbox', patch } };
  }
  const deadline = idleDeadlineMs(sandbox);
  if (deadline === undefined) return {};
  if (nowMs < deadline) return { requeueAfterMs: deadline - nowMs };
  const seconds = idlePolicyOf(sandbox)!.suspendAfterSeconds;
  return {
    suspend: {
      op: 'patch-sandbox',
      // The resourceVersion makes the write conditional: an activity stamp (or any change) the
      // cache has not shown yet fails it with 409, and the pass retries on the fresher object.
      patch: {
        metadata: {
          resourceVersion: sandbox.metadata.resourceVersion ?? '',
          annotations: { [SandboxAnnotations.IDLE_SUSPENDED_AT]: activityStamp(nowMs) },
        },
        spec: { operatingMode: OperatingMode.SUSPENDED },
      },
    },
    event: {
      type: 'Normal',
      reason: IDLE_SUSPENDED,
      action: 'Suspending',
      note: `no request, connection or process for ${seconds} s (idlePolicy.suspendAfterSeconds)`,
    },
  };
}
