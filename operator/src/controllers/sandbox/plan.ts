/**
 * The Sandbox reconcile decision (upstream's controllers/sandbox_controller.go) as a pure function:
 * from the Sandbox, the children the caches hold and the clock, the writes to make, the status to
 * end up with and when to look again. reconcile.ts only executes the plan.
 */
import { ConditionType, SandboxReadyReason } from '#api/conditions';
import { OperatingMode, SandboxShutdownPolicy } from '#api/enums';
import { SandboxAnnotations } from '#api/labels';
import { checkDns1035Label, checkDns1123Label, checkDns1123Subdomain } from '#api/validation';
import type { Action, PlanEvent } from './actions';
import { podAdoption } from './adoption';
import { adoptionMetadata, buildPod, buildPvc, buildService, isAdoptable, nameHashOf, podMetadataPatch, pvcNameOf, serviceDriftPatch } from './desired';
import { idleStep } from './idle';
import { expiredStatus, isBookkeepingOnly, liveStatus, statusNeedsWrite, type Problem, type StatusView } from './status';
import { controllerRefOf, findCondition, isControlledBy, type PersistentVolumeClaim, type Pod, type Sandbox, type SandboxStatus, type Service } from '../../model';
import { routerLabelsIn } from '../../model/template-gate';
import type { KubeObject } from '../../runtime/types';

/** What the caches hold for one Sandbox. */
export interface Observed {
  readonly sandbox: Sandbox;
  /** Pods controlled by the Sandbox's UID, and any Pod named like the Sandbox's Pod. */
  readonly pods: readonly Pod[];
  /** The Service named like the Sandbox, if any. */
  readonly service?: Service;
  /** PVCs by name (only the names the claim templates ask for matter). */
  readonly pvcs: ReadonlyMap<string, PersistentVolumeClaim>;
  readonly nowMs: number;
  readonly clusterDomain: string;
  /** Labels of the sandbox router's Pods (`--router-pod-labels`); no sandbox Pod may carry them all. @default app=sandbox-router */
  readonly routerPodLabels?: { readonly [key: string]: string };
}

export type { Action, PlanEvent } from './actions';

export interface Plan {
  /** Writes in dependency order: PVCs, then Pod and Service, then the Sandbox itself. */
  readonly actions: readonly Action[];
  /** The status to end with, when every action succeeds. */
  readonly status: SandboxStatus;
  readonly writeStatus: boolean;
  /** What the status was computed from, so a failed write can recompute it (statusAfterFailure). */
  readonly view?: StatusView;
  readonly problem?: Problem;
  /** Reconcile again after this long: the shutdownTime or idle-deadline timer, whichever is first. */
  readonly requeueAfterMs?: number;
  /** An event to record (MultiplePods or PodAdoptionRefused once per episode, IdleSuspended). */
  readonly event?: PlanEvent;
  /**
   * An unowned Pod of this name may be adopted, but the cache holds no Pod spec: fetch the live Pod
   * and decide again (the plan's actions and status are not to be used).
   */
  readonly inspectPod?: string;
}


/** Event reason: an unowned Pod named like the Sandbox's was not adopted (see adoption.ts). */
export const POD_ADOPTION_REFUSED = 'PodAdoptionRefused';

