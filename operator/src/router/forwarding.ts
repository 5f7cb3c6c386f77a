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
  const named = new Set(String(headers.connection ?? '').split(',').map((s) => s.trim().toLowerCase()));
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value !== undefined && !name.startsWith(':') && !HOP_BY_HOP.has(lower) && !named.has(lower) && lower !== REASON_HEADER) out[name] = value;
  }
  return out;
}

/** The client's X-Request-ID when it is a sane token, else a new one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}

export function reasonOf(err: NodeJS.ErrnoException): UpstreamErrorReason {
  if (err.code === 'ECONNREFUSED' || err.code === 'EHOSTUNREACH' || err.code === 'ENETUNREACH' || err.code === 'EROUTERGUARD' || err.code === 'ETIMEDOUT') return 'dial';
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return 'eof';
  return 'other';
}
