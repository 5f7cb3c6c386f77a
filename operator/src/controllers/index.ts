/**
 * The controllers the `controller` command runs, in start order. A controller module exports a
 * ControllerFactory (operator/src/runtime/context.ts) and is added here; the factory runs once at
 * start-up, asks ctx.informers for what it reads, wires informer events to its queue
 * (Controller.watch) and returns a RunnableController, which the runtime starts once the caches
 * have synced and this replica leads.
 */
import { ControllerFactory } from '../runtime/context';
import { createClaimController } from './claim/controller';
import type { OperatorFlags } from '../runtime/flags';
import { createSandboxController } from './sandbox/controller';
import { createTemplateController } from './template/controller';
import { createWarmPoolController } from './warm-pool/controller';

export const CONTROLLERS: ControllerFactory[] = [createSandboxController];

/**
 * The SandboxTemplate, SandboxWarmPool and SandboxClaim controllers. As upstream, they run only
 * with --extensions=true: their CRDs (and RBAC) are optional parts of an install, and asking for
 * an informer of a type the API server does not serve would keep the caches from ever syncing.
 */
export const EXTENSION_CONTROLLERS: ControllerFactory[] = [createTemplateController, createWarmPoolController, createClaimController];

/** The factories to run with these flags. */
export function controllersFor(flags: OperatorFlags): ControllerFactory[] {
  return flags.boolean('extensions') ? [...CONTROLLERS, ...EXTENSION_CONTROLLERS] : CONTROLLERS;
}
