/**
 * How the SDK reaches a sandbox's runtime, chosen with the client's `connection` option:
 * port-forward to the router Service (the default, like upstream's Python SDK), a direct URL (the
 * router's address or a gateway in front of it), the router Service's in-cluster DNS name, or the
 * sandbox Pod itself (its IP, from inside the cluster; no router). Router modes send upstream's
 * routing headers and the caller's bearer token; the Pod mode sends neither.
 */
import { SandboxConfigError } from './errors.js';
import { KubeApi } from './kube.js';
import { ServicePortForward } from './port-forward.js';
import { Endpoint } from './runtime-api.js';
import { ROUTER_PORT, ROUTER_SERVICE, RouterHeader, RUNTIME_PORT, SYSTEM_NAMESPACE } from './wire.js';

/** Port-forward from this process to the router Service (needs `get` and `create` on `pods/portforward` in its namespace). */
export interface PortForwardConnection {
  readonly mode: 'port-forward';
  /** @default "agent-sandbox-system" */
  readonly namespace?: string;
  /** @default "sandbox-router-svc" */
  readonly service?: string;
  /** @default 8080 */
  readonly port?: number;
}

/** The router (or a gateway in front of it) at a URL. */
export interface DirectConnection {
  readonly mode: 'direct';
  /** e.g. `http://127.0.0.1:8080` or `https://sandboxes.example.com`. */
  readonly url: string;
  /** Extra headers for every request (not `X-Sandbox-*`, which the SDK sets). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The router Service by its cluster DNS name, from a Pod in the cluster. */
export interface InClusterRouterConnection {
  readonly mode: 'in-cluster';
  /** @default "agent-sandbox-system" */
  readonly namespace?: string;
  /** @default "sandbox-router-svc" */
  readonly service?: string;
  /** @default 8080 */
  readonly port?: number;
  /** @default "cluster.local" */
  readonly clusterDomain?: string;
}

/** The sandbox Pod's IP directly (from inside the cluster, or where Pod IPs are reachable); no router. */
export interface PodConnection {
  readonly mode: 'pod';
  /** @default 8888 */
  readonly port?: number;
  /** Bearer token of the runtime (its --token-file), when it requires one. */
  readonly token?: string;
}

export type Connection = PortForwardConnection | DirectConnection | InClusterRouterConnection | PodConnection;

/** What a sandbox handle needs to build its Endpoint. */
export interface SandboxAddress {
  readonly name: string;
  readonly namespace: string;
  /** Pod IPs from the claim's status, when known. */
  readonly podIPs?: readonly string[];
}

/** One client's way in: builds each sandbox's Endpoint, and owns the port-forward (if any). */
export class Connector {
  private readonly forward?: ServicePortForward;

  public constructor(
    private readonly connection: Connection,
    api: KubeApi | undefined,
    /** The bearer token for the router (kubeconfig user or explicit), resolved per request. */
    private readonly token: () => Promise<string | undefined>,
  ) {
    validate(connection);
    if (connection.mode === 'port-forward') {
      if (!api) throw new SandboxConfigError('connection', 'port-forward needs Kubernetes credentials: pass kubeconfig, or use connection { mode: "direct", url }');
      const { namespace = SYSTEM_NAMESPACE, service = ROUTER_SERVICE, port = ROUTER_PORT } = connection;
      this.forward = new ServicePortForward(api, namespace, service, port);
    }
  }

  public get mode(): Connection['mode'] {
    return this.connection.mode;
  }

  /**
   * The Endpoint of `sandbox` (called before every request): its runtime's legacy API, or with
   * `port`, another port of the sandbox (sandboxd's gRPC port).
   */
  public async endpoint(sandbox: SandboxAddress, port?: number): Promise<Endpoint> {
    const c = this.connection;
    if (c.mode === 'pod') {
      const ip = pickIP(sandbox.podIPs ?? []);
      if (!ip) throw new SandboxConfigError('connection', `sandbox ${sandbox.namespace}/${sandbox.name} has no Pod IP yet; use a router mode, or wait until it is Ready`);
      const host = ip.includes(':') ? `[${ip}]` : ip;
      return { baseUrl: `http://${host}:${port ?? c.port ?? RUNTIME_PORT}`, headers: c.token ? { authorization: `Bearer ${c.token}` } : {}, viaRouter: false };
    }
    const headers: Record<string, string> = {
      ...(c.mode === 'direct' ? c.headers : {}),
      [RouterHeader.ID]: sandbox.name,
      [RouterHeader.NAMESPACE]: sandbox.namespace,
      [RouterHeader.PORT]: String(port ?? RUNTIME_PORT),
    };
    const token = await this.token();
    if (token) headers.authorization = `Bearer ${token}`;
    return { baseUrl: await this.routerUrl(), headers, viaRouter: true };
  }

  public async close(): Promise<void> {
    await this.forward?.close();
  }

  private async routerUrl(): Promise<string> {
    const c = this.connection;
    if (c.mode === 'direct') return c.url.replace(/\/+$/, '');
    if (c.mode === 'in-cluster') {
      return `http://${c.service ?? ROUTER_SERVICE}.${c.namespace ?? SYSTEM_NAMESPACE}.svc.${c.clusterDomain ?? 'cluster.local'}:${c.port ?? ROUTER_PORT}`;
    }
    return `http://127.0.0.1:${await this.forward!.localPort()}`;
  }
}

function validate(c: Connection): void {
  if (typeof c !== 'object' || c === null) throw new SandboxConfigError('connection', 'must be an object like { mode: "port-forward" }');
  if (!['port-forward', 'direct', 'in-cluster', 'pod'].includes(c.mode)) {
    throw new SandboxConfigError('connection.mode', `must be "port-forward", "direct", "in-cluster" or "pod", got ${JSON.stringify((c as { mode: unknown }).mode)}`);
  }
  if (c.mode === 'direct') {
    let url: URL;
    try {
      url = new URL(c.url);
    } catch {
      throw new SandboxConfigError('connection.url', `must be an absolute http(s) URL like "http://127.0.0.1:8080", got ${JSON.stringify(c.url)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SandboxConfigError('connection.url', `must use http or https, got "${url.protocol}"`);
    for (const name of Object.keys(c.headers ?? {})) {
      if (/^x-sandbox-/i.test(name)) throw new SandboxConfigError(`connection.headers.${name}`, 'X-Sandbox-* headers are set by the SDK; remove it');
    }
  }
}

/** IPv4 first (IPv4-mapped IPv6 unwrapped), else the first address. */
function pickIP(ips: readonly string[]): string | undefined {
  const unwrapped = ips.map((ip) => ip.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1'));
  return unwrapped.find((ip) => /^\d+\.\d+\.\d+\.\d+$/.test(ip)) ?? unwrapped[0];
}
