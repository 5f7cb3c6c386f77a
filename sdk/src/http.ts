/**
 * One HTTP exchange with the router or the runtime over node:http(s), with keep-alive agents, a
 * per-request time limit, an AbortSignal, streamed bodies both ways, and the SDK's errors: an error
 * status becomes a SandboxHttpError (SandboxAuthError for 401/403) carrying the parsed body, and a
 * request without an answer becomes a SandboxConnectionError or a SandboxTimeoutError.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { Readable } from 'node:stream';
import { SandboxAuthError, SandboxConnectionError, SandboxHttpError, SandboxTimeoutError } from './errors.js';

export type Body = string | Uint8Array | Readable | undefined;

export interface HttpRequest {
  readonly method: string;
  /** Absolute URL. */
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: Body;
  /** Limit for the exchange up to the answer's headers. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Names the sandbox in errors. */
  readonly sandbox?: string;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: http.IncomingMessage;
}

/** Bytes of an error body kept for the error. */
const MAX_ERROR_BODY = 64 * 1024;

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/** Sends the request; resolves with the response (status < 400) and its unread body stream. */
export function send(req: HttpRequest): Promise<HttpResponse> {
  const url = new URL(req.url);
  const secure = url.protocol === 'https:';
  const path = `${url.pathname}${url.search}`;
  return new Promise<HttpResponse>((resolve, reject) => {
    if (req.signal?.aborted) return reject(req.signal.reason);
    const headers: Record<string, string> = { ...req.headers };
    if (typeof req.body === 'string' || req.body instanceof Uint8Array) headers['content-length'] = String(Buffer.byteLength(req.body));
    const outgoing = (secure ? https : http).request({
      method: req.method,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (secure ? 443 : 80),
      path,
      headers,
      agent: secure ? agents.https : agents.http,
    });
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      outgoing.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new SandboxTimeoutError(`${req.method} ${url.pathname}: no answer within ${req.timeoutMs} ms`, { sandbox: req.sandbox })), req.timeoutMs);
    const onAbort = () => fail(req.signal!.reason);
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    };
    outgoing.on('error', (err: NodeJS.ErrnoException) => {
      fail(new SandboxConnectionError(`${req.method} ${url.pathname}: ${err.message}`, err.code, { sandbox: req.sandbox, cause: err }));
    });
    outgoing.on('response', (res) => {
      if (settled) return res.resume();
      const status = res.statusCode ?? 0;
      if (status < 400) {
        settled = true;
        cleanup();
        return resolve({ status, headers: res.headers, body: res });
      }
      readLimited(res, MAX_ERROR_BODY).then((text) => {
        const ErrorClass = status === 401 || status === 403 ? SandboxAuthError : SandboxHttpError;
        const err = new ErrorClass(status, parseBody(text), req.method, url.pathname, req.sandbox);
        const retryAfter = Number(res.headers['retry-after']);
        if (res.headers['retry-after'] !== undefined && Number.isFinite(retryAfter)) err.retryAfterSeconds = retryAfter;
        fail(err);
      }, fail);
    });
    const body = req.body;
    if (body instanceof Readable) {
      body.on('error', fail);
      body.pipe(outgoing);
    } else {
      outgoing.end(body);
    }
  });
}

/** The whole body as a Buffer; a connection lost on the way is a SandboxConnectionError. */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk as Buffer);
  } catch (err) {
    throw new SandboxConnectionError(`the answer was cut off: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code, { cause: err });
  }
  return Buffer.concat(chunks);
}

/** Sends the request and parses a JSON answer. */
export async function sendJson<T>(req: HttpRequest): Promise<T> {
  const res = await send(req);
  const text = (await readAll(res.body)).toString('utf8');
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new SandboxHttpError(res.status, text, req.method, new URL(req.url).pathname, req.sandbox);
  }
}

async function readLimited(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < limit) chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
