/**
 * The Sandbox status as a pure function of what the pass saw: conditions with upstream's exact
 * reasons and messages, pod and service fields, and whether the result differs enough from the
 * stored status to be worth a write.
 */
import { ConditionType, SandboxReadyReason, SandboxSuspendedReason } from '#api/conditions';
import { selectorOf } from './desired';
import {
  type Condition, type ConditionInput, findCondition, isConditionTrue, type Pod, podIPsOf, removeCondition, type Sandbox,
  type SandboxStatus, setCondition,
} from '../../model';

/** Why a pass could not do everything it should. */
export interface Problem {
  /** The Ready reason it shows as. */
  readonly reason:
    | typeof SandboxReadyReason.RECONCILER_ERROR
    | typeof SandboxReadyReason.INVALID_CONFIGURATION
    | typeof SandboxReadyReason.MULTIPLE_PODS;
  readonly message: string;
  /** Set when the Pod step failed, so `Suspended` can say the Pod state is unknown. */
  readonly podStep?: boolean;
}

/** What the status is computed from. */
export interface StatusView {
  /** The Pod this Sandbox controls (undefined when none, or when several make it ambiguous). */
  readonly pod?: Pod;
  /** Whether any Pod controlled by this Sandbox exists (the selector is set from then on). */
  readonly anyOwnedPod: boolean;
  /** A Pod with our Pod's name exists that this Sandbox does not control. */
  readonly podNotOwned: boolean;
  readonly suspended: boolean;
  /** The Service is part of readiness: `spec.service: true`, or unset with an owned Service. */
  readonly serviceRequired: boolean;
  readonly serviceExists: boolean;
  readonly problem?: Problem;
}

const TERMINAL = { Succeeded: SandboxReadyReason.POD_SUCCEEDED, Failed: SandboxReadyReason.POD_FAILED } as const;

/** The status of a live (not expired) Sandbox. */
export function liveStatus(sandbox: Sandbox, view: StatusView, nowMs: number, clusterDomain: string): SandboxStatus {
  const generation = sandbox.metadata.generation;
  const set = (conds: Condition[], c: Omit<ConditionInput, 'observedGeneration'>) =>
    setCondition(conds, withGeneration(c, generation), nowMs);
  let conditions: Condition[] = sandbox.status?.conditions ?? [];
  const pod = view.pod;
  const phase = pod?.status?.phase;

  conditions = set(conditions, suspendedCondition(view));

  const finished = phase === 'Succeeded' || phase === 'Failed' ? TERMINAL[phase] : undefined;
  conditions = finished
    ? set(conditions, { type: ConditionType.FINISHED, status: 'True', reason: finished, message: finished === 'PodSucceeded' ? 'Pod completed successfully' : 'Pod failed' })
    : removeCondition(conditions, ConditionType.FINISHED);

  conditions = pod ? set(conditions, podScheduledCondition(pod)) : removeCondition(conditions, ConditionType.POD_SCHEDULED);
  conditions = set(conditions, readyCondition(view));

  const status: SandboxStatus = { conditions };
  const previousSelector = sandbox.status?.selector;
  if (view.anyOwnedPod || previousSelector) status.selector = view.anyOwnedPod ? selectorOf(sandbox) : previousSelector;
  if (pod) {
    const ips = podIPsOf(pod);
    if (ips.length > 0) status.podIPs = ips;
    if (pod.spec?.nodeName) status.nodeName = pod.spec.nodeName;
  }
  if (view.serviceExists) {
    status.service = sandbox.metadata.name;
    status.serviceFQDN = `${sandbox.metadata.name}.${sandbox.metadata.namespace}.svc.${clusterDomain}`;
  }
  return status;
}

/**
 * The status of a Sandbox past its shutdownTime with policy Retain: only its conditions survive
 * (PodScheduled dropped, Finished kept), Ready=False/SandboxExpired; live fields are cleared.
 */
export function expiredStatus(sandbox: Sandbox, nowMs: number): SandboxStatus {
  let conditions = removeCondition(sandbox.status?.conditions ?? [], ConditionType.POD_SCHEDULED);
  conditions = setCondition(conditions, withGeneration({
    type: ConditionType.READY, status: 'False', reason: SandboxReadyReason.SANDBOX_EXPIRED, message: 'Sandbox has expired',
  }, sandbox.metadata.generation), nowMs);
  return { conditions };
}

function withGeneration(c: Omit<ConditionInput, 'observedGeneration'>, generation: number | undefined): ConditionInput {
  return generation === undefined ? c : { ...c, observedGeneration: generation };
}

function suspendedCondition(view: StatusView): Omit<ConditionInput, 'observedGeneration'> {
  const type = ConditionType.SUSPENDED;
  if (!view.suspended) return { type, status: 'False', reason: SandboxSuspendedReason.NOT_SUSPENDED, message: 'Sandbox is not suspended' };
  if (view.problem?.podStep) return { type, status: 'Unknown', reason: SandboxSuspendedReason.POD_STATE_UNKNOWN, message: `Pod state is unknown: ${view.problem.message}` };
  if (view.podNotOwned) return { type, status: 'False', reason: SandboxSuspendedReason.POD_NOT_OWNED, message: 'A Pod with the Sandbox Pod name exists that this Sandbox does not control; it is not deleted' };
  if (view.anyOwnedPod) return { type, status: 'False', reason: SandboxSuspendedReason.POD_TERMINATING, message: 'Pod is terminating' };
  return { type, status: 'True', reason: SandboxSuspendedReason.POD_TERMINATED, message: 'Pod has been terminated. Sandbox is suspended' };
}

