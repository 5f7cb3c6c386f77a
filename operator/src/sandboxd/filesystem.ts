/**
 * sandboxd's REST FilesystemService (kubernetes-sigs/agent-sandbox
 * `packages/sandboxd/pkg/server/filesystem.go`, spec `packages/sandboxd/spec/filesystem/v1/filesystem.yaml`),
 * served on its own port (8080): `GET|HEAD|PUT|DELETE /v1/files/{path...}`, `GET /v1/health`,
 * `GET /v1/metadata`. Errors are `{"code","message"}` JSON; PUT and DELETE answer 204. Unlike
 * upstream's Go mux, a literal `/v1/files/.` is served (not redirected), so `list(".")` works.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, promises as fsp, Stats } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MultipartError, PartSink, isMultipart, readFilePart } from './multipart';
import { confine, confineEntry, isWithin } from './paths';

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

  private async resolve(res: http.ServerResponse, requested: string, head = false): Promise<string | undefined> {
    const confined = await confine(this.root, requested);
    if (!confined.ok) {
      sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${confined.reason}`, head);
      return undefined;
    }
    return confined.path;
  }

  private async get(req: http.IncomingMessage, res: http.ServerResponse, requested: string, head: boolean): Promise<void> {
    const target = await this.resolve(res, requested, head);
    if (target === undefined) return;
    let stat: Stats;
    try {
      stat = await fsp.stat(target);
    } catch (err) {
      const code = errnoCode(err);
      return sendError(res, code, code === 'NOT_FOUND' ? 'path does not exist within the sandbox' : (err as Error).message, head);
    }
    if (stat.isDirectory()) return this.listing(res, target, requested, head);
    return this.serveFile(req, res, target, stat, head);
  }

  private async listing(res: http.ServerResponse, dir: string, requested: string, head: boolean): Promise<void> {
    let names: string[];
    try {
      names = (await fsp.readdir(dir)).sort();
    } catch (err) {
      return sendError(res, errnoCode(err), (err as Error).message, head);
    }
    const entries = [];
    for (const name of names) {
      const full = path.join(dir, name);
      let real: string;
      let stat: Stats;
      try {
        real = await fsp.realpath(full);
        stat = await fsp.stat(real);
      } catch {
        continue; // broken link
      }
      if (!isWithin(this.root, real)) continue; // a link out of the root
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

  private serveFile(req: http.IncomingMessage, res: http.ServerResponse, file: string, stat: Stats, head: boolean): void {
    const lastModified = new Date(Math.floor(stat.mtimeMs / 1000) * 1000);
    const since = req.headers['if-modified-since'];
    if (since !== undefined && !req.headers.range && Date.parse(since) >= lastModified.getTime()) {
      res.writeHead(304, { 'Last-Modified': lastModified.toUTCString() });
      res.end();
      return;
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
          return;
        }
        status = 206;
        headers['Content-Range'] = `bytes ${start}-${end}/${stat.size}`;
      }
    }
    headers['Content-Length'] = stat.size === 0 ? 0 : end - start + 1;
    res.writeHead(status, headers);
    if (head || stat.size === 0) {
      res.end();
      return;
    }
    // pipeline closes the file when the client goes away mid-download.
    pipeline(createReadStream(file, { start, end }), res).catch(() => undefined);
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
    const dir = path.dirname(target);
    try {
      await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
    } catch (err) {
      return discard(errnoCode(err) === 'PERMISSION_DENIED' ? 'PERMISSION_DENIED' : 'INTERNAL', (err as Error).message);
    }
    const again = await confine(this.root, path.relative(this.root, dir));
    if (!again.ok || again.path !== dir) return discard('PERMISSION_DENIED', 'path escapes the sandbox root through a symbolic link');
    const temp = path.join(dir, `.sandboxd-tmp-${randomBytes(6).toString('hex')}`);
    const sink = async (): Promise<PartSink> => {
      const stream = createWriteStream(temp, { flags: 'wx', mode: 0o600 });
      await once(stream, 'open');
      return {
        stream,
        finish: async () => {
          const handle = await fsp.open(temp, 'r+');
          try {
            await handle.chmod(mode);
            await handle.sync();
          } finally {
            await handle.close();
          }
          await fsp.rename(temp, target);
        },
        abort: () => fsp.rm(temp, { force: true }),
      };
    };
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
    const target = await this.resolve(res, requested);
    if (target === undefined) return;
    // The entry itself (a link is removed, not followed), under its confined parent.
    const confinedEntry = await confineEntry(this.root, requested);
    if (!confinedEntry.ok) return sendError(res, 'PERMISSION_DENIED', `path escapes the sandbox root: ${confinedEntry.reason}`);
    const entry = confinedEntry.path;
    const stat = await fsp.lstat(entry).catch(() => undefined);
    if (!stat) return sendError(res, 'NOT_FOUND', 'path does not exist within the sandbox');
    try {
      if (entry === this.root) {
        if (!recursive) return sendError(res, 'CONFLICT', 'refusing to delete the sandbox root without recursive=true');
        for (const name of await fsp.readdir(this.root)) await fsp.rm(path.join(this.root, name), { recursive: true, force: true });
      } else if (stat.isDirectory()) {
        if (recursive) await fsp.rm(entry, { recursive: true });
        else await fsp.rmdir(entry);
      } else {
        await fsp.unlink(entry);
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return sendError(res, 'CONFLICT', 'directory is not empty; pass recursive=true');
      return sendError(res, errnoCode(err), (err as Error).message);
    }
    res.writeHead(204);
    res.end();
  }
}
