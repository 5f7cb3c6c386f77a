/**
 * Wiring of the SandboxTemplate controller: templates and NetworkPolicies in, one key per template.
 */
import type { ControllerContext, RunnableController } from '../../runtime/context';
import { Controller } from '../../runtime/controller';
import { podNamespace } from '../../runtime/kubeconfig';
import { extensionInformers } from '../extension-informers';
import { routerLocation, templateKeysOfPolicy } from '../template-policy';
import { TemplateReconciler } from './reconcile';
import { SandboxAnnotations } from '../../../../src/api/labels';
import { type Sandbox } from '../../model';

/** The template a Sandbox was built from (its `sandbox-template-ref` annotation), whose orphaned policy its deletion may free. */
export function templateKeyOfSandbox(sandbox: Sandbox): string | undefined {
  const named = sandbox.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
  return named ? `${sandbox.metadata.namespace ?? ''}/${named}` : undefined;
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
