/**
 * The operator's two plain-HTTP endpoints: Prometheus `/metrics` on --metrics-bind-address and
 * `/healthz` + `/readyz` on --health-probe-bind-address. An address of "0" disables an endpoint;
 * ":8080" listens on all interfaces; port 0 takes a free port (tests read it from the log line).
 */
import * as http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { Logger } from './log';

export interface ListenAddress {
  /** undefined: all interfaces. */
  readonly host?: string;
  readonly port: number;
}

/** Parse `[host]:port`; undefined for "0" (disabled). */
export function parseBindAddress(address: string): ListenAddress | undefined {
  if (address === '0') return undefined;
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*):(\d{1,5})$/.exec(address);
  if (!match || Number(match[2]) > 65535) throw new Error(`bind address "${address}" must be [host]:port, such as ":8080" or "127.0.0.1:0", or "0" to disable`);
  const host = match[1].replace(/^\[|\]$/g, '');
  return { host: host === '' ? undefined : host, port: Number(match[2]) };
}

/** Listen on `address`; resolves with the server (and its actual port), or undefined when disabled. */
export async function listen(address: string, handler: http.RequestListener, log: Logger, what: string): Promise<http.Server | undefined> {
  const bind = parseBindAddress(address);
  if (!bind) {
    log.info({ endpoint: what }, 'endpoint disabled');
    return undefined;
  }
  const server = http.createServer(handler);
  await listenOn(server, bind, log, what);
  return server;
}

/** Listen with `server` on `bind`; logs the address it got. */
export async function listenOn(server: Server, bind: ListenAddress, log: Logger, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bind.port, bind.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actual = server.address() as AddressInfo;
  log.info({ endpoint: what, address: `${actual.address}:${actual.port}`, port: actual.port }, `serving ${what}`);
}

export function closeServer(server: http.Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Scrapers hold keep-alive connections; do not let them delay the exit.
    server.closeIdleConnections();
  });
}

/** GET /metrics from `registry` (or anything that renders series, such as a cluster primary's sum over its workers). */
export function metricsHandler(registry: { readonly contentType: string; metrics(): Promise<string> }): http.RequestListener {
  return (req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') return text(res, 404, 'not found: use GET /metrics\n');
    registry.metrics().then(
      (body) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(body);
      },
      (err: Error) => text(res, 500, `collecting metrics failed: ${err.message}\n`),
    );
  };
}

export interface Probes {
  /** undefined when live; otherwise why not. */
  liveness(): string | undefined;
  /** undefined when ready; otherwise why not (e.g. "informers not synced"). */
  readiness(): string | undefined;
}

export function probesHandler(probes: Probes): http.RequestListener {
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const check = path === '/healthz' || path === '/livez' ? probes.liveness() : path === '/readyz' ? probes.readiness() : 'unknown';
    if (check === 'unknown') return text(res, 404, 'not found: use /healthz or /readyz\n');
    if (check === undefined) return text(res, 200, 'ok\n');
    return text(res, 503, `${check}\n`);
  };
}

function text(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