export function planSandbox(obs: Observed): Plan {
  const { sandbox, nowMs } = obs;
  const shutdownMs = sandbox.spec.shutdownTime === undefined ? undefined : Date.parse(sandbox.spec.shutdownTime);
  if (shutdownMs !== undefined && !Number.isNaN(shutdownMs) && nowMs >= shutdownMs) return decideExpired(obs);
  const idle = idleStep(sandbox, nowMs);
  // Suspending is the whole pass: the Pod goes in the pass the write's own watch event brings, so
  // nothing is deleted unless the conditional write wins.
  if (idle.suspend) return { actions: [idle.suspend], status: sandbox.status ?? {}, writeStatus: false, event: idle.event };
  const shutdownLeftMs = shutdownMs === undefined || Number.isNaN(shutdownMs) ? Infinity : shutdownMs - nowMs;
  const nextMs = Math.min(shutdownLeftMs, idle.requeueAfterMs ?? Infinity);
  const requeueAfterMs = nextMs === Infinity ? undefined : Math.max(1, nextMs);

  const router = routerLabelsProblem(sandbox, obs.routerPodLabels);
  const invalid = router ?? invalidConfiguration(sandbox) ?? stickyInvalidConfiguration(sandbox);
  const actions: Action[] = [];
  let problem: Problem | undefined = invalid === undefined ? undefined : { reason: SandboxReadyReason.INVALID_CONFIGURATION, message: invalid };
  // An invalid spec gets no new children: creating them could only fail, or run a Pod that can
  // never be Ready. The status still describes whatever exists.
  const pvcProblem = invalid ? undefined : planPvcs(obs, actions);
  problem ??= pvcProblem;
  const pods = planPod(obs, invalid !== undefined || pvcProblem !== undefined, actions, router !== undefined);
  problem ??= pods.problem;
  const service = pods.problem?.reason === SandboxReadyReason.MULTIPLE_PODS
    ? { exists: false, required: false } // ambiguous: leave the Service alone, as upstream
    : planService(obs, invalid !== undefined, actions);
  problem ??= service.problem;
  if (idle.resumed) actions.push(idle.resumed);

  const view: StatusView = {
    pod: pods.pod,
    anyOwnedPod: pods.ownedCount > 0,
    podNotOwned: pods.notOwned,
    suspended: isSuspended(sandbox),
    serviceRequired: service.required,
    serviceExists: service.exists,
    problem,
  };
  const status = liveStatus(sandbox, view, nowMs, obs.clusterDomain);
  const enteringMultiplePods = problem?.reason === SandboxReadyReason.MULTIPLE_PODS
    && findCondition(sandbox.status?.conditions, ConditionType.READY)?.reason !== SandboxReadyReason.MULTIPLE_PODS;
  // A pass that creates the Pod leaves the status to the pass the Pod's own watch event triggers
  // a moment later, which sees the Pod: one status write per cold Sandbox saved, nothing lost (a
  // failed create recomputes and writes the status in statusAfterFailure).
  const createsPod = actions.some((a) => a.op === 'create' && a.kind === 'pod');
  // A refused adoption is reported once, when the Ready condition first says so.
  const enteringRefusal = pods.refused === true && problem === pods.problem
    && findCondition(status.conditions, ConditionType.READY)?.message !== findCondition(sandbox.status?.conditions, ConditionType.READY)?.message;
  return {
    actions,
    status,
    writeStatus: !createsPod && statusNeedsWrite(sandbox.status, status),
    view,
    problem,
    requeueAfterMs,
    ...(enteringMultiplePods ? { event: { reason: SandboxReadyReason.MULTIPLE_PODS, note: problem!.message } } : {}),
    ...(enteringRefusal ? { event: { reason: POD_ADOPTION_REFUSED, note: pods.problem!.message } } : {}),
    ...(pods.inspect !== undefined ? { inspectPod: pods.inspect } : {}),
  };
}

/**
 * Whether all `plan` would write is bookkeeping a client does not wait on: relabelling an existing
 * Pod (a claimed member's Pod taking the claim's labels) and a status whose conditions change in
 * observedGeneration only. Such a plan may wait while claims do; anything else (a Pod to create,
 * readiness, IPs, a Service, a delete) never waits.
 */
export function isDeferrable(sandbox: Sandbox, plan: Plan): boolean {
  if (plan.problem || plan.event) return false;
  if (!plan.actions.every((a) => a.op === 'patch' && a.kind === 'pod')) return false;
  if (plan.actions.length === 0 && !plan.writeStatus) return false;
  return !plan.writeStatus || isBookkeepingOnly(sandbox.status, plan.status);
}

/** The status when executing `plan` failed with `problem` (the actions are not retried here). */
export function statusAfterFailure(obs: Observed, plan: Plan, problem: Problem): { status: SandboxStatus; writeStatus: boolean } {
  const status = plan.view ? liveStatus(obs.sandbox, { ...plan.view, problem }, obs.nowMs, obs.clusterDomain) : plan.status;
  return { status, writeStatus: statusNeedsWrite(obs.sandbox.status, status) };
}

function isSuspended(sandbox: Sandbox): boolean {
  return sandbox.spec.operatingMode === OperatingMode.SUSPENDED;
}

/**
 * Spec problems no retry can fix, found before any write. Our CRD's CEL rule rejects most
 * (a Service name that is not a DNS-1035 label); this catches objects admitted without it.
 */
