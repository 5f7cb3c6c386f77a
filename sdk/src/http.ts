/**
 * One HTTP exchange with the router or the runtime over node:http(s), with keep-alive agents, a
 * per-request time limit, an AbortSignal, streamed bodies both ways, and the SDK's errors: an error
 * status becomes a SandboxHttpError carrying the parsed body (SandboxAuthError, SandboxPathError or
 * SandboxSuspendedError by the answer's shape: see `httpErrorOf`), with the request's path as the
 * caller named it, and a
 * request without an answer becomes a SandboxConnectionError or a SandboxTimeoutError. The signal
 * holds until the answer's body has ended (an abort destroys the body), and a body read whole may
 * pause between chunks for at most the time limit.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { Readable } from 'node:stream';
import { PathSubject, SandboxConnectionError, SandboxHttpError, SandboxTimeoutError, httpErrorOf } from './errors.js';
import { shownRequestPath } from './paths.js';

export type Body = string | Uint8Array | Readable | undefined;

export interface HttpRequest {
  readonly method: string;
  /** Absolute URL. */
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: Body;
  /** Limit for the exchange up to the answer's headers; with `bufferedBody`, also for each pause of the body. */
  readonly timeoutMs: number;
  /** The body will be read whole at once: a body that stalls longer than `timeoutMs` between chunks is destroyed. */
  readonly bufferedBody?: boolean;
  /** With `bufferedBody`: the longest pause between chunks, when it is not `timeoutMs` (a retry's wait was shortened). */
  readonly bodyIdleMs?: number;
  readonly signal?: AbortSignal;
  /** Names the sandbox in errors. */
  readonly sandbox?: string;
  /** The path (or cwd) the request is about, as the caller gave it: a SandboxPathError names it. */
  readonly subject?: PathSubject;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: http.IncomingMessage;
}

/** Bytes of an error body kept for the error. */
const MAX_ERROR_BODY = 64 * 1024;

/** Errors `send` destroyed a body with on purpose (abort, stall): `readAll` rethrows them as they are. */
const bodyErrors = new WeakMap<Readable, unknown>();
/** The longest pause between chunks of a body `send` was told will be read whole. */
const bodyIdle = new WeakMap<Readable, { readonly ms: number; readonly error: () => Error }>();

function destroyBody(body: Readable, err: unknown): void {
  bodyErrors.set(body, err);
  body.destroy(err instanceof Error ? err : new Error(String(err)));
}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/** Sends the request; resolves with the response (status < 400) and its unread body stream. */
export function send(req: HttpRequest): Promise<HttpResponse> {
  const url = new URL(req.url);
  const secure = url.protocol === 'https:';
  const path = `${url.pathname}${url.search}`;
  const shown = shownRequestPath(url.pathname);
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
      // A streamed body would otherwise wait forever for a reader.
      if (req.body instanceof Readable) req.body.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new SandboxTimeoutError(`${req.method} ${shown}: no answer within ${req.timeoutMs} ms`, { sandbox: req.sandbox })), req.timeoutMs);
    let response: http.IncomingMessage | undefined;
    const onAbort = () => (response ? destroyBody(response, req.signal!.reason) : fail(req.signal!.reason));
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    };
    /** Keeps the signal on the body until it has ended; a buffered body gets its idle limit (applied by readAll). */
    const watchBody = (res: http.IncomingMessage) => {
      clearTimeout(timer);
      response = res;
      res.once('close', () => req.signal?.removeEventListener('abort', onAbort));
      if (req.bufferedBody) {
        const idleMs = req.bodyIdleMs ?? req.timeoutMs;
        bodyIdle.set(res, {
          ms: idleMs,
          error: () => new SandboxTimeoutError(`${req.method} ${shown}: the answer's body stalled for ${idleMs} ms`, { sandbox: req.sandbox }),
        });
      }
    };
    outgoing.on('error', (err: NodeJS.ErrnoException) => {
      fail(new SandboxConnectionError(`${req.method} ${shown}: ${err.message}`, err.code, { sandbox: req.sandbox, cause: err }));
    });
    outgoing.on('response', (res) => {
      if (settled) return res.resume();
      const status = res.statusCode ?? 0;
      if (status < 400) {
        settled = true;
        watchBody(res);
        return resolve({ status, headers: res.headers, body: res });
      }
      readLimited(res, MAX_ERROR_BODY).then((text) => {
        const err = httpErrorOf(status, parseBody(text), res.headers, req.method, shown, req.sandbox, req.subject);
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
  const idle = bodyIdle.get(body);
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (!idle) return;
    clearTimeout(timer);
    timer = setTimeout(() => destroyBody(body, idle.error()), idle.ms);
  };
  try {
    arm();
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      arm();
    }
  } catch (err) {
    if (bodyErrors.has(body)) throw bodyErrors.get(body);
    throw new SandboxConnectionError(`the answer was cut off: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code, { cause: err });
  } finally {
    clearTimeout(timer);
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
    throw new SandboxHttpError(res.status, text, req.method, shownRequestPath(new URL(req.url).pathname), req.sandbox);
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
