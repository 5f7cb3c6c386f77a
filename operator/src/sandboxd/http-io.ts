/**
 * Answers and request bodies of the runtime's legacy HTTP API (./server) and its process API
 * (./process-api): JSON answers with a length, the FastAPI-shaped 422 body, answers that do not
 * read the request body, and bounded body reads.
 */
import * as http from 'node:http';

/** The largest JSON request body. */
export const MAX_JSON_BODY = 1024 * 1024;

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A 422 as FastAPI words it: the field (`loc`) and what is wrong with it. */
export function invalidField(res: http.ServerResponse, loc: string, msg: string): void {
  sendJson(res, 422, { detail: [{ type: 'invalid', loc: ['body', loc], msg }] });
}

export function accessDenied(res: http.ServerResponse, reason: string): void {
  sendJson(res, 403, { message: 'Access denied', reason });
}

export function methodNotAllowed(req: http.IncomingMessage, res: http.ServerResponse): void {
  discard(req, res, 405, { detail: 'Method Not Allowed' });
}

/** Answers without reading the body: the connection closes so the unread body cannot desync it. */
export function discard(req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown): void {
  if (!req.complete) res.setHeader('Connection', 'close');
  sendJson(res, status, body);
  req.resume();
}

export class BodyTooLarge extends Error {}

export async function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLarge(`body larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The body as JSON, or undefined once the 422 (not JSON) or 413 (too large: the connection closes,
 * the rest is not read) was sent.
 */
export async function readJson(req: http.IncomingMessage, res: http.ServerResponse): Promise<{ value: unknown } | undefined> {
  try {
    return { value: JSON.parse((await readBody(req, MAX_JSON_BODY)).toString('utf8')) };
  } catch (err) {
    if (err instanceof BodyTooLarge) res.setHeader('Connection', 'close');
    sendJson(res, err instanceof BodyTooLarge ? 413 : 422, {
      detail: [{ type: 'json_invalid', loc: ['body'], msg: `JSON decode error: ${(err as Error).message}` }],
    });
    return undefined;
  }
}
