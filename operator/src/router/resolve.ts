/**
 * A request's sandbox → the address to dial, from the informer caches only (never the API server
 * on the request path, never DNS): the Sandbox by namespace/name, its Pod by the Sandbox's
 * name-hash label (or the pod-name annotation, as the sandbox controller reads it).
 */
import { isIP } from 'node:net';
import { SandboxAnnotations, SandboxLabels } from '../../../src/api/labels';
import { NameHash } from '../../../src/api/name-hash';
import { isPodReady, isReady, podIPsOf, type Pod, type Sandbox } from '../model';
import { unmapIPv4 } from './guard';
import type { Store } from '../runtime/types';

/** Pod index: `<namespace>/<sandbox-name-hash label>`. */
export const POD_NAME_HASH_INDEX = 'router-namespace-name-hash';

export function podNameHashIndex(pod: Pod): string[] {
  const hash = pod.metadata.labels?.[SandboxLabels.SANDBOX_NAME_HASH];
  return hash ? [`${pod.metadata.namespace}/${hash}`] : [];
}

export interface Resolved {
  readonly ip: string;
  readonly sandbox: Sandbox;
  readonly pod: Pod;
}

export interface Unresolved {
  readonly status: number;
  readonly detail: string;
}

export interface ResolveRequest {
  readonly namespace: string;
  readonly id: string;
  readonly podIP?: string;
  readonly uid?: string;
}

export class Resolver {
  public constructor(private readonly sandboxes: Store<Sandbox>, private readonly pods: Store<Pod>) {}

  public resolve(req: ResolveRequest): Resolved | Unresolved {
    const name = `${req.namespace}/${req.id}`;
    const sandbox = this.sandboxes.get(req.namespace, req.id);
    if (!sandbox || (req.uid !== undefined && sandbox.metadata.uid !== req.uid)) {
      return { status: 404, detail: `Sandbox ${name} not found.` };
    }
    if (sandbox.spec?.operatingMode === 'Suspended') {
      return { status: 409, detail: `Sandbox ${name} is suspended.` };
    }
    const pod = this.podOf(sandbox);
    if (!pod) return { status: 503, detail: `Sandbox ${name} has no pod yet.` };
    const ips = podIPsOf(pod).map(unmapIPv4);
    if (!isPodReady(pod) || !isReady(sandbox) || ips.length === 0) {
      return { status: 503, detail: `Sandbox ${name} is not ready.` };
    }
    if (req.podIP !== undefined) {
      const hint = unmapIPv4(req.podIP);
      // A stale hint (the pod was replaced) is a 5xx so that clients re-resolve it.
      if (!ips.includes(hint)) return { status: 503, detail: `${req.podIP} is not a current pod IP of sandbox ${name}.` };
      return { ip: hint, sandbox, pod };
    }
    return { ip: ips.find((ip) => isIP(ip) === 4) ?? ips[0], sandbox, pod };
  }

  /** The Sandbox's live Pod: named by the annotation (or the Sandbox's name) and carrying its name-hash label. */
  private podOf(sandbox: Sandbox): Pod | undefined {
    const ns = sandbox.metadata.namespace!;
    const hash = NameHash.of(sandbox.metadata.name);
    const candidates = this.pods.byIndex(POD_NAME_HASH_INDEX, `${ns}/${hash}`)
      .filter((p) => !p.metadata.deletionTimestamp && ownedBy(p, sandbox));
    const wanted = sandbox.metadata.annotations?.[SandboxAnnotations.POD_NAME] || sandbox.metadata.name;
    return candidates.find((p) => p.metadata.name === wanted) ?? (candidates.length === 1 ? candidates[0] : undefined);
  }
}

/** No controller, or the Sandbox as controller (a pod another object controls is not this sandbox's). */
function ownedBy(pod: Pod, sandbox: Sandbox): boolean {
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller);
  return !controller || controller.uid === sandbox.metadata.uid;
}
