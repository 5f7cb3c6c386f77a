/**
 * Small helpers over the raw API for the operator integration tests: Sandboxes and their
 * children in one namespace, read straight from the API server (never from the operator).
 */
import { SandboxLabels } from '../../../src/api/labels';
import { ApiClient } from '../../../tools/control-plane/api';
import { waitFor } from '../../../tools/control-plane/kube';

export const HASH_LABEL = SandboxLabels.SANDBOX_NAME_HASH;

export function condition(sandbox: any, type: string): any {
  return sandbox?.status?.conditions?.find((c: any) => c.type === type);
}

export function isReady(sandbox: any): boolean {
  return condition(sandbox, 'Ready')?.status === 'True';
}

/** A Sandbox with one busybox container exposing port 8888 as `http`. */
export function sandboxManifest(name: string, spec: Record<string, unknown> = {}, podMetadata?: { labels?: object; annotations?: object }): any {
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name },
    spec: {
      podTemplate: {
        ...(podMetadata ? { metadata: podMetadata } : {}),
        spec: { containers: [{ name: 'main', image: 'busybox', ports: [{ name: 'http', containerPort: 8888 }] }] },
      },
      ...spec,
    },
  };
}

/** `n=5 min=… p50=… max=…` in milliseconds. */
export function summarizeLatencies(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return `n=${sorted.length} min=${sorted[0]} ms p50=${at(0.5)} ms max=${sorted[sorted.length - 1]} ms`;
}

/** Name prefix of barrier Sandboxes (see sandboxBarrier), for tests that compare a namespace's Sandboxes before and after. */
export const BARRIER_PREFIX = 'barrier-';
let barriers = 0;

/**
 * A barrier on the operator's Sandbox watch: creates a suspended marker Sandbox in `ns` and waits
 * until the operator has written its status (Suspended=True). The operator's Sandbox informer
 * receives events in resourceVersion order and queues keys as each event arrives, so by then it has
 * seen, and queued the reconciles for, every Sandbox change made before this call; follow it with
 * OperatorProcess.waitIdle to know those reconciles are done. Suspended, the marker gets no Pod.
 */
export async function sandboxBarrier(api: ApiClient, ns: string): Promise<string> {
  const name = `${BARRIER_PREFIX}${process.pid}-${++barriers}`;
  const base = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
  await api.call('POST', base, sandboxManifest(name, { operatingMode: 'Suspended' }));
  await waitFor(async () => condition((await api.request('GET', `${base}/${name}`)).body, 'Suspended')?.status === 'True',
    60_000, `the operator to write the status of barrier Sandbox ${name}`);
  return name;
}

/**
 * Deletes every Sandbox in `ns` and waits until they are gone. Test files call it before deleting
 * their namespace: the next file's operator watches every namespace, and would otherwise find
 * Sandboxes whose Pods the namespace controller removed, try to create them again in the
 * terminating namespace, and log the refusals as reconcile errors (which that file asserts against).
 */
export async function deleteSandboxes(api: ApiClient, ns: string): Promise<void> {
  const base = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
  await api.call('DELETE', base);
  await waitFor(async () => (await api.call('GET', base)).items.length === 0, 60_000, `every Sandbox in ${ns} to be gone`);
}

export class SandboxApi {
  public constructor(private readonly api: ApiClient, private readonly ns: string) {}

  private get base(): string {
    return `/apis/agents.x-k8s.io/v1beta1/namespaces/${this.ns}/sandboxes`;
  }

  /** See sandboxBarrier. */
  public barrier(): Promise<string> {
    return sandboxBarrier(this.api, this.ns);
  }

  public create(manifest: object): Promise<any> {
    return this.api.call('POST', this.base, manifest);
  }

  /**
   * Creates the Sandbox with a watch already open and resolves on the first event that shows it
   * Ready: the create→Ready latency as a client would see it.
   */
  public async createAndWaitReady(manifest: any, timeoutMs = 60_000): Promise<{ sandbox: any; latencyMs: number }> {
    let started = 0;
    const sandbox = await this.api.watch(`${this.base}?fieldSelector=metadata.name=${manifest.metadata.name}`,
      (ev) => (isReady(ev.object) ? ev.object : undefined),
      {
        timeoutMs,
        onReady: () => {
          started = Date.now();
          return this.create(manifest);
        },
      });
    return { sandbox, latencyMs: Date.now() - started };
  }

  /** Resolves with the first watch event on the Sandbox `name` that `match` accepts (exact timing, no polling). */
  public watchUntil(name: string, match: (ev: { type: string; object: any }) => boolean, timeoutMs = 60_000): Promise<{ type: string; object: any }> {
    return this.api.watch(`${this.base}?fieldSelector=metadata.name=${name}`, (ev) => (match(ev) ? ev : undefined), { timeoutMs });
  }

  public get(name: string): Promise<any> {
    return this.getOrUndefined(`${this.base}/${name}`);
  }

  public async list(): Promise<any[]> {
    return (await this.api.call('GET', this.base)).items;
  }

  public patchSpec(name: string, spec: object): Promise<any> {
    return this.api.call('PATCH', `${this.base}/${name}`, { spec });
  }

  public waitFor(name: string, predicate: (sandbox: any) => boolean, what: string, timeoutMs = 60_000): Promise<any> {
    return waitFor(async () => {
      const sb = await this.get(name);
      return sb && predicate(sb) ? sb : undefined;
    }, timeoutMs, `Sandbox ${name}: ${what}`);
  }

  /** Pods whose controller is the Sandbox called `name`. */
  public async podsOf(name: string): Promise<any[]> {
    const pods = (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/pods`)).items;
    return pods.filter((p: any) => p.metadata.ownerReferences?.some((r: any) => r.controller && r.kind === 'Sandbox' && r.name === name));
  }

  public async podsByLabel(selector: string): Promise<any[]> {
    return (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/pods?labelSelector=${encodeURIComponent(selector)}`)).items;
  }

  public async servicesByLabel(selector: string): Promise<any[]> {
    return (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/services?labelSelector=${encodeURIComponent(selector)}`)).items;
  }

  public async pvcsByLabel(selector: string): Promise<any[]> {
    return (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/persistentvolumeclaims?labelSelector=${encodeURIComponent(selector)}`)).items;
  }

  public service(name: string): Promise<any> {
    return this.getOrUndefined(`/api/v1/namespaces/${this.ns}/services/${name}`);
  }

  public pvc(name: string): Promise<any> {
    return this.getOrUndefined(`/api/v1/namespaces/${this.ns}/persistentvolumeclaims/${name}`);
  }

  /** Events about the Sandbox called `name` (events.k8s.io/v1). */
  public async events(name: string): Promise<any[]> {
    const events = (await this.api.call('GET', `/apis/events.k8s.io/v1/namespaces/${this.ns}/events`)).items;
    return events.filter((e: any) => e.regarding?.kind === 'Sandbox' && e.regarding?.name === name);
  }

  private async getOrUndefined(path: string): Promise<any> {
    const res = await this.api.request('GET', path);
    if (res.status === 404) return undefined;
    if (res.status >= 300) throw new Error(`GET ${path} -> HTTP ${res.status}`);
    return res.body;
  }
}
