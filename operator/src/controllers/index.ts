/**
 * The controllers the `controller` command runs, in start order. A controller module exports a
 * ControllerFactory (operator/src/runtime/context.ts) and is added here; the factory runs once at
 * start-up, asks ctx.informers for what it reads, wires informer events to its queue
 * (Controller.watch) and returns a RunnableController, which the runtime starts once the caches
 * have synced and this replica leads.
 */
import { ControllerFactory } from '../runtime/context';
import { createSandboxController } from './sandbox/controller';

export const CONTROLLERS: ControllerFactory[] = [createSandboxController];
