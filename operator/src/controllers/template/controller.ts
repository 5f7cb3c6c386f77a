/**
 * Wiring of the SandboxTemplate controller: templates and NetworkPolicies in, one key per template.
 */
import { parseLabelList } from '../../../../src/api/controller-flags';
import { DEFAULT_SYSTEM_NAMESPACE, SandboxAnnotations } from '../../../../src/api/labels';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import type { OperatorFlags } from '../../runtime/flags';
import { podNamespace } from '../../runtime/kubeconfig';
import { extensionInformers, TEMPLATES_BY_POLICY_NAME_INDEX } from '../extension-informers';
import type { NetworkPolicyOptions } from './desired';
import { TemplateReconciler } from './reconcile';
import { type NetworkPolicy, type Sandbox, type SandboxTemplate } from '../../model';
import { keyOf, type Store } from '../../runtime/types';

/**
 * The template a NetworkPolicy event concerns: the one its `sandbox-template-ref` annotation
 * names (the operator's policies, also once the template is gone, so the policy can be removed),
 * else the one whose policy name it has (a policy someone else made under that name blocks the
 * template, and wakes it when it goes, so the template can create its own).
 */
export function templateKeysOfPolicy(policy: NetworkPolicy, templates: Pick<Store<SandboxTemplate>, 'byIndex'>): string[] {
  const ns = policy.metadata.namespace ?? '';
  const keys = new Set(templates.byIndex(TEMPLATES_BY_POLICY_NAME_INDEX, `${ns}/${policy.metadata.name}`).map(keyOf));
  const named = policy.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
  if (named) keys.add(`${ns}/${named}`);
  return [...keys];
}

/** The template a Sandbox was built from (its `sandbox-template-ref` annotation), whose orphaned policy its deletion may free. */
export function templateKeyOfSandbox(sandbox: Sandbox): string | undefined {
  const named = sandbox.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
  return named ? `${sandbox.metadata.namespace ?? ''}/${named}` : undefined;
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
  const { templates, networkPolicies, sandboxes } = extensionInformers(ctx);
  const reconciler = new TemplateReconciler({
    client: ctx.client,
    templates,
    networkPolicies,
    sandboxes,
    ...routerLocation(ctx.flags, podNamespace()),
    now: () => ctx.clock.now(),
    log: ctx.log.child({ controller: 'sandboxtemplate' }),
  });
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-template-concurrent-workers') });
  controller.watch(templates).watch(networkPolicies, (p) => templateKeysOfPolicy(p, templates));
  // Only deletions: the last Sandbox of a deleted template going lets its policy go.
  controller.watch(sandboxes, templateKeyOfSandbox, { add: () => false, update: () => false });
  reconciler.follow(networkPolicies);
  return controller;
}
