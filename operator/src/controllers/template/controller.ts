/**
 * Wiring of the SandboxTemplate controller: templates and NetworkPolicies in, one key per template.
 */
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { podNamespace } from '../../runtime/connection';
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import { extensionInformers, POLICIES_BY_TEMPLATE_HASH_INDEX } from '../extension-informers';
import { routerLocation, templateKeysOfPolicy } from '../template-policy';
import { TemplateReconciler } from './reconcile';
import { type NetworkPolicy, type Sandbox } from '../../model';
import { type Store } from '../../runtime/types';

/**
 * The templates a Sandbox was built from, whose orphaned policy its deletion may free: the one its
 * `sandbox-template-ref` annotation names, and those whose policy selects its template-ref-hash
 * label (a Sandbox made without the annotation still keeps the policy, so its deletion must wake it).
 */
export function templateKeysOfSandbox(sandbox: Sandbox, policies: Pick<Store<NetworkPolicy>, 'byIndex'>): string[] {
  const ns = sandbox.metadata.namespace ?? '';
  const keys = new Set<string>();
  const named = sandbox.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
  if (named) keys.add(`${ns}/${named}`);
  const hash = sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];
  for (const policy of hash ? policies.byIndex(POLICIES_BY_TEMPLATE_HASH_INDEX, `${ns}/${hash}`) : []) {
    const template = policy.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
    if (template) keys.add(`${ns}/${template}`);
  }
  return [...keys];
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
    elapsed: () => (ctx.intervalClock ?? ctx.clock).now(),
    log: ctx.log.child({ controller: 'sandboxtemplate' }),
  });
  const controller = new Controller(ctx, reconciler, { workers: ctx.flags.number('sandbox-template-concurrent-workers') });
  controller.watch(templates).watch(networkPolicies, (p) => templateKeysOfPolicy(p, templates));
  // Only deletions: the last Sandbox of a deleted template going lets its policy go.
  controller.watch(sandboxes, (sb) => templateKeysOfSandbox(sb, networkPolicies), { add: () => false, update: () => false });
  reconciler.follow(networkPolicies);
  return controller;
}
