/**
 * Wiring of the SandboxWarmPool controller: which pool each Sandbox, template and pool event
 * wakes, and the Sandbox events that settle the pools' member writes.
 */
import { ConditionType } from '#api/conditions';
import { KINDS } from '#api/groups';
import { SandboxLabels } from '#api/labels';
import { WarmPoolReconciler } from './reconcile';
import { type PoolFlags } from './types';
import { controllerRefOf, findCondition, refIsKind, type Sandbox, type SandboxClaim, type SandboxWarmPool } from '../../model';
import { scaleToZeroPeriodMs } from '../../model/warm-pool-scale';
import { podNamespace } from '../../runtime/connection';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import type { Flags } from '../../runtime/flags';
import { keyOf, type Store } from '../../runtime/types';
import type { ClaimsFirst } from '../claims-first';
import { POOLS_BY_HASH_INDEX, POOLS_BY_TEMPLATE_INDEX, extensionInformers } from '../extension-informers';
import { poolCreationsCounter, registerPoolGauges } from '../pool-metrics';
import { poolKeysOfPolicy, routerLocation } from '../template-policy';

export function poolFlagsOf(flags: Flags): PoolFlags {
  return {
    maxBatchSize: flags.number('sandbox-warm-pool-max-batch-size'),
    replenishDelayMs: flags.duration('sandbox-warm-pool-replenish-delay'),
    maxRefillRate: flags.number('sandbox-warm-pool-max-refill-rate'),
    readinessGraceMs: flags.duration('sandbox-warm-pool-readiness-grace-period'),
    unschedulableRecheckMs: flags.duration('sandbox-warm-pool-unschedulable-recheck-interval'),
    enableWarmPoolEviction: flags.boolean('enable-warm-pool-eviction'),
    claimsFirstMaxDeferMs: flags.duration('claims-first-max-defer'),
    statusWindowMs: flags.duration('sandbox-warm-pool-status-window'),
  };
}

/**
 * The pool keys a Sandbox concerns: the pool that controls it, or (an orphan with a membership
 * label) the pool that label names, which may adopt it.
 */
export function poolKeysOfSandbox(sandbox: Sandbox, pools: Pick<Store<SandboxWarmPool>, 'byIndex'>): string[] {
  const ns = sandbox.metadata.namespace ?? '';
  const ref = controllerRefOf(sandbox);
  if (ref) return refIsKind(ref, KINDS.warmPool) ? [`${ns}/${ref.name}`] : [];
  const label = sandbox.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX];
  return label ? pools.byIndex(POOLS_BY_HASH_INDEX, `${ns}/${label}`).map(keyOf) : [];
}

/**
 * The pool a new claim concerns, when that pool scales to zero: the claim moves its idle clock and
 * refills it if it is at zero. Other pools are not woken (their passes and status writes per claim
 * stay as they were).
 */
export function poolKeyOfClaim(claim: SandboxClaim, pools: Pick<Store<SandboxWarmPool>, 'get'>): string | undefined {
  const pool = pools.get(claim.metadata.namespace, claim.spec.warmPoolRef?.name ?? '');
  return pool && scaleToZeroPeriodMs(pool) !== undefined ? keyOf(pool) : undefined;
}

/**
 * The pool a new claim wakes: one that scales to zero (the claim moves its idle clock), or one
 * whose refill waits for its claims (`held`): one claim more may be more than its Ready members.
 */
export function poolKeyOfNewClaim(claim: SandboxClaim, pools: Pick<Store<SandboxWarmPool>, 'get'>, held: (poolKey: string) => boolean): string | undefined {
  const key = poolKeyOfClaim(claim, pools);
  if (key !== undefined) return key;
  const poolKey = `${claim.metadata.namespace}/${claim.spec.warmPoolRef?.name ?? ''}`;
  return held(poolKey) ? poolKey : undefined;
}

/**
 * Whether an update changes anything a pool pass reads: membership (labels, owners), deletion,
 * readiness or schedulability. The Sandbox controller's other status writes (pod IPs, service
 * names) would otherwise wake a pool pass over every member each time.
 */
export function poolRelevantChange(oldSb: Sandbox, newSb: Sandbox): boolean {
  const view = (s: Sandbox) => JSON.stringify([
    s.metadata.labels, s.metadata.ownerReferences, s.metadata.deletionTimestamp,
    findCondition(s.status?.conditions, ConditionType.READY), findCondition(s.status?.conditions, ConditionType.POD_SCHEDULED),
  ]);
  return view(oldSb) !== view(newSb);
}

/** `claimsFirst`: refill gives way to waiting claims. @default - refill never waits for claims */
export function createWarmPoolController(ctx: ControllerContext, claimsFirst?: ClaimsFirst): RunnableController {
  const { sandboxes, templates, pools, claims, networkPolicies } = extensionInformers(ctx);
  const reconciler = new WarmPoolReconciler({
    client: ctx.client,
    pools,
    templates,
    networkPolicies,
    routerPodLabels: routerLocation(ctx.flags, podNamespace()).routerPodLabels,
    sandboxes,
    claims,
    flags: poolFlagsOf(ctx.flags),
    now: () => ctx.clock.now(),
    elapsed: () => (ctx.intervalClock ?? ctx.clock).now(),
    log: ctx.log.child({ controller: 'sandboxwarmpool' }),
    creations: poolCreationsCounter(ctx.metrics.registry),
    ...(claimsFirst ? { claimPressure: claimsFirst.pressure } : {}),
  });
  registerPoolGauges(ctx.metrics.registry, pools);
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-warm-pool-concurrent-workers') });

  // A pool's delete too: the pass that finds it gone forgets its member writes and pacing.
  controller.watch(pools);
  // Every template event: a spec change may make members stale, a new template lets a pool create.
  controller.watch(templates, (t) => pools.byIndex(POOLS_BY_TEMPLATE_INDEX, keyOf(t)).map(keyOf));
  // A template's policy appearing lets its pools create; one going stops them.
  controller.watch(networkPolicies, (p) => poolKeysOfPolicy(p, templates, pools));
  // An update wakes the old object's pool too: a member a claim just took leaves it, and it must refill.
  controller.watch(sandboxes, (sb) => poolKeysOfSandbox(sb, pools), { update: poolRelevantChange });
  // A claim's creation only: later claim events neither move the idle clock nor add a claim.
  const held = (key: string) => reconciler.isHeldForClaims(key);
  controller.watch(claims, (c) => poolKeyOfNewClaim(c, pools, held), { update: () => false, delete: () => false });
  reconciler.follow(sandboxes);
  // Pools whose refill gave way to claims go on as soon as no claim waits.
  claimsFirst?.pressure.onCalm(() => {
    for (const key of reconciler.takeHeldForClaims()) controller.queue.add(key);
  });
  return controller;
}
