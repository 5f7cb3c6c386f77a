/**
 * What the router changes in the headers it forwards, for HTTP/1.1 and HTTP/2 alike: Authorization,
 * Cookie, Proxy-Authorization, hop-by-hop headers (and those named in Connection), Host, inbound
 * Forwarded/X-Forwarded-* and every X-Sandbox-* are removed (like the legacy Python router, the
 * sandbox never sees routing or credentials); `te: trailers` is kept (gRPC needs it);
 * X-Forwarded-For/-Host/-Proto and X-Request-ID are set. HTTP/2 pseudo-headers are the caller's.
 */
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import type { UpstreamErrorReason } from './metrics';
import { REASON_HEADER } from './resolve';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
const CREDENTIALS = new Set(['authorization', 'cookie', 'host', 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-request-id']);

type InHeaders = { readonly [name: string]: string | string[] | undefined };

export interface ForwardContext {
  /** The client's address (X-Forwarded-For). */
  readonly remoteAddress?: string;
  /** The inbound Host or :authority (X-Forwarded-Host). */
  readonly host?: string;
  readonly requestId: string;
  /** An Upgrade request: Origin is removed too. */
  readonly upgrade?: boolean;
}

/** The request headers to send to the sandbox, minus pseudo-headers. */
export function forwardableHeaders(headers: InHeaders, ctx: ForwardContext): http.OutgoingHttpHeaders {
  const named = new Set(String(headers.connection ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s));
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || HOP_BY_HOP.has(name) || CREDENTIALS.has(name) || named.has(name) || name.startsWith('x-sandbox-')) continue;
    if (ctx.upgrade && name === 'origin') continue;
    out[name] = value;
  }
  if (/^\s*trailers\s*$/i.test(String(headers.te ?? ''))) out.te = 'trailers';
  out['x-forwarded-for'] = ctx.remoteAddress ?? '';
  if (ctx.host) out['x-forwarded-host'] = ctx.host;
  out['x-forwarded-proto'] = 'http';
  out['x-request-id'] = ctx.requestId;
  return out;
}

/**
 * The response headers (or trailers) to pass back: hop-by-hop ones (and those named in Connection),
 * pseudo-headers and X-Sandbox-Reason removed. X-Sandbox-Reason is the router's own (the SDKs map it
 * to SandboxSuspendedError and the like); a sandbox must not be able to fake it.
 */
export function filterResponseHeaders(headers: InHeaders): http.OutgoingHttpHeaders {
  const named = connectionTokens(headers.connection);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && passesBack(name, named)) out[name] = value;
  }
  return out;
}

/**
 * filterResponseHeaders for headers as received, a flat list of names and values (undici's raw
 * headers): the same removals; a name sent more than once keeps each value, as a line of its own
 * (Node's HTTP client joined them with commas), in the order they came, under the name's first
 * spelling. Bytes are read as latin1, as Node's parser does, so a value goes back out unchanged.
 */
export function filterRawResponseHeaders(raw: readonly (Buffer | string)[]): http.OutgoingHttpHeaders {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (latin1(raw[i]).toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const token of connectionTokens(latin1(raw[i + 1]))) named.add(token);
  }
  const out: Record<string, string | string[]> = Object.create(null);
  const spelling = new Map<string, string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = latin1(raw[i]);
    if (!passesBack(name, named)) continue;
    const value = latin1(raw[i + 1]);
    const lower = name.toLowerCase();
    const first = spelling.get(lower);
    if (first === undefined) {
      spelling.set(lower, name);
      out[name] = value;
    } else {
      const had = out[first];
      out[first] = Array.isArray(had) ? [...had, value] : [had, value];
    }
  }
  return out;
}

/** Header bytes as Node's own parser reads them (latin1), so they go back out byte for byte. */
function latin1(v: Buffer | string): string {
  return typeof v === 'string' ? v : v.toString('latin1');
}

function connectionTokens(value: string | string[] | undefined): Set<string> {
  return new Set(String(value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s));
}

function passesBack(name: string, named: ReadonlySet<string> | undefined): boolean {
  const lower = name.toLowerCase();
  return !name.startsWith(':') && !HOP_BY_HOP.has(lower) && !(named?.has(lower) ?? false) && lower !== REASON_HEADER;
}

/** The client's X-Request-ID when it is a sane token, else a new one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}

export function reasonOf(err: NodeJS.ErrnoException): UpstreamErrorReason {
  if (err.code === 'ECONNREFUSED' || err.code === 'EHOSTUNREACH' || err.code === 'ENETUNREACH' || err.code === 'EROUTERGUARD' || err.code === 'ETIMEDOUT'
    || err.code === 'ECONNABORTED') return 'dial';
  if (isConnectionClosed(err)) return 'eof';
  return 'other';
}

/**
 * The sandbox closed or reset the connection: ECONNRESET, EPIPE, or undici's SocketError for a
 * connection closed under a request ("other side closed", "closed"). Not its other SocketErrors,
 * which are answers it could not take ("bad upgrade", "bad response").
 */
export function isConnectionClosed(err: NodeJS.ErrnoException): boolean {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return true;
  return err.code === 'UND_ERR_SOCKET' && (err.message === 'other side closed' || err.message === 'closed');
}
