/**
 * Helpers over the raw API for the extension-controller integration tests: SandboxTemplates,
 * SandboxWarmPools, SandboxClaims and the Sandboxes they make, read straight from the API server.
 */
import { condition, isReady } from './sandbox-api';
import { ApiClient } from '../../../tools/control-plane/api';
import { waitFor } from '../../../tools/control-plane/kube';

const GROUP = '/apis/extensions.agents.x-k8s.io/v1beta1';

export function templateManifest(name: string, spec: Record<string, unknown> = {}, image = 'busybox'): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name },
    spec: {
      podTemplate: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'main', image, ports: [{ containerPort: 8888 }] }] } },
      ...spec,
    },
  };
}

export function poolManifest(name: string, template: string, replicas: number, updateStrategy?: string): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { name },
    spec: { replicas, sandboxTemplateRef: { name: template }, ...(updateStrategy ? { updateStrategy: { type: updateStrategy } } : {}) },
  };
}

export function claimManifest(name: string, pool: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): any {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name, ...metadata },
    spec: { warmPoolRef: { name: pool }, ...spec },
  };
}

/** The controller ownerReference of an object. */
export function controllerOf(obj: any): any {
  return obj?.metadata?.ownerReferences?.find((r: any) => r.controller);
}

export function claimReady(claim: any): boolean {
  return condition(claim, 'Ready')?.status === 'True';
}

export class ExtensionsApi {
  public constructor(public readonly api: ApiClient, public readonly ns: string) {}

  public path(plural: 'sandboxtemplates' | 'sandboxwarmpools' | 'sandboxclaims', name?: string): string {
    return `${GROUP}/namespaces/${this.ns}/${plural}${name ? `/${name}` : ''}`;
  }

  public get sandboxesPath(): string {
    return `/apis/agents.x-k8s.io/v1beta1/namespaces/${this.ns}/sandboxes`;
  }

  public create(plural: 'sandboxtemplates' | 'sandboxwarmpools' | 'sandboxclaims', manifest: object): Promise<any> {
    return this.api.call('POST', this.path(plural), manifest);
  }

  public patch(plural: 'sandboxtemplates' | 'sandboxwarmpools' | 'sandboxclaims', name: string, body: object): Promise<any> {
    return this.api.call('PATCH', this.path(plural, name), body);
  }

  public async get(plural: 'sandboxtemplates' | 'sandboxwarmpools' | 'sandboxclaims', name: string): Promise<any> {
    const res = await this.api.request('GET', this.path(plural, name));
    if (res.status === 404) return undefined;
    if (res.status >= 300) throw new Error(`GET ${plural}/${name} -> HTTP ${res.status}`);
    return res.body;
  }

  public async list(plural: 'sandboxtemplates' | 'sandboxwarmpools' | 'sandboxclaims', labelSelector?: string): Promise<any[]> {
    const q = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    return (await this.api.call('GET', `${this.path(plural)}${q}`)).items;
  }

  public async sandboxes(labelSelector?: string): Promise<any[]> {
    const q = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    return (await this.api.call('GET', `${this.sandboxesPath}${q}`)).items;
  }

  /** Sandboxes controlled by the pool `pool` (its unclaimed members). */
  public async poolMembers(pool: string): Promise<any[]> {
    return (await this.sandboxes()).filter((s) => {
      const ref = controllerOf(s);
      return ref?.kind === 'SandboxWarmPool' && ref.name === pool && !s.metadata.deletionTimestamp;
    });
  }

  /** Waits until the pool has exactly `n` live members, all Ready, and its status says so. */
  public async waitPoolReady(pool: string, n: number, timeoutMs = 90_000): Promise<any[]> {
    return waitFor(async () => {
      const members = await this.poolMembers(pool);
      const p = await this.get('sandboxwarmpools', pool);
      return members.length === n && members.every(isReady) && p?.status?.readyReplicas === n && p?.status?.replicas === n ? members : undefined;
    }, timeoutMs, `pool ${pool} to hold ${n} Ready members`);
  }

  public waitClaim(name: string, predicate: (claim: any) => boolean, what: string, timeoutMs = 60_000): Promise<any> {
    return waitFor(async () => {
      const c = await this.get('sandboxclaims', name);
      return c && predicate(c) ? c : undefined;
    }, timeoutMs, `claim ${name}: ${what}`);
  }

