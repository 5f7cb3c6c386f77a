/**
 * Wiring of the SandboxClaim controller: which claims each claim, Sandbox, pool and template event
 * wakes, and the adoption bookkeeping the Sandbox events settle.
 */
import * as fs from 'node:fs';
import { ClaimMetrics } from './metrics';
import { ClaimReconciler } from './reconcile';
import { ConditionType } from '../../../../src/api/conditions';
import { KINDS } from '../../../../src/api/groups';
import { controllerRefOf, findCondition, refIsKind, type Sandbox, type SandboxClaim } from '../../model';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import { keyOf, type Store } from '../../runtime/types';
import { CLAIMS_BY_POOL_INDEX, POOLS_BY_TEMPLATE_INDEX, extensionInformers } from '../extension-informers';

/** Mounted from the optional ConfigMap `agent-sandbox-config`, as upstream. */
export const ALLOWED_LABEL_DOMAINS_FILE = '/etc/sandbox-config/allowed-label-domains';

/** The allow-list of label domains for additionalPodMetadata (comma or newline separated), or undefined for the default. */
export function readAllowedLabelDomains(file = ALLOWED_LABEL_DOMAINS_FILE): string[] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const domains = text.split(/[,\n]/).map((d) => d.trim()).filter(Boolean);
  return domains.length > 0 ? domains : undefined;
}

/**
 * What of a claim's Sandbox the claim's status and expiry read: Ready and Finished, pod IPs,
 * deletion and ownership. Other writes (the Sandbox controller's annotations, PodScheduled) would
 * only wake a pass that writes nothing.
 */
export function claimRelevantChange(oldSb: Sandbox, newSb: Sandbox): boolean {
  const view = (s: Sandbox) => JSON.stringify([
    findCondition(s.status?.conditions, ConditionType.READY), findCondition(s.status?.conditions, ConditionType.FINISHED),
    s.status?.podIPs, s.metadata.deletionTimestamp, s.metadata.ownerReferences,
  ]);
  return view(oldSb) !== view(newSb);
}

/** A pool member just became worth taking (got a Pod IP, or became Ready): claims waiting on its pool should look now. */
export function memberBecameUsable(oldSb: Sandbox, newSb: Sandbox): boolean {
  const ready = (s: Sandbox) => findCondition(s.status?.conditions, ConditionType.READY)?.status === 'True';
  const hasIp = (s: Sandbox) => (s.status?.podIPs?.length ?? 0) > 0;
  return (!hasIp(oldSb) && hasIp(newSb)) || (!ready(oldSb) && ready(newSb));
}

/** Claims of `<namespace>/<pool>` that have no Sandbox yet. */
export function waitingClaimKeys(claims: Pick<Store<SandboxClaim>, 'byIndex'>, namespace: string, pool: string): string[] {
  return claims.byIndex(CLAIMS_BY_POOL_INDEX, `${namespace}/${pool}`)
    .filter((c) => !c.metadata.deletionTimestamp && !c.status?.sandbox?.name)
    .map(keyOf);
}

export function createClaimController(ctx: ControllerContext): RunnableController {
  const { sandboxes, templates, pools, claims } = extensionInformers(ctx);
  const log = ctx.log.child({ controller: 'sandboxclaim' });
  const allowedLabelDomains = readAllowedLabelDomains();
  if (allowedLabelDomains) log.info({ allowedLabelDomains }, 'label domains allowed in additionalPodMetadata');
  const reconciler = new ClaimReconciler({
    client: ctx.client,
    claims,
    pools,
    templates,
    sandboxes,
    metrics: new ClaimMetrics(ctx.metrics.registry),
    allowedLabelDomains,
    disableEvents: ctx.flags.boolean('disable-claim-events'),
    disableAnnotations: ctx.flags.boolean('disable-claim-observability-annotations'),
    now: () => ctx.clock.now(),
    log,
  });
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-claim-concurrent-workers') });
  const enqueue = (keys: Iterable<string>) => {
    for (const k of keys) controller.queue.add(k);
  };

  claims.addHandlers({
    onAdd: (c) => {
      reconciler.noteObserved(c);
      controller.queue.add(keyOf(c));
    },
    onUpdate: (_old, c) => controller.queue.add(keyOf(c)),
    onDelete: (c) => reconciler.forgetClaim(c.metadata.uid),
  });

  const claimKeyOf = (sb: Sandbox): string | undefined => {
    const ref = controllerRefOf(sb);
    return ref && refIsKind(ref, KINDS.claim) ? `${sb.metadata.namespace}/${ref.name}` : undefined;
  };
  const poolNameOf = (sb: Sandbox): string | undefined => {
    const ref = controllerRefOf(sb);
    return ref && refIsKind(ref, KINDS.warmPool) ? ref.name : undefined;
  };
  sandboxes.addHandlers({
    onAdd: (sb) => {
      reconciler.observeSandbox(sb, false, poolNameOf(sb) !== undefined);
      const key = claimKeyOf(sb);
      if (key) controller.queue.add(key);
    },
    onUpdate: (oldSb, sb) => {
      const pool = poolNameOf(sb);
      reconciler.observeSandbox(sb, false, pool !== undefined);
      if (claimRelevantChange(oldSb, sb)) enqueue(new Set([claimKeyOf(oldSb), claimKeyOf(sb)].filter((k): k is string => k !== undefined)));
      // Waiting claims poll every 500 ms as a fallback; this wakes them as soon as a member is usable.
      if (pool && memberBecameUsable(oldSb, sb)) enqueue(waitingClaimKeys(claims, sb.metadata.namespace ?? '', pool));
    },
    onDelete: (sb) => {
      reconciler.observeSandbox(sb, true, false);
      const key = claimKeyOf(sb);
      if (key) controller.queue.add(key);
      // A previous claim's namesake is gone: a claim of that name waiting to start cold may proceed.
      if (claims.get(sb.metadata.namespace, sb.metadata.name)) controller.queue.add(`${sb.metadata.namespace}/${sb.metadata.name}`);
    },
  });

  const poolChanged = (p: { metadata: { namespace?: string; name: string } }) => enqueue(waitingClaimKeys(claims, p.metadata.namespace ?? '', p.metadata.name));
  pools.addHandlers({
    onAdd: poolChanged,
    // Spec changes only: status churn of a busy pool must not fan out to its claims.
    onUpdate: (oldP, p) => {
      if (oldP.metadata.generation !== p.metadata.generation) poolChanged(p);
    },
    onDelete: poolChanged,
  });
  templates.addHandlers({
    onAdd: (t) => {
      for (const p of pools.byIndex(POOLS_BY_TEMPLATE_INDEX, keyOf(t))) poolChanged(p);
    },
  });
  return controller;
}
