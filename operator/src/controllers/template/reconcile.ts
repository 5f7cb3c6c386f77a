/**
 * The thin I/O half of the SandboxTemplate controller: the template-ref-hash label on the template
 * and its `<template>-network-policy`, as decided by desired.ts/decide.ts from the caches.
 */
import { networkPolicyAction } from './decide';
import { templateRefHashLabelPatch, type NetworkPolicyOptions } from './desired';
import { networkPolicyNameFor } from '../../../../src/api/network-policy-defaults';
import { type NetworkPolicy, RESOURCES, type SandboxTemplate } from '../../model';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';
import { ApiError, splitKey, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';

export const TEMPLATE_FIELD_MANAGER = 'sandboxtemplate-controller';

/** After a write raced a stale cache, look again soon; the watch event usually arrives first. */
const RACE_RETRY_MS = 250;

export interface TemplateReconcilerOptions extends NetworkPolicyOptions {
  readonly client: KubeClient;
  readonly templates: Store<SandboxTemplate>;
  readonly networkPolicies: Store<NetworkPolicy>;
  readonly log?: Logger;
}

export class TemplateReconciler implements Reconciler {
  public readonly name = 'sandboxtemplate';
  private readonly log: Logger;
  /** Templates whose ownership conflict was reported, so the Warning is emitted once per conflict, not per pass. */
  private readonly reportedConflicts = new Set<string>();

  public constructor(private readonly opts: TemplateReconcilerOptions) {
    this.log = opts.log ?? SILENT_LOGGER;
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const template = this.opts.templates.get(namespace, name);
    if (!template || template.metadata.deletionTimestamp) {
      this.reportedConflicts.delete(key);
      return;
    }
    const write = { fieldManager: TEMPLATE_FIELD_MANAGER };
    const { client } = this.opts;
    try {
      const labelPatch = templateRefHashLabelPatch(template);
      if (labelPatch) await client.patch(RESOURCES.templates, namespace, name, 'merge', labelPatch, write);

      const existing = this.opts.networkPolicies.get(namespace, networkPolicyNameFor(name));
      const action = networkPolicyAction(template, existing, { routerNamespace: this.opts.routerNamespace });
      if (action.type !== 'conflict') this.reportedConflicts.delete(key);
      switch (action.type) {
        case 'create':
          await client.create(RESOURCES.networkPolicies, namespace, action.object, write);
          break;
        case 'update':
          await client.update(RESOURCES.networkPolicies, namespace, action.object, write);
          break;
        case 'delete':
          await client.delete(RESOURCES.networkPolicies, namespace, action.name, { uid: action.uid });
          break;
        case 'conflict':
          // Retrying cannot fix this (upstream backs off forever); the policy's events bring the template back.
          if (!this.reportedConflicts.has(key)) {
            this.reportedConflicts.add(key);
            client.event(template, 'Warning', 'NetworkPolicyConflict', 'Reconciling', action.message);
            this.log.warn({ template: key }, action.message);
          }
          break;
        case 'none':
          break;
      }
    } catch (error) {
      if (error instanceof ApiError && (error.notFound || error.conflict || error.alreadyExists)) {
        // The cache is behind the server (template gone, policy changed or created meanwhile).
        this.log.debug({ template: key, err: error }, 'template write raced the cache; retrying');
        return { requeueAfterMs: RACE_RETRY_MS };
      }
      throw error;
    }
    return undefined;
  }
}
