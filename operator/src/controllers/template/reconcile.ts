/**
 * The thin I/O half of the SandboxTemplate controller: the template-ref-hash label on the template
 * and its `<template>-network-policy`, as decided by desired.ts/plan.ts from the caches, or from
 * our own writes while the caches have not shown them.
 */
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { networkPolicyNameFor } from '#api/network-policy-defaults';
import { TEMPLATE_HASH_INDEX } from '../extension-informers';
import { templateRefHashLabelPatch, type NetworkPolicyOptions } from './desired';
import { networkPolicyAction, orphanedPolicyAction, templateConditions } from './plan';
import { type NetworkPolicy, RESOURCES, type Sandbox, type SandboxTemplate, sameConditions } from '../../model';
import { RACE_RETRY_MS } from '../../runtime/controller';
import { cacheShows, decideOn, Expectations, OwnWrites, type UnseenWrite } from '../../runtime/expectations';
import { SILENT_LOGGER, type Logger } from '../../runtime/log';
import { ApiError, keyOf, splitKey, type Informer, type KubeClient, type Reconciler, type ReconcileResult, type Store } from '../../runtime/types';

export const TEMPLATE_FIELD_MANAGER = 'sandboxtemplate-controller';
/**
 * A deleted template's policy was kept because the server shows a Sandbox the cache did not: look
 * again after this long, in case that Sandbox's events never reach this key.
 */
export const LIVE_CHECK_RETRY_MS = 30_000;


export interface TemplateReconcilerOptions extends NetworkPolicyOptions {
  readonly client: KubeClient;
  readonly templates: Store<SandboxTemplate>;
  readonly networkPolicies: Store<NetworkPolicy>;
  /** Must carry TEMPLATE_HASH_INDEX: the Sandboxes built from a template keep its policy after it is gone. */
  readonly sandboxes: Store<Sandbox>;
  readonly now?: () => number;
  /**
   * The clock of intervals this controller measures itself (how long a write may wait for the cache):
   * monotonic in the process, so a wall-clock step neither ends them at once nor stretches them by
   * the step. @default now
   */
  readonly elapsed?: () => number;
  readonly log?: Logger;
}

export class TemplateReconciler implements Reconciler {
  public readonly name = 'sandboxtemplate';
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly log: Logger;
  /** Templates whose ownership conflict was reported, so the Warning is emitted once per conflict, not per pass. */
  private readonly reportedConflicts = new Set<string>();
  /**
   * Our label patches the template cache has not shown. The patch wakes the template, and a pass
   * woken by the policy's event before the template's own would otherwise patch again.
   */
  private readonly templateWrites = new OwnWrites<SandboxTemplate>();
  /**
   * Our policy creates, updates and deletes the policy cache has not shown, by policy key. The
   * template's own label patch wakes it while its new policy's event may still be on the way; a
   * pass deciding on the cache alone would create it again and lose a round trip to AlreadyExists.
   */
  private readonly policyWrites = new Expectations<UnseenWrite<NetworkPolicy>, NetworkPolicy>({ isShown: cacheShows });

  public constructor(private readonly opts: TemplateReconcilerOptions) {
    this.now = opts.now ?? Date.now;
    this.elapsed = opts.elapsed ?? this.now;
    this.log = opts.log ?? SILENT_LOGGER;
  }

  /** Whether the server (not the cache) holds a Sandbox labelled with template-ref hash `hash`. */
  private async sandboxesBuiltFrom(namespace: string | undefined, hash: string): Promise<boolean> {
    const found = await this.opts.client.list<Sandbox>(RESOURCES.sandboxes, namespace,
      { labelSelector: `${SandboxLabels.SANDBOX_TEMPLATE_REF_HASH}=${hash}`, limit: 1 });
    return found.items.length > 0;
  }

  /** Settle the policy writes from the NetworkPolicy informer's events. */
  public follow(informer: Informer<NetworkPolicy>): void {
    this.policyWrites.follow(informer, keyOf);
  }