export function invalidConfiguration(sandbox: Sandbox): string | undefined {
  const name = sandbox.metadata.name;
  if (sandbox.spec.shutdownTime !== undefined && Number.isNaN(Date.parse(sandbox.spec.shutdownTime))) {
    return `spec.shutdownTime "${sandbox.spec.shutdownTime}" is not an RFC 3339 time`;
  }
  if (sandbox.spec.service === true) {
    const bad = checkDns1035Label(name);
    if (bad) return `spec.service is true, but the Service takes the Sandbox name and ${bad}; rename the Sandbox or unset spec.service`;
  }
  const seen = new Set<string>();
  for (const [i, vct] of (sandbox.spec.volumeClaimTemplates ?? []).entries()) {
    const field = `spec.volumeClaimTemplates[${i}].metadata.name`;
    const vctName = vct.metadata?.name;
    if (!vctName) return `${field} is required: it names the volume and the PVC <name>-${name}`;
    const badVolume = checkDns1123Label(vctName);
    if (badVolume) return `${field}: the volume name ${badVolume}`;
    if (seen.has(vctName)) return `${field}: "${vctName}" is used by two claim templates; volume names must be unique`;
    seen.add(vctName);
    const badPvc = checkDns1123Subdomain(pvcNameOf(vct, sandbox));
    if (badPvc) return `${field}: the PVC name ${badPvc}; shorten the claim template or Sandbox name`;
  }
  return undefined;
}

/**
 * A Sandbox whose Pod would carry any label of the sandbox router's Pods, which the template
 * NetworkPolicies admit as the router: refused, whoever made the Sandbox (pools and claims refuse
 * such templates before building; this catches bare Sandboxes and hand edits).
 */
export function routerLabelsProblem(sandbox: Sandbox, routerPodLabels?: { readonly [key: string]: string }): string | undefined {
  const router = routerLabelsIn(sandbox.spec.podTemplate.metadata?.labels, routerPodLabels);
  return router === undefined ? undefined
    : `spec.podTemplate.metadata.labels carries ${router}, the label of the sandbox router, which sandbox NetworkPolicies admit; remove it (no Pod is made until then)`;
}

/**
 * An InvalidConfiguration the API server reported for this very generation stays until the spec
 * changes (a spec edit bumps the generation): retrying the same rejected create would loop.
 */
function stickyInvalidConfiguration(sandbox: Sandbox): string | undefined {
  const ready = findCondition(sandbox.status?.conditions, ConditionType.READY);
  if (ready?.reason !== SandboxReadyReason.INVALID_CONFIGURATION) return undefined;
  return ready.observedGeneration === sandbox.metadata.generation ? ready.message : undefined;
}

function ownedBy(obj: KubeObject, sandbox: Sandbox): boolean {
  return isControlledBy(obj, sandbox.metadata.uid);
}

function describeController(obj: KubeObject): string {
  const ref = controllerRefOf(obj);
  return ref ? `${ref.kind} "${ref.name}"` : 'nobody';
}

/** PVCs first: the Pod mounts them, and must never start on someone else's volume. */
function planPvcs(obs: Observed, actions: Action[]): Problem | undefined {
  const { sandbox } = obs;
  for (const vct of sandbox.spec.volumeClaimTemplates ?? []) {
    const name = pvcNameOf(vct, sandbox);
    const pvc = obs.pvcs.get(name);
    if (!pvc) {
      actions.push({ op: 'create', kind: 'pvc', object: buildPvc(sandbox, vct) });
    } else if (ownedBy(pvc, sandbox)) {
      continue;
    } else if (controllerRefOf(pvc)) {
      return { reason: SandboxReadyReason.RECONCILER_ERROR, message: `PersistentVolumeClaim "${name}" is controlled by ${describeController(pvc)}, not by this Sandbox` };
    } else if (isAdoptable(pvc, sandbox)) {
      actions.push({ op: 'patch', kind: 'pvc', name, patch: { metadata: adoptionMetadata(sandbox, pvc) } });
    } else {
      return { reason: SandboxReadyReason.RECONCILER_ERROR, message: refuseAdoption('PersistentVolumeClaim', name) };
    }
  }
  return undefined;
}

function refuseAdoption(kind: string, name: string): string {
  return `${kind} "${name}" exists and no controller owns it; label it agents.x-k8s.io/adoptable=true for this Sandbox to adopt it, or delete it`;
}