/** PodScheduled mirrors the Pod's own condition, with upstream's fallbacks for a missing reason. */
function podScheduledCondition(pod: Pod): Omit<ConditionInput, 'observedGeneration'> {
  const type = ConditionType.POD_SCHEDULED;
  const own = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (!own) return { type, status: 'Unknown', reason: 'PodSchedulingUnknown', message: 'Pod has not reported scheduling yet' };
  const status = own.status === 'True' || own.status === 'False' ? own.status : 'Unknown';
  const reason = own.reason || (status === 'True' ? 'PodScheduled' : 'PodSchedulingUnknown');
  return { type, status, reason, message: own.message ?? '' };
}

function readyCondition(view: StatusView): Omit<ConditionInput, 'observedGeneration'> {
  const type = ConditionType.READY;
  const notReady = (reason: string, message: string) => ({ type, status: 'False' as const, reason, message });
  if (view.problem) {
    const { reason, message } = view.problem;
    return notReady(reason, reason === SandboxReadyReason.RECONCILER_ERROR ? `Error seen: ${message}` : message);
  }
  if (view.suspended) {
    return notReady(SandboxReadyReason.SANDBOX_SUSPENDED, view.anyOwnedPod ? 'Sandbox is suspending' : 'Sandbox is suspended');
  }
  const pod = view.pod;
  const phase = pod?.status?.phase;
  if (phase === 'Succeeded') return notReady(SandboxReadyReason.POD_SUCCEEDED, 'Pod completed successfully');
  if (phase === 'Failed') return notReady(SandboxReadyReason.POD_FAILED, 'Pod failed');
  let podMessage: string;
  let podReady = false;
  if (!pod) {podMessage = 'Pod does not exist';} else if (pod.metadata.deletionTimestamp) {podMessage = 'Pod is terminating';} else if (phase !== 'Running') {podMessage = `Pod exists with phase: ${phase ?? 'Pending'}`;} else if (pod.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') {podMessage = 'Pod is Running but not Ready';} else if (podIPsOf(pod).length === 0) {podMessage = 'Pod is Ready but has no podIPs yet';} else {
    podMessage = 'Pod is Ready';
    podReady = true;
  }
  const serviceOk = !view.serviceRequired || view.serviceExists;
  const message = view.serviceRequired ? `${podMessage}; ${view.serviceExists ? 'Service Exists' : 'Service does not exist'}` : podMessage;
  if (podReady && serviceOk) return { type, status: 'True', reason: SandboxReadyReason.DEPENDENCIES_READY, message };
  return notReady(SandboxReadyReason.DEPENDENCIES_NOT_READY, message);
}

/**
 * Whether `next` only reports progress towards Ready: Ready=False/DependenciesNotReady, not
 * suspended, not finished, and the stored status was not Ready either (no status yet, or already
 * DependenciesNotReady). Such a status may wait a moment to be written: a Pod that is Ready a few
 * hundred milliseconds later then costs one status write instead of three (Pending, scheduled,
 * Ready). Readiness gained or lost, errors, suspension, an unschedulable Pod and terminal phases
 * are never held.
 */
export function isProgressOnly(current: SandboxStatus | undefined, next: SandboxStatus): boolean {
  const notReadyYet = (c: Condition | undefined) => c?.status === 'False' && c.reason === SandboxReadyReason.DEPENDENCIES_NOT_READY;
  if (!notReadyYet(findCondition(next.conditions, ConditionType.READY))) return false;
  if (findCondition(next.conditions, ConditionType.FINISHED)) return false;
  if (findCondition(next.conditions, ConditionType.SUSPENDED)?.reason !== SandboxSuspendedReason.NOT_SUSPENDED) return false;
  // An unschedulable Pod is news: a pool holds such members instead of replacing them.
  const scheduled = findCondition(next.conditions, ConditionType.POD_SCHEDULED);
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') return false;
  const before = findCondition(current?.conditions, ConditionType.READY);
  return before === undefined || notReadyYet(before);
}

const STATUS_FIELDS = ['conditions', 'service', 'serviceFQDN', 'selector', 'podIPs', 'nodeName'] as const;

/**
 * Whether `next` differs from `current` in bookkeeping only: every condition keeps its status,
 * reason and message (an adoption's spec change moves only their observedGeneration), and the
 * Pod IPs, Service and node stay. Nothing a client waits on changes, so the write may wait while
 * claims do (controllers/claims-first).
 */
export function isBookkeepingOnly(current: SandboxStatus | undefined, next: SandboxStatus): boolean {
  for (const field of ['service', 'serviceFQDN', 'podIPs', 'nodeName'] as const) if (!sameJson(current?.[field], next[field])) return false;
  const meaning = (conditions: readonly Condition[] | undefined) =>
    canonical((conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message]).sort());
  return meaning(current?.conditions) === meaning(next.conditions);
}

/**
 * Whether `next` must be written. Unchanged status is never written; a change of nodeName alone
 * waits while the Sandbox is not Ready (it rides along with the Ready transition, as upstream).
 */
export function statusNeedsWrite(current: SandboxStatus | undefined, next: SandboxStatus): boolean {
  const changed = STATUS_FIELDS.filter((f) => !sameJson(current?.[f], next[f]));
  if (changed.length === 0) return false;
  if (changed.length === 1 && changed[0] === 'nodeName') {
    return isConditionTrue(next.conditions, ConditionType.READY);
  }
  return true;
}

/** The JSON merge patch for the status subresource: changed fields set, vanished fields nulled. */
export function statusPatch(current: SandboxStatus | undefined, next: SandboxStatus): { status: Record<string, unknown> } {
  const body: Record<string, unknown> = {};
  for (const field of STATUS_FIELDS) {
    if (sameJson(current?.[field], next[field])) continue;
    body[field] = next[field] ?? null;
  }
  return { status: body };
}

function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/** JSON with sorted object keys, so key order (ours vs the server's) never looks like a change. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v);
}
