/**
 * Port-forwarding to the router Service, as upstream's Python SDK does with
 * `kubectl port-forward svc/sandbox-router-svc` but in-process: a listener on 127.0.0.1 whose every
 * connection becomes a client-node PortForward stream to a Ready Pod behind the Service (its
 * `targetPort`, named or numbered). The Pod is looked up again after a forward fails.
 */
import * as net from 'node:net';
import { PortForward, type KubeConfig } from '@kubernetes/client-node';
import { SandboxConnectionError } from './errors.js';
import { KubeApi } from './kube.js';

interface Target {
  readonly pod: string;
  readonly port: number;
}

export class ServicePortForward {
  private server?: net.Server;
  private listening?: Promise<number>;
  private target?: Promise<Target>;
  private readonly sockets = new Set<net.Socket>();
  /** Counts close() calls: a listen() that sees it change while it awaits gives up (and leaves no listener). */
  private closes = 0;

  public constructor(
    private readonly api: KubeApi,
    private readonly namespace: string,
    private readonly service: string,
    private readonly servicePort: number,
  ) {}

  /** The local port (starting the listener on first use). */
  public localPort(): Promise<number> {
    if (!this.listening) {
      const listening = this.listen();
      this.listening = listening;
      // A failed start is tried again on the next use.
      listening.catch(() => {
        if (this.listening === listening) this.listening = undefined;
      });
    }
    return this.listening;
  }

  public async close(): Promise<void> {
    this.closes++;
    const pending = this.listening;
    this.listening = undefined;
    // A listen() under way stops at its next step; wait for it, so no listener outlives close().
    await pending?.catch(() => undefined);
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async listen(): Promise<number> {
    const closes = this.closes;
    const closed = () => new SandboxConnectionError('port-forward: closed while starting', undefined);
    // Resolve first, so a missing router Service fails the first request with a clear error.
    await this.resolveTarget();
    if (this.closes !== closes) throw closed();
    const server = net.createServer((socket) => this.forward(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    if (this.closes !== closes) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw closed();
    }
    this.server = server;
    return (server.address() as net.AddressInfo).port;
  }

  private resolveTarget(): Promise<Target> {
    this.target ??= this.lookUp().catch((err) => {
      this.target = undefined;
      throw err;
    });
    return this.target;
  }

  private forward(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    this.resolveTarget().then(async (target) => {
      const forward = new PortForward(this.api.config as KubeConfig, true);
      const ws = await forward.portForward(this.namespace, target.pod, [target.port], socket, null, socket);
      if (typeof ws === 'function') return; // only with retries, which are not asked for
      // client-node closes the WebSocket only when the socket ends, and never ends the socket: tie
      // the two, or a destroyed socket (close()) leaves an open WebSocket that keeps the process alive.
      ws.on('close', () => socket.end());
      if (socket.destroyed) ws.close();
      else socket.once('close', () => ws.close());
    }).catch(() => {
      // The Pod may be gone: look it up again for the next connection.
      this.target = undefined;
      socket.destroy();
    });
  }

  private async lookUp(): Promise<Target> {
    const where = `Service ${this.namespace}/${this.service}`;
    const svc = await this.api.get(`/api/v1/namespaces/${encodeURIComponent(this.namespace)}/services/${encodeURIComponent(this.service)}`).catch((err) => {
      throw new SandboxConnectionError(`port-forward: cannot read ${where} (${(err as Error).message}); is the router installed there? Set connection.namespace/service, or use another connection mode`, undefined, { cause: err });
    });
    const port = (svc.spec?.ports ?? []).find((p: any) => p.port === this.servicePort);
    if (!port) throw new SandboxConnectionError(`port-forward: ${where} has no port ${this.servicePort}`, undefined);
    const selector = Object.entries(svc.spec?.selector ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
    if (selector === '') throw new SandboxConnectionError(`port-forward: ${where} has no selector`, undefined);
    const pods = await this.api.get(`/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods?labelSelector=${encodeURIComponent(selector)}`);
    const ready = (pods.items ?? []).find((pod: any) => pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp
      && (pod.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));
    if (!ready) throw new SandboxConnectionError(`port-forward: no Ready Pod behind ${where}`, undefined);
    const target = port.targetPort ?? port.port;
    if (typeof target === 'number') return { pod: ready.metadata.name, port: target };
    const named = (ready.spec?.containers ?? []).flatMap((c: any) => c.ports ?? []).find((p: any) => p.name === target);
    if (!named) throw new SandboxConnectionError(`port-forward: Pod ${ready.metadata.name} has no port named "${target}"`, undefined);
    return { pod: ready.metadata.name, port: named.containerPort };
  }
}
