/**
 * What the informer caches keep of a Pod and a Sandbox. At thousands of sandboxes the caches are
 * most of the operator's memory, so each keeps only what some reader uses, and pool members,
 * whose pod specs are copies of one template, share a single copy of that spec.
 *
 * Nothing here may drop a field a controller writes back: the controllers change objects with
 * merge patches of the fields they own, never by PUTting a cached object, so a slimmed cache
 * cannot erase anything on the server.
 */
import { isDeepStrictEqual } from 'node:util';
import { SandboxLabels } from '#api/labels';
import type { PodSpec, Sandbox } from './generated';
import type { Pod } from './objects';

/**
 * The cached Pod: metadata, `spec.nodeName`, and of the status the phase, conditions and pod IPs
 * (the fields `PodStatus` types). The rest of the spec never changes after creation and nothing
 * reads it; container statuses, host IPs, start time and QoS class are never read either, and the
 * container statuses are most of a running Pod's status. Upstream's PodCacheTransform drops the
 * spec the same way.
 */
export function slimPod(pod: Pod): Pod {
  const nodeName = pod.spec?.nodeName;
  const slim: Pod = { ...pod, spec: (nodeName ? { nodeName } : {}) as Pod['spec'] };
  if (pod.status) {
    const { phase, conditions, podIP, podIPs } = pod.status;
    slim.status = {
      ...(phase !== undefined ? { phase } : {}),
      ...(conditions !== undefined ? { conditions } : {}),
      ...(podIP !== undefined ? { podIP } : {}),
      ...(podIPs !== undefined ? { podIPs } : {}),
    };
  }
  return slim;
}

/** Variants offered per template: a template edit makes new members differ while the old ones live. */
const VARIANTS_PER_KEY = 4;

/**
 * Hands out one shared, frozen copy of equal pod specs. Keyed by namespace and the template a
 * Sandbox was built from (the template-ref hash label, which a claimed member keeps), each
 * candidate checked for deep equality, so an edited Sandbox keeps its own spec.
 * Held weakly: once no cached Sandbox uses a copy it is collected and its key forgotten.
 */
export class PodSpecSharing {
  private readonly byKey = new Map<string, WeakRef<PodSpec>[]>();
  /** Per key, the last spec that found the list full: shared once a second equal one comes. */
  private readonly probation = new Map<string, WeakRef<PodSpec>>();
  private readonly forget = new FinalizationRegistry<string>((key) => this.prune(key));

  /** The Sandbox with its pod spec replaced by an equal shared copy, when it has a template to key on. */
  public readonly transform = (sandbox: Sandbox): Sandbox => {
    const spec = sandbox.spec?.podTemplate?.spec;
    const labels = sandbox.metadata.labels;
    const template = labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];
    if (!spec || template === undefined) return sandbox;
    const shared = this.share(`${sandbox.metadata.namespace}/${template}`, spec);
    if (shared === spec) return sandbox;
    return { ...sandbox, spec: { ...sandbox.spec, podTemplate: { ...sandbox.spec.podTemplate, spec: shared } } };
  };

  /** Distinct specs held right now (for tests and the memory benchmark). */
  public get held(): number {
    let n = 0;
    for (const refs of this.byKey.values()) n += refs.filter((r) => r.deref() !== undefined).length;
    return n;
  }

  private share(key: string, spec: PodSpec): PodSpec {
    const refs = this.byKey.get(key) ?? [];
    for (let i = 0; i < refs.length; i++) {
      const held = refs[i].deref();
      if (held !== undefined && (held === spec || isDeepStrictEqual(held, spec))) {
        // Most recently matched first, so the variant that goes when the list is full is the coldest.
        if (i > 0) refs.unshift(...refs.splice(i, 1));
        return held;
      }
    }
    if (refs.length >= VARIANTS_PER_KEY) this.prune(key);
    const live = this.byKey.get(key) ?? [];
    if (live.length >= VARIANTS_PER_KEY) {
      // Full of live variants (old members of an edited template, cold-claimed Sandboxes with env
      // of their own): a new spec waits on probation, and only one seen twice (a new template's
      // members) replaces the coldest, so one-off specs cannot push the shared ones out.
      const waiting = this.probation.get(key)?.deref();
      if (waiting === undefined || (waiting !== spec && !isDeepStrictEqual(waiting, spec))) {
        this.probation.set(key, new WeakRef(spec));
        return spec;
      }
      this.probation.delete(key);
      live.pop();
      spec = waiting;
    }
    deepFreeze(spec);
    live.unshift(new WeakRef(spec));
    this.byKey.set(key, live);
    this.forget.register(spec, key);
    return spec;
  }

  private prune(key: string): void {
    const live = (this.byKey.get(key) ?? []).filter((r) => r.deref() !== undefined);
    if (live.length === 0) this.byKey.delete(key);
    else this.byKey.set(key, live);
    if (this.probation.get(key)?.deref() === undefined) this.probation.delete(key);
  }
}

/** A shared spec must never change under the Sandboxes sharing it: writing to it throws (modules are strict). */
function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}

/**
 * The one Sandbox transform of the process: every request for the shared Sandbox informer names
 * this function (the informer factory insists on one transform per resource), and specs are
 * shared across all of them.
 */
export const SANDBOX_SPEC_SHARING = new PodSpecSharing();
