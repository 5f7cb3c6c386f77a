/**
 * Wiring of the SandboxClaim controller: its informers, which events wake which claims, and the
 * claims-first parts it takes (controllers/claims-first). The executor is reconcile.ts, the
 * decision plan.ts.
 */
import { ConditionType } from '#api/conditions';
import { KINDS } from '#api/groups';
import { readAllowedLabelDomains } from './adopt';
import { ClaimMetrics } from './metrics';
import { ClaimReconciler } from './reconcile';
import { controllerNameOfKind, findCondition, isReady, type Sandbox, type SandboxClaim } from '../../model';
import { podNamespace } from '../../runtime/connection';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller, onlyUpdates } from '../../runtime/controller';
import { keyOf, splitKey, type Store } from '../../runtime/types';
import type { ClaimsFirst } from '../claims-first';
import { CLAIMS_BY_POOL_INDEX, POOLS_BY_TEMPLATE_INDEX, extensionInformers } from '../extension-informers';
import { registerClaimGauges } from '../pool-metrics';
import { poolKeysOfPolicy, routerLocation } from '../template-policy';

/**
 * What of a claim's Sandbox the claim's status and expiry read: Ready and Finished, pod IPs,
 * serviceFQDN, deletion and ownership. Other writes (the Sandbox controller's annotations,
 * PodScheduled) would only wake a pass that writes nothing.
 */
export function claimRelevantChange(oldSb: Sandbox, newSb: Sandbox): boolean {
  const view = (s: Sandbox) => JSON.stringify([
    findCondition(s.status?.conditions, ConditionType.READY), findCondition(s.status?.conditions, ConditionType.FINISHED),
    s.status?.podIPs, s.status?.serviceFQDN, s.metadata.deletionTimestamp, s.metadata.ownerReferences,
  ]);
  return view(oldSb) !== view(newSb);
}

/** A pool member just became worth taking (got a Pod IP, or became Ready): claims waiting on its pool should look now. */
export function memberBecameUsable(oldSb: Sandbox, newSb: Sandbox): boolean {
  const hasIp = (s: Sandbox) => (s.status?.podIPs?.length ?? 0) > 0;
  return (!hasIp(oldSb) && hasIp(newSb)) || (!isReady(oldSb) && isReady(newSb));
}

/** Claims of `<namespace>/<pool>` that have no Sandbox yet. */
export function waitingClaimKeys(claims: Pick<Store<SandboxClaim>, 'byIndex'>, namespace: string, pool: string): string[] {
  return claims.byIndex(CLAIMS_BY_POOL_INDEX, `${namespace}/${pool}`)
    .filter((c) => !c.metadata.deletionTimestamp && !c.status?.sandbox?.name)
    .map(keyOf);
}

const claimKeyOf = (sb: Sandbox): string | undefined => {
  const claim = controllerNameOfKind(sb, KINDS.claim);
  return claim === undefined ? undefined : `${sb.metadata.namespace}/${claim}`;
};

/** `claimsFirst`: this controller feeds it, and holds its annotations and Events while other claims wait. @default - no claims-first */
export function createClaimController(ctx: ControllerContext, claimsFirst?: ClaimsFirst): RunnableController {
  const { sandboxes, templates, pools, claims, networkPolicies } = extensionInformers(ctx);
  const log = ctx.log.child({ controller: 'sandboxclaim' });
  registerClaimGauges(ctx.metrics.registry, claims, () => ctx.clock.now());
  const allowedLabelDomains = readAllowedLabelDomains();
  if (allowedLabelDomains) log.info({ allowedLabelDomains }, 'label domains allowed in additionalPodMetadata');
  const wake = (key: string) => controller.queue.add(key);
  const reconciler = new ClaimReconciler({
    client: ctx.client,
    claims,
    pools,
    templates,
    networkPolicies,
    routerPodLabels: routerLocation(ctx.flags, podNamespace()).routerPodLabels,
    sandboxes,
    metrics: new ClaimMetrics(ctx.metrics.registry),
    allowedLabelDomains,
    disableEvents: ctx.flags.boolean('disable-claim-events'),
    disableAnnotations: ctx.flags.boolean('disable-claim-observability-annotations'),
    now: () => ctx.clock.now(),
    elapsed: () => (ctx.intervalClock ?? ctx.clock).now(),
    log,
    ...claimsFirst?.claimWrites(wake),
  });
  // First, so that a pass woken by an event already sees the expectations it settles.
  reconciler.follow(claims, sandboxes);
  claimsFirst?.pressure.follow(claims, sandboxes);
  const waitingOf = (namespace: string | undefined, pool: string) => waitingClaimKeys(claims, namespace ?? '', pool);
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-claim-concurrent-workers') });
  return controller
    .watch(claims)
    .watch(sandboxes, claimKeyOf, { update: claimRelevantChange })
    // Waiting claims poll every 500 ms as a fallback; this wakes them as soon as a member is usable.
    .watch(sandboxes, (sb) => {
      const pool = controllerNameOfKind(sb, KINDS.warmPool);
      return pool ? waitingOf(sb.metadata.namespace, pool) : undefined;
    }, onlyUpdates((oldSb, sb) => controllerNameOfKind(sb, KINDS.warmPool) !== undefined && memberBecameUsable(oldSb, sb)))
    // A previous claim's namesake is gone: a claim of that name waiting to start cold may proceed.
    .watch(sandboxes, (sb) => (claims.get(sb.metadata.namespace, sb.metadata.name) ? keyOf(sb) : undefined),
      { add: () => false, update: () => false })
    // Spec changes only: status churn of a busy pool must not fan out to its claims.
    .watch(pools, (p) => waitingOf(p.metadata.namespace, p.metadata.name),
      { update: (oldP, p) => oldP.metadata.generation !== p.metadata.generation })
    .watch(templates, (t) => pools.byIndex(POOLS_BY_TEMPLATE_INDEX, keyOf(t)).flatMap((p) => waitingOf(p.metadata.namespace, p.metadata.name)),
      { update: () => false, delete: () => false })
    // A template's NetworkPolicy showing lets the claims waiting to start cold from it proceed.
    .watch(networkPolicies, (p) => poolKeysOfPolicy(p, templates, pools).flatMap((key) => waitingOf(splitKey(key).namespace, splitKey(key).name)),
      { delete: () => false });
}