  public async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const policyName = networkPolicyNameFor(name);
    const policyKey = `${namespace}/${policyName}`;
    const cached = this.opts.templates.get(namespace, name);
    const now = this.now();
    const write = { fieldManager: TEMPLATE_FIELD_MANAGER };
    const { client } = this.opts;
    const cachedPolicy = this.opts.networkPolicies.get(namespace, policyName);
    const existing = decideOn(cachedPolicy, this.policyWrites.pending(policyKey, cachedPolicy, this.elapsed()), now);
    try {
      if (!cached) {
        this.reportedConflicts.delete(key);
        this.templateWrites.forget(key);
        // The template is gone: its policy stays while Sandboxes built from it remain (the
        // Sandbox informer's delete events bring this key back), then goes.
        const hash = NameHash.of(name);
        const left = this.opts.sandboxes.byIndex(TEMPLATE_HASH_INDEX, `${namespace}/${hash}`).length;
        const action = orphanedPolicyAction(name, existing, left);
        if (action.type === 'delete') {
          // The cache may not show a Sandbox created a moment before the template went: ask the
          // server before leaving it unisolated. When the cache shows that Sandbox, its delete
          // event brings this key back.
          if (await this.sandboxesBuiltFrom(namespace, hash)) {
            this.log.debug({ template: key }, 'the cache shows no Sandbox of the deleted template, the server does: its policy stays');
            return { requeueAfterMs: LIVE_CHECK_RETRY_MS };
          }
          await client.delete(RESOURCES.networkPolicies, namespace, action.name, { uid: action.uid });
          this.policyWrites.expect(policyKey, { deletedUid: action.uid }, this.elapsed());
          this.log.info({ template: key, policy: action.name }, 'NetworkPolicy of a deleted template removed: no Sandbox built from it is left');
        } else if (existing === undefined) {
          this.policyWrites.forget(policyKey);
        }
        return;
      }
      if (cached.metadata.deletionTimestamp) return;
      const template = this.templateWrites.current(key, cached, this.elapsed());
      const labelPatch = templateRefHashLabelPatch(template);
      if (labelPatch) {
        const patched = await client.patch<SandboxTemplate>(RESOURCES.templates, namespace, name, 'merge', labelPatch, write);
        this.templateWrites.wrote(key, cached, patched, this.elapsed());
      }

      const action = networkPolicyAction(template, existing, this.opts);
      if (action.type !== 'conflict') this.reportedConflicts.delete(key);
      switch (action.type) {
        case 'create': {
          const result = await client.create<NetworkPolicy>(RESOURCES.networkPolicies, namespace, action.object, write);
          this.policyWrites.expect(policyKey, { result }, this.elapsed());
          break;
        }
        case 'update': {
          const result = await client.update<NetworkPolicy>(RESOURCES.networkPolicies, namespace, action.object, write);
          this.policyWrites.expect(policyKey, { result, replacedVersion: cachedPolicy?.metadata.resourceVersion }, this.elapsed());
          break;
        }
        case 'delete':
          await client.delete(RESOURCES.networkPolicies, namespace, action.name, { uid: action.uid });
          this.policyWrites.expect(policyKey, { deletedUid: action.uid }, this.elapsed());
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
      // The conditions follow the cache, not this pass's write: pools and claims wait for the
      // policy to show in the same cache, and its event brings the template back to say True.
      const shown = action.type === 'create' ? undefined : cachedPolicy;
      const conditions = templateConditions(template, shown, action, this.opts.routerPodLabels, this.now());
      if (!sameConditions(conditions, template.status?.conditions)) {
        const patched = await client.patch<SandboxTemplate>(RESOURCES.templates, namespace, name, 'merge', { status: { conditions } }, { ...write, subresource: 'status' });
        this.templateWrites.wrote(key, cached, patched, this.elapsed());
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
