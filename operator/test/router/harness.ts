/**
 * A router in front of loopback "sandboxes": an upstream HTTP server on 127.64.0.7 (inside the
 * loopback pod CIDR the tests allow), stores filled by hand, and a dial function that fails the
 * test on any non-loopback address. The router listens as the command runs it: HTTP/1.1 and h2c
 * on one port.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import type { Pod, Sandbox } from '../../src/model';
import { ALLOW_ALL, type Authorizer } from '../../src/router/auth';
import { AddressGuard } from '../../src/router/guard';
import { H2Proxy } from '../../src/router/h2';
import { ProxyListener } from '../../src/router/listener';
import { RouterMetrics } from '../../src/router/metrics';
import { Router, type RouterOptions } from '../../src/router/proxy';
import { POD_NAME_HASH_INDEX, podNameHashIndex, Resolver } from '../../src/router/resolve';
import { SILENT_LOGGER } from '../../src/runtime/log';
import { FakeStore } from '../fake-kube';

export const UPSTREAM_IP = '127.64.0.7';
export const TEST_POD_CIDRS = ['127.64.0.0/12'];

/** `controller`: the SandboxWarmPool or SandboxClaim whose controller ownerReference the Sandbox carries. */
export function sandbox(name: string, opts: { namespace?: string; ready?: boolean; suspended?: boolean; uid?: string; controller?: { kind: 'SandboxWarmPool' | 'SandboxClaim'; name: string } } = {}): Sandbox {
  const ownerReferences = opts.controller
    ? [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: opts.controller.kind, name: opts.controller.name, uid: `uid-${opts.controller.name}`, controller: true }]
    : undefined;
  return {
    apiVersion: 'agents.x-k8s.io/v1alpha1',
    kind: 'Sandbox',
    metadata: { name, namespace: opts.namespace ?? 'default', uid: opts.uid ?? `uid-${name}`, ...(ownerReferences ? { ownerReferences } : {}) },
    spec: opts.suspended ? { operatingMode: 'Suspended' } : {},
    status: { conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True', reason: 'x', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
  } as unknown as Sandbox;
}

export function pod(sb: Sandbox, ips: string[], opts: { ready?: boolean; name?: string } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: opts.name ?? sb.metadata.name,
      namespace: sb.metadata.namespace,
      labels: { [SandboxLabels.SANDBOX_NAME_HASH]: NameHash.of(sb.metadata.name) },
      ownerReferences: [{ apiVersion: 'agents.x-k8s.io/v1alpha1', kind: 'Sandbox', name: sb.metadata.name, uid: sb.metadata.uid!, controller: true }],
    },
    status: { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })), conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

export interface Harness {
  readonly router: Router;
  readonly listener: ProxyListener;
  readonly port: number;
  readonly sandboxes: FakeStore<Sandbox>;
  readonly pods: FakeStore<Pod>;
  readonly dialed: string[];
  readonly metrics: RouterMetrics;
  readonly resolver: Resolver;
  close(): Promise<void>;
}

/** Fails loudly (and records) any dial outside 127.0.0.0/8. */
export function loopbackOnlyDial(dialed: string[]): RouterOptions['dial'] {
  return (host, port) => {
    dialed.push(`${host}:${port}`);
    if (!host.startsWith('127.')) throw new Error(`test dial to a non-loopback address ${host}:${port}`);
    return net.connect({ host, port });
  };
}

/** `withStores`: options that need the router's caches (a Resumer, an ActivityTracker), made from them. */
/** `shared`: the caches of another harness (a second router replica watching the same API server). */
export async function startRouter(overrides: Partial<RouterOptions> & { authorizer?: Authorizer } = {},
  withStores?: (stores: { sandboxes: FakeStore<Sandbox>; metrics: RouterMetrics }) => Partial<RouterOptions>,
  shared?: Pick<Harness, 'sandboxes' | 'pods'>): Promise<Harness> {
  const sandboxes = shared?.sandboxes ?? new FakeStore<Sandbox>();
  const pods = shared?.pods ?? new FakeStore<Pod>({ [POD_NAME_HASH_INDEX]: podNameHashIndex });
  const dialed: string[] = [];
  const metrics = new RouterMetrics(undefined, false);
  const resolver = new Resolver(sandboxes, pods);
  const router = new Router({
    resolver,
    guard: new AddressGuard(TEST_POD_CIDRS, ['127.0.0.1']),
    authorizer: ALLOW_ALL,
    log: SILENT_LOGGER,
    proxyTimeoutMs: 30_000,
    maxConnections: 100,
    maxConnectionsPerSandbox: 10,
    dial: loopbackOnlyDial(dialed),
    metrics,
    ...overrides,
    ...withStores?.({ sandboxes, metrics }),
  });
  const listener = new ProxyListener();
  const h2 = new H2Proxy(router);
  router.attach(listener.http1);
  h2.attach(listener.http2);
  await new Promise<void>((resolve) => listener.server.listen(0, '127.0.0.1', resolve));
  return {
    router,
    listener,
    sandboxes,
    pods,
    dialed,
    metrics,
    resolver,
    port: (listener.server.address() as AddressInfo).port,
    close: async () => {
      router.close();
      h2.close();
      const closed = listener.close();
      listener.closeAllConnections();
      await closed;
    },
  };
}

export interface Upstream {
  readonly server: http.Server;
  readonly port: number;
  close(): Promise<void>;
}

export async function startUpstream(handler: http.RequestListener, ip = UPSTREAM_IP): Promise<Upstream> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, ip, resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export function request(port: number, path: string, headers: http.OutgoingHttpHeaders = {}, method = 'GET', body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** An upstream that answers with what it received. */
export const echoHandler: http.RequestListener = (req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
  });
};
