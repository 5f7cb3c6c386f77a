/**
 * The controllers the `controller` command runs, in start order. A controller module exports a
 * factory `(ctx: ControllerContext, ...) => RunnableController` (operator/src/runtime/context.ts)
 * and is created here; the factory runs once at start-up, asks ctx.informers for what it reads,
 * wires informer events to its queue (Controller.watch) and returns a RunnableController, which the
 * runtime starts once the caches have synced and this replica leads.
 *
 * The claims-first policy (./claims-first) is created here too, once, and handed to the
 * controllers that take part in it.
 */
import { createClaimController } from './claim/controller';
import { ClaimsFirst } from './claims-first';
import { createSandboxController } from './sandbox/controller';
import { createTemplateController } from './template/controller';
import { createWarmPoolController } from './warm-pool/controller';
import type { ControllerContext, RunnableController } from '../runtime/context';

/**
 * The controllers to run with `ctx.flags`: the Sandbox controller always; the SandboxTemplate,
 * SandboxWarmPool and SandboxClaim controllers only with --extensions=true. As upstream: their CRDs
 * (and RBAC) are optional parts of an install, and asking for an informer of a type the API server
 * does not serve would keep the caches from ever syncing.
 */
export function createControllers(ctx: ControllerContext): RunnableController[] {
  const claimsFirst = ClaimsFirst.of(ctx);
  const controllers = [createSandboxController(ctx, claimsFirst)];
  if (ctx.flags.boolean('extensions')) {
    controllers.push(createTemplateController(ctx), createWarmPoolController(ctx, claimsFirst), createClaimController(ctx, claimsFirst));
  }
  return controllers;
}
