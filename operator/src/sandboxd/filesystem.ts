/**
 * sandboxd's REST FilesystemService (kubernetes-sigs/agent-sandbox
 * `packages/sandboxd/pkg/server/filesystem.go`, spec `packages/sandboxd/spec/filesystem/v1/filesystem.yaml`),
 * served on its own port (8080): `GET|HEAD|PUT|DELETE /v1/files/{path...}`, `GET /v1/health`,
 * `GET /v1/metadata`. Errors are `{"code","message"}` JSON; PUT and DELETE answer 204. Unlike
 * upstream's Go mux, a literal `/v1/files/.` is served (not redirected), so `list(".")` works.
 */
import { once } from 'node:events';
import { promises as fsp, Stats } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  ConfinementError, READ_FILE, createAtomically, emptyDirectory, namesIn, openConfined, openDirectory, removeEntry, statEntryInside,
} from './confined-fs';
import { MultipartError, isMultipart, readFilePart } from './multipart';
import { confine, confineEntry } from './paths';

type FileHandle = fsp.FileHandle;

type Code = 'INVALID_ARGUMENT' | 'PERMISSION_DENIED' | 'NOT_FOUND' | 'CONFLICT' | 'INTERNAL' | 'UNAVAILABLE';
const STATUS: Record<Code, number> = {
  INVALID_ARGUMENT: 400, PERMISSION_DENIED: 403, NOT_FOUND: 404, CONFLICT: 409, INTERNAL: 500, UNAVAILABLE: 503,
};
const SENSITIVE = /TOKEN|SECRET|PASSWORD|PASSWD|CRED|KEY|AUTH|BEARER|PRIVATE|CERT/;
/** What Go's strconv.ParseBool accepts. */
const GO_TRUE = ['1', 't', 'T', 'true', 'TRUE', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'false', 'FALSE', 'False'];

/** The `SANDBOX_*` variables, minus anything that looks like a credential. */
export function metadataEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('SANDBOX_') && value !== undefined && !SENSITIVE.test(name.toUpperCase())) out[name] = value;
  }
  return out;
}

