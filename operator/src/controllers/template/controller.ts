/**
 * Wiring of the SandboxTemplate controller: templates and NetworkPolicies in, one key per template.
 */
import { parseLabelList } from '../../../../src/api/controller-flags';
import { DEFAULT_SYSTEM_NAMESPACE, NETWORK_POLICY_NAME_SUFFIX } from '../../../../src/api/labels';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import type { OperatorFlags } from '../../runtime/flags';
import { podNamespace } from '../../runtime/kubeconfig';
import { extensionInformers } from '../extension-informers';
import type { NetworkPolicyOptions } from './desired';
import { TemplateReconciler } from './reconcile';
import { type NetworkPolicy } from '../../model';

/**
 * The template a NetworkPolicy event concerns: the one its name is derived from, whoever owns it.
 * Owned policies map back to their template this way too, and a foreign policy blocking a template
 * wakes it when it goes, so the template can create its own.
 */
export function templateKeyOfPolicy(policy: NetworkPolicy): string | undefined {
  const name = policy.metadata.name;
  if (!name.endsWith(NETWORK_POLICY_NAME_SUFFIX) || name.length === NETWORK_POLICY_NAME_SUFFIX.length) return undefined;
  return `${policy.metadata.namespace ?? ''}/${name.slice(0, -NETWORK_POLICY_NAME_SUFFIX.length)}`;
}

/**
 * Where the router Pods run, for the default policy: `--router-namespace` (the install bundle sets
 * it to where it deploys the router), else the operator's own namespace; `--router-pod-labels`,
 * else app=sandbox-router.
 */
export function routerLocation(flags: OperatorFlags, ownNamespace: string | undefined): NetworkPolicyOptions {
  const labels = parseLabelList(flags.string('router-pod-labels'));
  // The flag table validated the value at startup; an unparsable one cannot get here.
  const routerPodLabels = typeof labels === 'string' || Object.keys(labels).length === 0 ? undefined : labels;
  return { routerNamespace: flags.string('router-namespace') || ownNamespace || DEFAULT_SYSTEM_NAMESPACE, routerPodLabels };
}

export function createTemplateController(ctx: ControllerContext): RunnableController {
  const { templates, networkPolicies } = extensionInformers(ctx);
  const reconciler = new TemplateReconciler({
    client: ctx.client,
    templates,
    networkPolicies,
    ...routerLocation(ctx.flags, podNamespace()),
    now: () => ctx.clock.now(),
    log: ctx.log.child({ controller: 'sandboxtemplate' }),
  });
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-template-concurrent-workers') });
  controller.watch(templates).watch(networkPolicies, templateKeyOfPolicy);
  reconciler.follow(networkPolicies);
  return controller;
}
