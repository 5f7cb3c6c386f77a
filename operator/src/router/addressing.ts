/**
 * Which sandbox a request is for: upstream's `X-Sandbox-*` headers (sandbox-router/ in
 * kubernetes-sigs/agent-sandbox), or a `<prefix>/<namespace>/<id>/<port>/...` path when
 * --path-routing-prefix is set. Validation and error texts are upstream's, so clients that match
 * on them keep working.
 */
import { isIP } from 'node:net';

export const DEFAULT_NAMESPACE = 'default';
export const DEFAULT_PORT = 8888;

/** A request's target, validated. */
export interface Target {
  readonly namespace: string;
  readonly id: string;
  readonly port: number;
  /** X-Sandbox-Pod-IP: a hint, used only when the cache lists it for this sandbox. */
  readonly podIP?: string;
  /** X-Sandbox-UID: when set, the cached Sandbox must have this uid. */
  readonly uid?: string;
  /** X-Sandbox-Timeout in milliseconds (finite and > 0), capped later at --proxy-timeout. */
  readonly timeoutMs?: number;
  /** The path (and query) to send upstream, escaping preserved. */
  readonly path: string;
}

/** A request the router refuses before resolving; `detail` is the JSON body's text. */
export interface AddressError {
  readonly status: number;
  readonly detail: string;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isDns1123Label(value: string): boolean {
  return DNS1123_LABEL.test(value);
}

/** An integer port 1..65535, written in plain decimal; undefined otherwise. */
export function parsePort(value: string): number | undefined {
  if (!/^[0-9]{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** X-Sandbox-Timeout: float seconds; invalid, non-finite or <= 0 means "use the proxy timeout". */
export function parseTimeoutSeconds(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value.trim());
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

type Headers = { readonly [name: string]: string | string[] | undefined };

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Resolve the target from the path (when path routing matches) or the headers. */
export function parseTarget(url: string, headers: Headers, pathRoutingPrefix: string): Target | AddressError {
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  if (pathRoutingPrefix !== '' && rawPath.startsWith(`${pathRoutingPrefix}/`)) {
    return parsePathTarget(rawPath.slice(pathRoutingPrefix.length + 1), query, pathRoutingPrefix);
  }
  const id = header(headers, 'x-sandbox-id');
  if (id === undefined || id === '') return { status: 400, detail: 'X-Sandbox-ID header is required.' };
  const namespace = header(headers, 'x-sandbox-namespace') || DEFAULT_NAMESPACE;
  const portText = header(headers, 'x-sandbox-port') || String(DEFAULT_PORT);
  const checked = checkIdentity(namespace, id, portText);
  if ('status' in checked) return checked;
  const podIP = header(headers, 'x-sandbox-pod-ip') || undefined;
  if (podIP !== undefined && isIP(podIP) === 0) return { status: 400, detail: 'Invalid target IP address.' };
  const uid = header(headers, 'x-sandbox-uid') || undefined;
  const timeoutMs = parseTimeoutSeconds(header(headers, 'x-sandbox-timeout'));
  return { ...checked, podIP, uid, timeoutMs, path: rawPath + query };
}

function parsePathTarget(rest: string, query: string, prefix: string): Target | AddressError {
  const segments = rest.split('/');
  const [ns, id, port] = segments;
  if (!ns || !id || !port) {
    return { status: 400, detail: `Path-routed request must have the form ${prefix}/<namespace>/<id>/<port>/...` };
  }
  let decoded: string[];
  try {
    decoded = [ns, id, port].map((s) => decodeURIComponent(s));
  } catch {
    return { status: 400, detail: 'Invalid percent-encoding in path.' };
  }
  const checked = checkIdentity(decoded[0], decoded[1], decoded[2]);
  if ('status' in checked) return checked;
  return { ...checked, path: `/${segments.slice(3).join('/')}${query}` };
}

function checkIdentity(namespace: string, id: string, portText: string): { namespace: string; id: string; port: number } | AddressError {
  if (!isDns1123Label(id)) return { status: 400, detail: 'Invalid sandbox ID format.' };
  if (!isDns1123Label(namespace)) return { status: 400, detail: 'Invalid namespace format.' };
  const port = parsePort(portText);
  if (port === undefined) return { status: 400, detail: 'Invalid port format.' };
  return { namespace, id, port };
}