/** Go's RFC 3339 at second precision, UTC. */
export function rfc3339(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

function sendError(res: http.ServerResponse, code: Code, message: string, head = false): void {
  const text = JSON.stringify({ code, message });
  res.writeHead(STATUS[code], { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(head ? undefined : text);
}

function sendJson(res: http.ServerResponse, body: unknown, head = false): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(head ? undefined : text);
}

function errnoCode(err: unknown): Code {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'NOT_FOUND';
  if (code === 'EACCES' || code === 'EPERM') return 'PERMISSION_DENIED';
  return 'INTERNAL';
}

export class FilesystemService {
  private readonly started = Date.now();
  private readonly env: Record<string, string>;

  public constructor(private readonly root: string, private readonly isDraining: () => boolean, env: NodeJS.ProcessEnv = process.env) {
    this.env = metadataEnv(env);
  }

  /** The request's path and query are already split; auth is the caller's. */
  public async handle(req: http.IncomingMessage, res: http.ServerResponse, rawPath: string, params: URLSearchParams): Promise<void> {
    const method = req.method ?? 'GET';
    if (rawPath === '/v1/health' || rawPath === '/v1/metadata') {
      if (method !== 'GET' && method !== 'HEAD') return this.notAllowed(req, res, 'GET, HEAD');
      if (rawPath === '/v1/metadata') return sendJson(res, { env: this.env }, method === 'HEAD');
      if (this.isDraining()) return sendError(res, 'UNAVAILABLE', 'sandboxd is shutting down', method === 'HEAD');
      return sendJson(res, { status: 'ok', uptime_seconds: Math.floor((Date.now() - this.started) / 1000) }, method === 'HEAD');
    }
    if (rawPath !== '/v1/files' && !rawPath.startsWith('/v1/files/')) {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end('404 page not found\n');
      return;
    }
    let requested: string;
    try {
      requested = decodeURIComponent(rawPath.slice('/v1/files/'.length));
    } catch {
      return sendError(res, 'INVALID_ARGUMENT', 'invalid percent-encoding in the path');
    }
    switch (method) {
      case 'GET': case 'HEAD': return this.get(req, res, requested, method === 'HEAD');
      case 'PUT': return this.put(req, res, requested, params);
      case 'DELETE': return this.remove(res, requested, params);
      default: return this.notAllowed(req, res, 'DELETE, GET, HEAD, PUT');
    }
  }

  private notAllowed(req: http.IncomingMessage, res: http.ServerResponse, allow: string): void {
    req.resume();
    res.writeHead(405, { 'Allow': allow, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('Method Not Allowed\n');
  }

  private async get(req: http.IncomingMessage, res: http.ServerResponse, requested: string, head: boolean): Promise<void> {
    // The descriptor, not the path, is checked and then used (./confined-fs).
    let handle: FileHandle;
    try {
      handle = await openConfined(this.root, requested, READ_FILE);
    } catch (err) {
      if (err instanceof ConfinementError) return sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${err.message}`, head);
      const code = errnoCode(err);
      return sendError(res, code, code === 'NOT_FOUND' ? 'path does not exist within the sandbox' : (err as Error).message, head);
    }
    const stat = await handle.stat().catch(async (err: Error) => {
      await handle.close();
      throw err;
    });
    if (!stat.isDirectory()) return this.serveFile(req, res, handle, stat, head);
    try {
      return await this.listing(res, handle, requested, head);
    } finally {
      await handle.close();
    }
  }

  private async listing(res: http.ServerResponse, dir: FileHandle, requested: string, head: boolean): Promise<void> {
    let names: string[];
    try {
      names = (await namesIn(dir)).sort();
    } catch (err) {
      return sendError(res, errnoCode(err), (err as Error).message, head);
    }
    const entries = [];
    for (const name of names) {
      // A link is followed only to where it leads inside the root; broken links and links out are left out.
      const stat = await statEntryInside(this.root, dir, name);
      if (!stat) continue;
      entries.push({
        name,
        size: stat.size,
        type: stat.isDirectory() ? 'directory' : 'file',
        modified_at: rfc3339(stat.mtime),
        mode: (stat.mode % 0o1000).toString(8).padStart(4, '0'),
      });
    }
    const shown = `/${requested.replace(/^\/+/, '').replace(/\/+$/, '')}`;
    return sendJson(res, { path: shown === '/.' ? '/' : shown, entries }, head);
  }

  /** Answers with the open file `file` (closed here); ranges and If-Modified-Since as Go's http.ServeContent. */
  private serveFile(req: http.IncomingMessage, res: http.ServerResponse, file: FileHandle, stat: Stats, head: boolean): void {
    let streaming = false;
    try {
      streaming = this.sendFile(req, res, file, stat, head);
    } finally {
      if (!streaming) void file.close();
    }
  }

  /** True when the body is being streamed from `file` (which then closes it). */
  private sendFile(req: http.IncomingMessage, res: http.ServerResponse, file: FileHandle, stat: Stats, head: boolean): boolean {
    const lastModified = new Date(Math.floor(stat.mtimeMs / 1000) * 1000);
    const since = req.headers['if-modified-since'];
    if (since !== undefined && !req.headers.range && Date.parse(since) >= lastModified.getTime()) {
      res.writeHead(304, { 'Last-Modified': lastModified.toUTCString() });
      res.end();
      return false;
    }
    const headers: http.OutgoingHttpHeaders = {
      'Content-Type': 'application/octet-stream',
      'Last-Modified': lastModified.toUTCString(),
      'Accept-Ranges': 'bytes',
    };
    let start = 0;
    let end = stat.size - 1;
    let status = 200;
    const range = req.headers.range;
    if (range !== undefined) {
      const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (match && (match[1] !== '' || match[2] !== '')) {
        if (match[1] === '') {
          start = Math.max(0, stat.size - Number(match[2]));
        } else {
          start = Number(match[1]);
          if (match[2] !== '') end = Math.min(end, Number(match[2]));
        }
        if (start >= stat.size || start > end) {
          res.writeHead(416, { 'Content-Range': `bytes */${stat.size}`, 'Content-Type': 'text/plain; charset=utf-8' });
          res.end(head ? undefined : 'invalid range: failed to overlap\n');
          return false;
        }
        status = 206;
        headers['Content-Range'] = `bytes ${start}-${end}/${stat.size}`;
      }
    }
    headers['Content-Length'] = stat.size === 0 ? 0 : end - start + 1;
    res.writeHead(status, headers);
    if (head || stat.size === 0) {
      res.end();
      return false;
    }
    // pipeline closes the file when the client goes away mid-download.
    pipeline(file.createReadStream({ start, end }), res).catch(() => undefined);
    return true;
  }

  private async put(req: http.IncomingMessage, res: http.ServerResponse, requested: string, params: URLSearchParams): Promise<void> {
    const discard = (code: Code, message: string) => {
      if (!req.complete) res.setHeader('Connection', 'close');
      req.resume();
      sendError(res, code, message);
    };
    const modeText = params.get('mode') ?? '0644';
    if (!/^0[0-7]{3}$/.test(modeText)) return discard('INVALID_ARGUMENT', `invalid mode "${modeText}": want 0NNN octal`);
    const mode = parseInt(modeText, 8);
    const confined = await confine(this.root, requested);
    if (!confined.ok) return discard('PERMISSION_DENIED', `path escapes the sandbox root: ${confined.reason}`);
    const target = confined.path;
    if (target === this.root || (await fsp.stat(target).then((s) => s.isDirectory(), () => false))) {
      return discard('INVALID_ARGUMENT', 'target is a directory');
    }
    // Parents (0755) and the temp file are made through a directory descriptor verified to lie in the root (./confined-fs).
    const sink = () => createAtomically(this.root, target, requested, { mode, dirMode: 0o755 });
    const contentType = req.headers['content-type'];
    try {
      if (isMultipart(contentType)) {
        const found = await readFilePart(req, contentType, () => sink());
        if (found === undefined) return sendError(res, 'INVALID_ARGUMENT', 'multipart body has no "file" part');
      } else {
        const part = await sink();
        try {
          for await (const chunk of req) {
            if (!(part.stream as Writable).write(chunk)) await once(part.stream, 'drain');
          }
          part.stream.end();
          await once(part.stream, 'finish');
          await part.finish();
        } catch (err) {
          part.stream.destroy();
          await part.abort();
          throw err;
        }
      }
    } catch (err) {
      if (err instanceof MultipartError) return discard('INVALID_ARGUMENT', err.message);
      if (err instanceof ConfinementError) return discard('PERMISSION_DENIED', `path escapes the sandbox root: ${err.message}`);
      return discard(errnoCode(err) === 'PERMISSION_DENIED' ? 'PERMISSION_DENIED' : 'INTERNAL', (err as Error).message);
    }
    res.writeHead(204);
    res.end();
  }

  private async remove(res: http.ServerResponse, requested: string, params: URLSearchParams): Promise<void> {
    const recursiveText = params.get('recursive');
    let recursive = false;
    if (recursiveText !== null) {
      if (!GO_TRUE.includes(recursiveText) && !GO_FALSE.includes(recursiveText)) {
        return sendError(res, 'INVALID_ARGUMENT', `invalid recursive value "${recursiveText}"`);
      }
      recursive = GO_TRUE.includes(recursiveText);
    }
    const confined = await confine(this.root, requested);
    if (!confined.ok) return sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${confined.reason}`);
    // The entry itself (a link is removed, not followed), through its parent's verified descriptor.
    const confinedEntry = await confineEntry(this.root, requested);
    if (!confinedEntry.ok) return sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${confinedEntry.reason}`);
    const entry = confinedEntry.path;
    const isRoot = entry === this.root;
    if (isRoot && !recursive) return sendError(res, 'CONFLICT', 'refusing to delete the sandbox root without recursive=true');
    try {
      const dir = await openDirectory(this.root, isRoot ? this.root : path.dirname(entry), requested);
      try {
        if (isRoot) await emptyDirectory(dir);
        else if (!(await removeEntry(dir, path.basename(entry), recursive))) return sendError(res, 'NOT_FOUND', 'path does not exist within the sandbox');
      } finally {
        await dir.close();
      }
    } catch (err) {
      if (err instanceof ConfinementError) return sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${err.message}`);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return sendError(res, 'CONFLICT', 'directory is not empty; pass recursive=true');
      const status = errnoCode(err);
      return sendError(res, status, status === 'NOT_FOUND' ? 'path does not exist within the sandbox' : (err as Error).message);
    }
    res.writeHead(204);
    res.end();
  }
}