interface PodOutcome {
  /** The Pod whose state the status reports (controlled by this Sandbox, possibly just adopted). */
  pod?: Pod;
  ownedCount: number;
  notOwned: boolean;
  problem?: Problem;
  /** The problem is a refused adoption. */
  refused?: boolean;
  /** The Pod to fetch live before deciding on its adoption. */
  inspect?: string;
}

/**
 * `freezeMetadata`: leave an existing Pod's labels as they are (the Sandbox asks for the router's,
 * which must not reach a Pod that has them not).
 */
function planPod(obs: Observed, blocked: boolean, actions: Action[], freezeMetadata = false): PodOutcome {
  const { sandbox } = obs;
  const owned = obs.pods.filter((p) => ownedBy(p, sandbox));
  const annotated = sandbox.metadata.annotations?.[SandboxAnnotations.POD_NAME];
  const named = obs.pods.find((p) => p.metadata.name === (annotated ?? sandbox.metadata.name))
    ?? obs.pods.find((p) => p.metadata.name === sandbox.metadata.name);
  const foreignNamed = named && !ownedBy(named, sandbox) ? named : undefined;
  const setPodName = (value: string | null) => {
    if ((annotated ?? null) !== value) {
      actions.push({ op: 'patch-sandbox', patch: { metadata: { annotations: { [SandboxAnnotations.POD_NAME]: value } } } });
    }
  };

  if (isSuspended(sandbox)) {
    // Every Pod we control goes; several of them are no ambiguity when none should exist.
    for (const pod of owned) {
      if (!pod.metadata.deletionTimestamp) actions.push({ op: 'delete', kind: 'pod', name: pod.metadata.name, uid: pod.metadata.uid ?? '' });
    }
    // The annotation goes once our Pod is gone, so the Pod made on resume is named after the Sandbox.
    if (owned.length === 0 || foreignNamed) setPodName(null);
    return { pod: owned[0], ownedCount: owned.length, notOwned: foreignNamed !== undefined && owned.length === 0 };
  }

  if (owned.length > 1) {
    const names = owned.map((p) => p.metadata.name).sort().join(', ');
    return {
      ownedCount: owned.length,
      notOwned: false,
      problem: {
        reason: SandboxReadyReason.MULTIPLE_PODS,
        message: `${owned.length} Pods are controlled by this Sandbox (${names}); it will not pick one or create another until only one remains`,
      },
    };
  }
  if (owned.length === 1) {
    const pod = owned[0];
    const metadata = freezeMetadata ? undefined : podMetadataPatch(sandbox, pod);
    if (metadata) actions.push({ op: 'patch', kind: 'pod', name: pod.metadata.name, patch: { metadata } });
    setPodName(pod.metadata.name);
    return { pod, ownedCount: 1, notOwned: false };
  }
  if (foreignNamed) {
    const name = foreignNamed.metadata.name;
    if (controllerRefOf(foreignNamed)) {
      setPodName(null);
      return {
        ownedCount: 0,
        notOwned: true,
        problem: { reason: SandboxReadyReason.RECONCILER_ERROR, message: `Pod "${name}" is controlled by ${describeController(foreignNamed)}, not by this Sandbox`, podStep: true },
      };
    }
    const verdict = podAdoption(foreignNamed, nameHashOf(sandbox), buildPod(sandbox));
    if (verdict.verdict === 'inspect') return { ownedCount: 0, notOwned: true, inspect: name };
    if (verdict.verdict === 'refuse') {
      const problem: Problem = { reason: SandboxReadyReason.RECONCILER_ERROR, message: verdict.message, podStep: true };
      return { ownedCount: 0, notOwned: true, refused: true, problem };
    }
    const adoption = adoptionMetadata(sandbox, foreignNamed);
    const metadata = podMetadataPatch(sandbox, foreignNamed);
    actions.push({
      op: 'patch',
      kind: 'pod',
      name,
      patch: { metadata: { ...metadata, ...adoption, labels: { ...metadata?.labels, ...(adoption.labels as object) } } },
    });
    setPodName(name);
    const adopted: Pod = { ...foreignNamed, metadata: { ...foreignNamed.metadata, ownerReferences: adoption.ownerReferences as Pod['metadata']['ownerReferences'] } };
    return { pod: adopted, ownedCount: 1, notOwned: false };
  }
  if (blocked) return { ownedCount: 0, notOwned: false };
  // No Pod: create it under the Sandbox's name. A Pod that already exists but is missing from the
  // cache comes back as AlreadyExists, and reconcile.ts re-decides with the live object.
  actions.push({ op: 'create', kind: 'pod', object: buildPod(sandbox) });
  setPodName(sandbox.metadata.name);
  return { ownedCount: 0, notOwned: false };
}

