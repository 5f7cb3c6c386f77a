/**
 * A request's sandbox → the address to dial, from the informer caches only (never the API server
 * on the request path, never DNS): the Sandbox by namespace/name, its Pod by the Sandbox's
 * name-hash label (or the pod-name annotation, as the sandbox controller reads it).
 *
 * The caches lag the API server: a client that watched its Sandbox turn Ready (or just claimed
 * it) can ask before the router has seen that. `settle()` therefore lets a request for a sandbox
 * that is not serving wait a bounded time for the caches to say it is, woken by the informer
 * events of that sandbox and its Pod, before it answers 404, 409 or 503.
 *
 * A suspended Sandbox (`spec.operatingMode: Suspended`) whose idle policy lets a request resume it
 * is resumed by the router (`./resume`), after the caller is authorized; the request then waits
 * here, past the suspended state its cache still shows, for the resumed Sandbox to serve. Any other
 * suspended Sandbox is refused at once, without the wait: it will not serve until someone resumes
 * it, so waiting only delayed a certain refusal by --ready-wait. The refusal says so in a form
 * clients can act on: 409, `reason: SandboxSuspended` in the JSON body and the `X-Sandbox-Reason`
 * header (which a gRPC refusal carries too). A client that resumed the Sandbox and saw it Ready
 * cannot meet this refusal unless the router's Sandbox watch lags by the whole resume (the spec
 * change comes before the new Pod is even made); a resume the cache has seen but whose Pod is not
 * ready yet is a 503, and that still waits.
 */
import { isIP } from 'node:net';
import { KINDS } from '#api/groups';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { controllerNameOfKind, isPodReady, isReady, podIPsOf, type Pod, type Sandbox } from '../model';
import type { SandboxAccess } from './auth';
import { unmapIPv4 } from './guard';
import type { Informer } from '../runtime/types';

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
  /** A machine-readable reason, for refusals a client acts on (`SandboxSuspended`): the body's `reason` and the X-Sandbox-Reason header. */
  readonly reason?: string;
}

/** The reason of the refusal of a suspended sandbox. */
export const SUSPENDED_REASON = 'SandboxSuspended';
/** The response header that carries a refusal's reason (HTTP and gRPC responses alike). */
export const REASON_HEADER = 'x-sandbox-reason';

export interface ResolveRequest {
  readonly namespace: string;
  readonly id: string;
  readonly podIP?: string;
  readonly uid?: string;
}

/** How a `settle()` ended: served at once, served after waiting, still not serving when the wait ran out, or cut short by its signal. */
export type SettleOutcome = 'immediate' | 'waited' | 'timeout' | 'aborted';

/** What `settle()` came to: the latest answer, and how the wait ended. */
export interface Settled {
  readonly result: Resolved | Unresolved;
  readonly outcome: SettleOutcome;
}

export class Resolver {
  /** Waiting requests by `<namespace>/<sandbox name hash>`, the key both a Sandbox's and its Pod's events carry. */
  private readonly waiters = new Map<string, Set<() => void>>();

  public constructor(private readonly sandboxes: Informer<Sandbox>, private readonly pods: Informer<Pod>) {
    // Every event of every Sandbox and Pod passes here: with nothing waiting, it costs one check.
    const wakeSandbox = (s: Sandbox) => this.waiters.size > 0 && this.wake(`${s.metadata.namespace}/${NameHash.of(s.metadata.name)}`);
    const wakePod = (p: Pod) => this.waiters.size > 0 && podNameHashIndex(p).forEach((key) => this.wake(key));
    sandboxes.addHandlers({ onAdd: wakeSandbox, onUpdate: (_, s) => wakeSandbox(s), onDelete: wakeSandbox });
    pods.addHandlers({ onAdd: wakePod, onUpdate: (_, p) => wakePod(p), onDelete: wakePod });
  }

  public resolve(req: ResolveRequest): Resolved | Unresolved {
    const name = `${req.namespace}/${req.id}`;
    const sandbox = this.sandboxes.get(req.namespace, req.id);
    if (!sandbox || (req.uid !== undefined && sandbox.metadata.uid !== req.uid)) {
      return { status: 404, detail: `Sandbox ${name} not found.` };
    }
    // A warm-pool member nobody has claimed is not anyone's sandbox yet: whatever a caller left in
    // it (a file, a background process) would greet the agent whose claim adopts it next.
    const pool = controllerNameOfKind(sandbox, KINDS.warmPool);
    if (pool !== undefined) {
      return { status: 409, detail: `Sandbox ${name} is an unclaimed member of warm pool "${pool}"; only a claimed sandbox is routed (create a SandboxClaim and use the sandbox it names).` };
    }
    if (sandbox.spec?.operatingMode === 'Suspended') {
      return { status: 409, detail: `Sandbox ${name} is suspended; resume it (spec.operatingMode: Running) to use it.`, reason: SUSPENDED_REASON };
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

  /** The sandbox as the authorizer needs it (which SandboxClaim, if any, controls it), or undefined when the cache does not show it. */
  public accessOf(namespace: string, id: string): SandboxAccess | undefined {
    const sandbox = this.sandboxes.get(namespace, id);
    return sandbox ? { namespace, sandbox: id, claim: controllerNameOfKind(sandbox, KINDS.claim) } : undefined;
  }

  /**
   * `resolve()`, but a refusal (every one is about what the cache shows now: absent, not ready, a
   * stale pod IP) waits up to `waitMs` for an event of the sandbox or its Pod that makes it
   * resolvable; at the deadline the cache's latest answer stands. A suspended sandbox is answered
   * at once (see above), unless `resuming` (this router resumed it: the cache shows the suspension
   * until the resume reaches the watch). `signal` (the client left, the router closes) ends the
   * wait at once, with the latest answer and the outcome `aborted`. A resolve that throws (a
   * malformed object in the cache) rejects, wherever it ran.
   */
  public settle(req: ResolveRequest, waitMs: number, signal?: AbortSignal, resuming = false): Promise<Settled> {
    const first = this.resolve(req);
    const final = !('detail' in first) || waitMs <= 0 || (first.reason === SUSPENDED_REASON && !resuming);
    if (final) return Promise.resolve({ result: first, outcome: 'immediate' });
    if (signal?.aborted) return Promise.resolve({ result: first, outcome: 'aborted' });
    const key = `${req.namespace}/${NameHash.of(req.id)}`;
    return new Promise((done, fail) => {
      const end = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        const set = this.waiters.get(key);
        set?.delete(check);
        if (set?.size === 0) this.waiters.delete(key);
      };
      /** The latest answer, or undefined when resolving threw (the wait is then over, rejected). */
      const latest = (): Resolved | Unresolved | undefined => {
        try {
          return this.resolve(req);
        } catch (err) {
          end();
          fail(err);
          return undefined;
        }
      };
      const finish = (outcome: SettleOutcome) => {
        const result = latest();
        if (result === undefined) return;
        end();
        done({ result, outcome });
      };
      const check = () => {
        const result = latest();
        if (result !== undefined && !('detail' in result)) {
          end();
          done({ result, outcome: 'waited' });
        }
      };
      const aborted = () => finish('aborted');
      const timer = setTimeout(() => finish('timeout'), waitMs);
      signal?.addEventListener('abort', aborted, { once: true });
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(check);
    });
  }

  /** Requests waiting on some sandbox right now. */
  public get waiting(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  private wake(key: string): void {
    const set = this.waiters.get(key);
    if (set) for (const check of [...set]) check();
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
