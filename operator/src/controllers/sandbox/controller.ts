/**
 * Wiring of the Sandbox controller: the informers it reads (Sandboxes; Pods, Services and PVCs
 * carrying the sandbox-name-hash label), their indexes, and which Sandbox each child event wakes.
 */
import { Counter, type Registry } from 'prom-client';
import { KINDS } from '#api/groups';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { SandboxReconciler } from './reconcile';
import {
  CONTROLLER_UID_INDEX, controllerNameOfKind, controllerRefOf, controllerUidIndex, type PersistentVolumeClaim, type Pod, RESOURCES,
  SANDBOX_SPEC_SHARING, type Sandbox, type Service, slimPod,
} from '../../model';
import { podNamespace } from '../../runtime/connection';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import type { KubeObject } from '../../runtime/types';
import type { ClaimsFirst } from '../claims-first';
import { routerLocation } from '../template-policy';

/** Index of Sandboxes by `<namespace>/<NameHash(name)>`: maps an unowned labeled child back to its Sandbox. */
export const NAME_HASH_INDEX = 'namespace-name-hash';

/** Server-side filter of every child informer: only objects carrying the tracking label. */
export const TRACKED_CHILDREN_SELECTOR = SandboxLabels.SANDBOX_NAME_HASH;

/**
 * The Sandbox keys a child's event wakes: its controller when that is a Sandbox, else (unowned or
 * foreign, but carrying the tracking label) every Sandbox whose name hash the label names, so it
 * can adopt the child or report it as blocking.
 */
export function childOwnerKeys(obj: KubeObject, sandboxesByHash: (namespaceHash: string) => Sandbox[]): string[] {
  const ns = obj.metadata.namespace ?? '';
  const owner = controllerNameOfKind(obj, KINDS.sandbox);
  if (owner !== undefined) return [`${ns}/${owner}`];
  const hash = obj.metadata.labels?.[SandboxLabels.SANDBOX_NAME_HASH];
  if (hash === undefined) return [];
  return sandboxesByHash(`${ns}/${hash}`).map((sb) => `${ns}/${sb.metadata.name}`);
}

const IDLE_SUSPENSIONS = 'agent_sandbox_idle_suspensions_total';

/** The counter of idle suspensions (ours); one per registry. */
export function idleSuspensionsCounter(registry: Registry): Counter<'namespace'> {
  const existing = registry.getSingleMetric(IDLE_SUSPENSIONS);
  if (existing) return existing as Counter<'namespace'>;
  return new Counter({ name: IDLE_SUSPENSIONS, help: 'Sandboxes suspended by the operator under their idlePolicy', labelNames: ['namespace'], registers: [registry] });
}

/** `claimsFirst`: bookkeeping writes give way to waiting claims. @default - nothing waits for claims */
export function createSandboxController(ctx: ControllerContext, claimsFirst?: ClaimsFirst): RunnableController {
  const childIndexes = { [CONTROLLER_UID_INDEX]: controllerUidIndex };
  const sandboxes = ctx.informers.forResource<Sandbox>(RESOURCES.sandboxes, {
    transform: SANDBOX_SPEC_SHARING.transform,
    indexes: { [NAME_HASH_INDEX]: (sb) => [`${sb.metadata.namespace}/${NameHash.of(sb.metadata.name)}`] },
  });
  const pods = ctx.informers.forResource<Pod>(RESOURCES.pods, {
    labelSelector: TRACKED_CHILDREN_SELECTOR,
    transform: slimPod,
    indexes: childIndexes,
  });
  const services = ctx.informers.forResource<Service>(RESOURCES.services, { labelSelector: TRACKED_CHILDREN_SELECTOR, indexes: childIndexes });
  // Upstream does not watch PVCs; we do, so a PVC deleted or taken over is noticed at once.
  const pvcs = ctx.informers.forResource<PersistentVolumeClaim>(RESOURCES.pvcs, { labelSelector: TRACKED_CHILDREN_SELECTOR, indexes: childIndexes });

  const wake = (key: string) => controller.queue.add(key);
  const idleSuspensions = idleSuspensionsCounter(ctx.metrics.registry);
  const reconciler = new SandboxReconciler({
    client: ctx.client,
    sandboxes,
    pods,
    services,
    pvcs,
    clusterDomain: ctx.flags.string('cluster-domain'),
    routerPodLabels: routerLocation(ctx.flags, podNamespace()).routerPodLabels,
    progressStatusWindowMs: ctx.flags.number('sandbox-progress-status-window'),
    warmMemberProgressWindowMs: ctx.flags.number('sandbox-warm-member-progress-window'),
    now: () => ctx.clock.now(),
    elapsed: () => (ctx.intervalClock ?? ctx.clock).now(),
    log: ctx.log.child({ controller: 'sandbox' }),
    deferral: claimsFirst?.deferral(wake),
    idleSuspended: (sb: Sandbox) => idleSuspensions.inc({ namespace: sb.metadata.namespace ?? '' }),
    ...(claimsFirst ? { membersWanted: (pool: string) => claimsFirst.pressure.membersWanted(pool) } : {}),
  });
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-concurrent-workers') });

  const ownerKeys = (obj: KubeObject) => childOwnerKeys(obj, (nsHash) => sandboxes.byIndex(NAME_HASH_INDEX, nsHash));
  controller.watch(sandboxes).watch(pods, ownerKeys).watch(services, ownerKeys).watch(pvcs, ownerKeys);
  reconciler.follow('pod', pods);
  reconciler.follow('service', services);
  reconciler.follow('pvc', pvcs);
  return controller;
}