interface ServiceOutcome {
  exists: boolean;
  required: boolean;
  problem?: Problem;
}

/**
 * The tri-state `spec.service`: true keeps a Service (created, adopted when headless and adoptable,
 * corrected on drift); false deletes ours; unset creates none but keeps and corrects one we own.
 */
function planService(obs: Observed, blocked: boolean, actions: Action[]): ServiceOutcome {
  const { sandbox } = obs;
  const want = sandbox.spec.service;
  const svc = obs.service;
  const name = sandbox.metadata.name;
  const owned = svc !== undefined && ownedBy(svc, sandbox);
  const foreign = svc !== undefined && !owned && controllerRefOf(svc) !== undefined;
  const foreignProblem = (): ServiceOutcome => ({
    exists: false,
    required: want === true,
    problem: { reason: SandboxReadyReason.RECONCILER_ERROR, message: `Service "${name}" is controlled by ${describeController(svc!)}, not by this Sandbox` },
  });

  if (want === false) {
    if (owned && !svc.metadata.deletionTimestamp) actions.push({ op: 'delete', kind: 'service', name, uid: svc.metadata.uid ?? '' });
    return { exists: false, required: false };
  }
  if (want === undefined) {
    if (foreign) return foreignProblem();
    if (!owned) return { exists: false, required: false };
    const drift = serviceDriftPatch(sandbox, svc, false);
    if (drift) actions.push({ op: 'patch', kind: 'service', name, patch: drift });
    return { exists: true, required: true };
  }
  if (blocked) return { exists: owned, required: true };
  if (!svc) {
    actions.push({ op: 'create', kind: 'service', object: buildService(sandbox) });
    return { exists: true, required: true };
  }
  if (owned) {
    const drift = serviceDriftPatch(sandbox, svc, true);
    if (drift) actions.push({ op: 'patch', kind: 'service', name, patch: drift });
    return { exists: true, required: true };
  }
  if (foreign) return foreignProblem();
  const clusterIP = svc.spec?.clusterIP;
  if (!isAdoptable(svc, sandbox) || (clusterIP && clusterIP !== 'None')) {
    return {
      exists: false,
      required: true,
      problem: { reason: SandboxReadyReason.RECONCILER_ERROR, message: `${refuseAdoption('Service', name)} (only a headless Service, clusterIP None, can be adopted)` },
    };
  }
  const drift = serviceDriftPatch(sandbox, svc, true) as { metadata?: { labels?: object }; spec?: object } | undefined;
  actions.push({ op: 'patch', kind: 'service', name, patch: { metadata: adoptionMetadata(sandbox, svc), ...(drift?.spec ? { spec: drift.spec } : {}) } });
  return { exists: true, required: true };
}

/**
 * Past shutdownTime: the Pod and Service go at once. Delete removes the Sandbox (its PVCs follow
 * by garbage collection); Retain keeps it with Ready=False/SandboxExpired and the live fields
 * cleared. Done in one pass, and idempotent, so a crash half-way is finished by the next pass.
 */
function decideExpired(obs: Observed): Plan {
  const { sandbox } = obs;
  if (sandbox.spec.shutdownPolicy === SandboxShutdownPolicy.DELETE) {
    // Deleting the owner is one write; the garbage collector takes the Pod, Service and PVCs.
    return { actions: [{ op: 'delete-sandbox', uid: sandbox.metadata.uid ?? '' }], status: sandbox.status ?? {}, writeStatus: false };
  }
  const actions: Action[] = [];
  for (const pod of obs.pods) {
    if (ownedBy(pod, sandbox) && !pod.metadata.deletionTimestamp) {
      actions.push({ op: 'delete', kind: 'pod', name: pod.metadata.name, uid: pod.metadata.uid ?? '' });
    }
  }
  const svc = obs.service;
  if (svc && ownedBy(svc, sandbox) && !svc.metadata.deletionTimestamp) {
    actions.push({ op: 'delete', kind: 'service', name: svc.metadata.name, uid: svc.metadata.uid ?? '' });
  }
  const status = expiredStatus(sandbox, obs.nowMs);
  return { actions, status, writeStatus: statusNeedsWrite(sandbox.status, status) };
}