  /** Events about the object `name` of `kind` (events.k8s.io/v1). */
  public async events(kind: string, name: string): Promise<any[]> {
    const events = (await this.api.call('GET', `/apis/events.k8s.io/v1/namespaces/${this.ns}/events`)).items;
    return events.filter((e: any) => e.regarding?.kind === kind && e.regarding?.name === name);
  }

  public async networkPolicy(name: string): Promise<any> {
    const res = await this.api.request('GET', `/apis/networking.k8s.io/v1/namespaces/${this.ns}/networkpolicies/${name}`);
    return res.status === 404 ? undefined : res.body;
  }
}

/** Write requests between two apiserverRequests snapshots, by `verb resource code`; reads are left out. */
export class WriteCounts {
  private readonly delta = new Map<string, number>();

  public constructor(before: Map<string, number>, after: Map<string, number>) {
    for (const [key, value] of after) {
      if (!/^(POST|PUT|PATCH|DELETE|APPLY)\b/.test(key)) continue;
      const d = value - (before.get(key) ?? 0);
      if (d > 0) this.delta.set(key, d);
    }
  }

  /** Successful (2xx) `verb` requests on `resource` (`sandboxclaims/status` for a subresource). */
  public ok(verb: string, resource: string): number {
    return this.matching(verb, resource, (code) => code.startsWith('2'));
  }

  /** Refused or failed `verb` requests on `resource` (any code but 2xx). */
  public failed(verb: string, resource: string): number {
    return this.matching(verb, resource, (code) => !code.startsWith('2'));
  }

  /** Every write, divided by `per` and rounded to hundredths, for the log. */
  public per(per: number): Record<string, number> {
    return Object.fromEntries([...this.delta].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, Math.round((v / per) * 100) / 100]));
  }

  private matching(verb: string, resource: string, code: (c: string) => boolean): number {
    let n = 0;
    for (const [key, value] of this.delta) {
      const [v, r, c] = key.split(' ');
      if (v === verb && r === resource && code(c)) n += value;
    }
    return n;
  }
}

/** `n=… p50=… p99=… max=…` in milliseconds. */
export function percentiles(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return `n=${sorted.length} p50=${at(0.5)} ms p90=${at(0.9)} ms p99=${at(0.99)} ms max=${sorted[sorted.length - 1]} ms`;
}

/**
 * Creates claims (at most `concurrency` requests at a time) with one namespace-wide claim watch
 * open, and resolves once every one was seen Ready=True: per claim, client create → Ready latency.
 * A watch the API server closes under load is reopened; claims that turned Ready meanwhile are
 * picked up from a list (their latency then includes the reconnect).
 */
export async function createClaimsAndWaitReady(
  ext: ExtensionsApi,
  manifests: any[],
  concurrency: number,
  timeoutMs: number,
): Promise<Map<string, number>> {
  const startedAt = new Map<string, number>();
  const latency = new Map<string, number>();
  const wanted = new Set(manifests.map((m) => m.metadata.name));
  const seen = (c: any) => {
    const name = c?.metadata?.name;
    if (wanted.has(name) && !latency.has(name) && startedAt.has(name) && claimReady(c)) latency.set(name, Date.now() - startedAt.get(name)!);
  };
  let creating: Promise<unknown> | undefined;
  const create = async () => {
    let next = 0;
    const worker = async () => {
      while (next < manifests.length) {
        const m = manifests[next++];
        startedAt.set(m.metadata.name, Date.now());
        await ext.create('sandboxclaims', m);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  };
  const deadline = Date.now() + timeoutMs;
  while (latency.size < wanted.size) {
    try {
      await ext.api.watch(ext.path('sandboxclaims'), (ev) => {
        seen(ev.object);
        return latency.size === wanted.size ? true : undefined;
      }, {
        timeoutMs: Math.max(1, deadline - Date.now()),
        onReady: async () => {
          creating ??= create();
          // Anything that turned Ready while no watch was open.
          for (const c of await ext.list('sandboxclaims')) seen(c);
          if (latency.size === wanted.size) throw new Error('done');
        },
      });
    } catch (e) {
      const msg = (e as Error).message;
      if (msg === 'done') break;
      if (!msg.includes('server closed the stream') || Date.now() >= deadline) throw e;
    }
  }
  await creating;
  return latency;
}
