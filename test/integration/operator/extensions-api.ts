/**
 * Helpers over the raw API for the extension-controller integration tests: SandboxTemplates,
 * SandboxWarmPools, SandboxClaims and the Sandboxes they make, read straight from the API server.
 */
import { ApiClient } from '../../../tools/control-plane/api';
import { waitFor } from '../../../tools/control-plane/kube';
import { condition, isReady } from './sandbox-api';

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
