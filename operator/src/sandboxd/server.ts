/**
 * The legacy runtime HTTP API on port 8888, wire-compatible with upstream's python runtime
 * (`examples/python-runtime-sandbox/main.py` in kubernetes-sigs/agent-sandbox) and with what its
 * Python SDK sends: `GET /`, `POST /execute`, `POST /upload`, `GET /download/<path>`,
 * `GET /list/<path>`, `GET /exists/<path>`, with upstream's status codes and JSON field names.
 *
 * Beyond upstream: `/execute` accepts `timeout_seconds` (reports `timed_out`, exit 124) and
 * `shell: true` (run with /bin/sh -c; upstream only runs argv), `DELETE /delete/<path>`
 * (`?recursive=true` for a non-empty directory), `GET /healthz`, an optional bearer token, and 403
 * answers that carry a `reason` beside upstream's `message`.
 *
 * Unlike upstream, an absolute path (a file name, a path parameter, `cwd`) is taken literally, not
 * re-rooted: `/workspace/a.txt` is fine when the workspace is /workspace, `/etc/passwd` is a 403
 * whose reason says to use a path relative to the workspace; `/` alone still names the root (see
 * paths.ts).
 *
 * This runtime's process API, on this port too (./process-api, docs/runtime-processes.md): `/execute`
 * streams NDJSON when the request accepts `application/x-ndjson` (without that header it answers
 * as it always has), and `/processes` starts, lists, follows, signals and forgets background
 * processes. `GET /` names these `features`.
 *
 * On their own ports when asked: sandboxd's REST FilesystemService (`./filesystem`) and its gRPC
 * ProcessService (`./process-service`). The token, when set, guards those too (gRPC: the
 * `authorization` metadata, else UNAUTHENTICATED); upstream sandboxd has no authentication.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { promises as fsp, Stats } from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as grpc from '@grpc/grpc-js';
import { CommandCgroups } from './cgroup';
import { parseCommandRequest } from './command-request';
import {
  ConfinementError, O_PATH, READ_DIRECTORY, READ_FILE, createAtomically, lstatEntry, namesIn, openConfined, openDirectory, removeEntry,
} from './confined-fs';
import { CommandSlots, ExecResult, ProcessGroups, execute } from './exec';
import { FilesystemService } from './filesystem';
import { accessDenied, discard, methodNotAllowed, readJson, sendJson } from './http-io';
import { MultipartError, PartSink, isMultipart, readFilePart } from './multipart';
import { confine, confineEntry, decodePathParam } from './paths';
import { DEFAULT_PING_MS, ProcessApi, RETRY_AFTER_SECONDS, acceptsNdjson } from './process-api';
import { DEFAULT_MAX_BACKGROUND_PROCESSES, DEFAULT_RETENTION, ProcessRegistry, RetentionLimits } from './process-registry';

type FileHandle = fsp.FileHandle;

export interface SandboxdOptions {
  /** The workspace root: every path is confined to it and it is the cwd of every command. */
  readonly workspace: string;
  readonly port: number;
  readonly listenAddress: string;
  /** When set, every route but the health checks needs `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Default per-command limit; a request's `timeout_seconds` overrides it. */
  readonly execTimeoutMs: number;
  /** Bytes of stdout and of stderr kept per command. */
  readonly maxOutputBytes: number;
  /**
   * Commands that may run at once, `/execute` and gRPC together (default 16); beyond it `/execute`
   * answers 429 with Retry-After and gRPC RESOURCE_EXHAUSTED, so a burst cannot exhaust memory.
   */
  readonly maxConcurrentCommands?: number;
  /**
   * Background processes (`POST /processes`) that may run at once (default 16); beyond it the
   * start answers 429 with Retry-After. They do not take command slots.
   */
  readonly maxBackgroundProcesses?: number;
  /** What the process API keeps: output per process, finished processes (default 1 MiB, 10 minutes, 64). */
  readonly processRetention?: Partial<RetentionLimits>;
  /** How long an NDJSON answer may stay silent before it says `{"type":"ping"}` (default 15 s). */
  readonly pingMs?: number;
  /**
   * Whether each command gets a cgroup of its own where the runtime's cgroup allows it (default
   * true; see ./cgroup); false leaves finding a command's descendants to the /proc scan alone.
   */
  readonly commandCgroups?: boolean;
  /** When set, sandboxd's REST FilesystemService (/v1/files, /v1/health, /v1/metadata) listens here too. */
  readonly filesPort?: number;
  /** When set, sandboxd's gRPC ProcessService (plaintext HTTP/2) listens here too. */
  readonly grpcPort?: number;
  /** Largest stdout/stderr chunk of a gRPC Start stream (default 4096, upstream's). */
  readonly streamChunkSize?: number;
  /** Running as uid 0 is refused unless this is set. */
  readonly allowRoot: boolean;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export class RootRefusedError extends Error {}

export const DEFAULT_MAX_CONCURRENT_COMMANDS = 16;
export { DEFAULT_MAX_BACKGROUND_PROCESSES };
/** What the runtime offers beyond upstream, as `GET /` lists it (docs/runtime-processes.md). */
export const RUNTIME_FEATURES: readonly string[] = ['execute-ndjson', 'processes'];
/** How long a drain waits, once the commands are done, for the answers still being written. */
const RESPONSE_FLUSH_MS = 5_000;

export class SandboxdServer {
  private readonly groups = new ProcessGroups();
  private readonly slots: CommandSlots;
  private cgroups?: CommandCgroups;
  private draining = false;
  private root = '';
  private server?: http.Server;
  private filesServer?: http.Server;
  private files?: FilesystemService;
  private grpcServer?: grpc.Server;
  private grpcPort?: number;
  private active = 0;
  private onIdle?: () => void;
  private readonly tokenDigest?: Buffer;
  private registry?: ProcessRegistry;
  private processApi?: ProcessApi;

  public constructor(private readonly options: SandboxdOptions) {
    if (options.token !== undefined) this.tokenDigest = digest(options.token);
    this.slots = new CommandSlots(options.maxConcurrentCommands ?? DEFAULT_MAX_CONCURRENT_COMMANDS);
  }

  /** Checks the uid, resolves the workspace, listens; resolves with the bound address. */
  public async start(): Promise<AddressInfo> {
    if (!this.options.allowRoot && process.getuid?.() === 0) {
      throw new RootRefusedError('refusing to run as root (uid 0); run as an unprivileged user or pass --allow-root');
    }
    this.root = await fsp.realpath(this.options.workspace);
    const stat = await fsp.stat(this.root);
    if (!stat.isDirectory()) throw new Error(`the workspace ${this.root} is not a directory`);
    if (this.options.commandCgroups !== false) this.cgroups = await CommandCgroups.detect();
    this.registry = new ProcessRegistry({
      groups: this.groups,
      cgroups: this.cgroups,
      maxBackground: this.options.maxBackgroundProcesses ?? DEFAULT_MAX_BACKGROUND_PROCESSES,
      retention: { ...DEFAULT_RETENTION, ...this.options.processRetention },
    });
    this.processApi = new ProcessApi({
      root: this.root, registry: this.registry, pingMs: this.options.pingMs ?? DEFAULT_PING_MS, draining: () => this.draining,
    });
    const server = this.listen(this.options.port, (req, res) => this.handle(req, res));
    this.server = server;
    await listening(server);
    if (this.options.filesPort !== undefined) {
      this.files = new FilesystemService(this.root, () => this.draining);
      this.filesServer = this.listen(this.options.filesPort, (req, res) => this.handleFiles(req, res));
      await listening(this.filesServer);
    }
    if (this.options.grpcPort !== undefined) await this.startGrpc(this.options.grpcPort);
    return server.address() as AddressInfo;
  }

  /**
   * The gRPC service (and grpc-js, the largest part of the runtime's code) is imported here: a
   * runtime without `--grpc-port`, the default, never evaluates it.
   */
  private async startGrpc(port: number): Promise<void> {
    const { ProcessService, serveProcessService } = await import('./process-service');
    const service = new ProcessService({
      root: this.root,
      streamChunkSize: this.options.streamChunkSize ?? 4096,
      execTimeoutMs: this.options.execTimeoutMs,
      maxOutputBytes: this.options.maxOutputBytes,
      groups: this.groups,
      slots: this.slots,
      cgroups: this.cgroups,
      authorized: (authorization) => this.bearerMatches(authorization),
    });
    const host = this.options.listenAddress.includes(':') ? `[${this.options.listenAddress}]` : this.options.listenAddress;
    const served = await serveProcessService(service, `${host}:${port}`);
    this.grpcPort = served.port;
    this.grpcServer = served.server;
  }

  /** The gRPC ProcessService's port, when it listens. */
  public get grpcAddress(): { address: string; port: number } | undefined {
    return this.grpcPort === undefined ? undefined : { address: this.options.listenAddress, port: this.grpcPort };
  }

  /** The FilesystemService's address, when it listens. */
  public get filesAddress(): AddressInfo | undefined {
    return this.filesServer?.address() as AddressInfo | undefined;
  }

  private listen(port: number, handler: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>): http.Server {
    const server = http.createServer((req, res) => {
      this.active++;
      res.on('close', () => {
        this.active--;
        if (this.active === 0) this.onIdle?.();
      });
      handler(req, res).catch((err: Error) => {
        this.options.log?.('error', 'request failed', { err: err.stack ?? String(err) });
        if (!res.headersSent) sendJson(res, 500, { message: `Internal error: ${err.message}` });
        else res.destroy();
      });
    });
    // Uploads and downloads are unbounded: no limit on how long a request body may take.
    server.requestTimeout = 0;
    server.listen(port, this.options.listenAddress);
    return server;
  }

  private async handleFiles(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const rawPath = query < 0 ? url : url.slice(0, query);
    if (this.draining) res.setHeader('Connection', 'close');
    if (rawPath !== '/v1/health' && !this.authorized(req)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return discard(req, res, 401, { code: 'UNAUTHENTICATED', message: 'missing or invalid Authorization header' });
    }
    return this.files!.handle(req, res, rawPath, new URLSearchParams(query < 0 ? '' : url.slice(query + 1)));
  }

  /** Whether commands get cgroups of their own (see ./cgroup). */
  public get commandCgroups(): boolean {
    return this.cgroups !== undefined;
  }

  /** Running commands (process groups). */
  public get running(): number {
    return this.groups.size;
  }

  /**
   * Graceful stop: no new connections, health answers 503, running commands get `graceMs` to
   * finish, then their process groups are killed; resolves once the server is closed.
   */
  public async drain(graceMs: number): Promise<void> {
    this.draining = true;
    // Servers started in the background are told first, so they may end within the grace period.
    this.registry?.signalBackground('SIGTERM');
    const servers = [this.server, this.filesServer].filter((x): x is http.Server => x !== undefined);
    if (servers.length === 0) return;
    const closed = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    // No new gRPC calls; this settles once the running ones have ended (their commands finished or killed below).
    const grpcDone = this.grpcServer ? new Promise<void>((resolve) => this.grpcServer!.tryShutdown(() => resolve())) : Promise.resolve();
    for (const server of servers) server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)));
    const finished = await Promise.race([this.groups.idle().then(() => true), graceOver]);
    clearTimeout(timer);
    if (!finished) {
      this.options.log?.('warn', 'grace period over: killing the running commands', { running: this.groups.size });
      this.groups.killAll();
      await this.groups.idle();
    }
    // Let the answers to the finished commands go out (bounded), then drop what is left.
    let bound: NodeJS.Timeout | undefined;
    const flushOver = new Promise<void>((resolve) => (bound = setTimeout(resolve, RESPONSE_FLUSH_MS)));
    const httpIdle = this.active === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.onIdle = resolve));
    await Promise.race([Promise.all([httpIdle, grpcDone]), flushOver]);
    clearTimeout(bound);
    for (const server of servers) server.closeAllConnections();
    this.grpcServer?.forceShutdown();
    await closed;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const rawPath = query < 0 ? url : url.slice(0, query);
    const params = new URLSearchParams(query < 0 ? '' : url.slice(query + 1));
    const method = req.method ?? 'GET';
    if (this.draining) res.setHeader('Connection', 'close');

    if (rawPath === '/' || rawPath === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(req, res);
      if (rawPath === '/healthz') {
        return sendJson(res, this.draining ? 503 : 200, this.draining ? { status: 'draining' } : { status: 'ok' });
      }
      // features: this runtime's extensions (docs/runtime-processes.md); grpc_port: where sandboxd's
      // gRPC ProcessService listens, when it does (the SDK's PTY sessions find it here).
      return sendJson(res, 200, {
        status: 'ok', message: 'Sandbox Runtime is active.', features: RUNTIME_FEATURES, ...(this.grpcPort !== undefined ? { grpc_port: this.grpcPort } : {}),
      });
    }
    if (rawPath === '/processes' || rawPath.startsWith('/processes/')) {
      if (!this.authorized(req)) return this.unauthorized(req, res);
      return this.processApi!.handle(req, res, method, rawPath, params);
    }
    const route = routeOf(rawPath);
    if (!route) return discard(req, res, 404, { detail: 'Not Found' });
    if (method !== route.method) return methodNotAllowed(req, res);
    if (!this.authorized(req)) return this.unauthorized(req, res);
    switch (route.name) {
      case 'execute': return this.execute(req, res);
      case 'upload': return this.upload(req, res);
      case 'download': return this.download(res, decodePathParam(route.param));
      case 'list': return this.list(res, decodePathParam(route.param));
      case 'exists': return this.exists(res, decodePathParam(route.param));
      case 'delete': return this.remove(res, decodePathParam(route.param), params.get('recursive'));
    }
  }

  private authorized(req: http.IncomingMessage): boolean {
    return this.bearerMatches(req.headers.authorization);
  }

  private unauthorized(req: http.IncomingMessage, res: http.ServerResponse): void {
    res.setHeader('WWW-Authenticate', 'Bearer');
    discard(req, res, 401, { detail: 'Missing or invalid Authorization header.' });
  }

  private bearerMatches(authorization: string | undefined): boolean {
    if (!this.tokenDigest) return true;
    const match = /^bearer\s+(.+)$/i.exec(authorization ?? '');
    if (!match) return false;
    return timingSafeEqual(digest(match[1].trim()), this.tokenDigest);
  }

  /**
   * `/execute`: one JSON answer, as upstream's; with `Accept: application/x-ndjson`, the same
   * refusals, then an NDJSON stream (./process-api).
   */
  private async execute(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readJson(req, res);
    if (!body) return;
    const request = await parseCommandRequest(body.value, res, {
      root: this.root, defaultTimeoutMs: this.options.execTimeoutMs, processFields: false,
    });
    if (!request) return;
    const release = this.slots.take();
    if (!release) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return sendJson(res, 429, { detail: this.slots.refusal(), running: this.slots.running, limit: this.slots.limit });
    }
    if (acceptsNdjson(req.headers.accept)) return this.processApi!.executeStreaming(res, request, release);
    let result: ExecResult;
    try {
      result = await execute({
        ...request, timeoutMs: request.timeoutMs!, maxOutputBytes: this.options.maxOutputBytes, cgroups: this.cgroups,
      }, this.groups);
    } finally {
      release();
    }
    return sendJson(res, 200, result);
  }

  private async upload(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const contentType = req.headers['content-type'];
    if (!isMultipart(contentType)) {
      return discard(req, res, 422, { detail: [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required (multipart/form-data)' }] });
    }
    let denied: string | undefined;
    let filename: string | undefined;
    try {
      filename = await readFilePart(req, contentType, async (name) => {
        const confined = await confine(this.root, name);
        if (!confined.ok) {
          denied = confined.reason;
          return discardSink();
        }
        return this.fileSink(confined.path, name, (reason) => (denied = reason));
      });
    } catch (err) {
      // A body that is no multipart form is a 400 (as upstream's Starlette answers it); a form without the file part stays a 422.
      if (err instanceof MultipartError) return discard(req, res, 400, { detail: err.message });
      return discard(req, res, 500, { message: `File upload failed: ${(err as Error).message}` });
    }
    if (denied !== undefined) return accessDenied(res, denied);
    if (filename === undefined) return sendJson(res, 422, { detail: [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required' }] });
    return sendJson(res, 200, { message: `File '${filename}' uploaded successfully.` });
  }

  /**
   * Writes to a temp file beside the target, in a directory verified by descriptor, and renames it
   * over the target when complete; an escape found on the way is a 403 (see ./confined-fs).
   */
  private async fileSink(target: string, name: string, deny: (reason: string) => void): Promise<PartSink> {
    try {
      return await createAtomically(this.root, target, name);
    } catch (err) {
      if (!(err instanceof ConfinementError)) throw err;
      deny(err.message);
      return discardSink();
    }
  }

  private async download(res: http.ServerResponse, requested: string): Promise<void> {
    const handle = await this.open(res, requested, READ_FILE); // a FIFO or a directory: no regular file, so a 404 below
    if (!handle) return;
    const stat = await handle.stat().catch(async (err: Error) => {
      await handle.close();
      throw err;
    });
    if (!stat.isFile()) {
      await handle.close();
      return sendJson(res, 404, { message: 'File not found' });
    }
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `attachment; filename="${requested.replace(/[^\x20-\x7e]|["\\]/g, '_')}"`,
      'Content-Length': stat.size,
      'Last-Modified': stat.mtime.toUTCString(),
      'ETag': `"${stat.mtimeMs.toString(16)}-${stat.size.toString(16)}"`,
    });
    // pipeline closes the file when the client goes away mid-download, and drops the response on a read error.
    await pipeline(handle.createReadStream(), res).catch(() => undefined);
  }

  /**
   * What `requested` names, opened and verified to lie in the workspace (./confined-fs), or
   * undefined once the answer was sent: 403 on an escape, `missing` (404) when it is not there.
   */
  private async open(res: http.ServerResponse, requested: string, flags: number, missing = 'File not found'): Promise<FileHandle | undefined> {
    try {
      return await openConfined(this.root, requested, flags);
    } catch (err) {
      if (err instanceof ConfinementError) return void accessDenied(res, err.message);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return void sendJson(res, 404, { message: missing });
      if (code === 'EACCES' || code === 'EPERM') return void accessDenied(res, `"${requested}" is not readable by the runtime`);
      throw err;
    }
  }

  private async list(res: http.ServerResponse, requested: string): Promise<void> {
    const dir = await this.open(res, requested, READ_DIRECTORY, 'Path is not a directory');
    if (!dir) return;
    try {
      const entries = [];
      for (const name of await namesIn(dir)) {
        // The entry itself: a link is never followed (its target may lie outside, or be gone).
        const s = await lstatEntry(dir, name);
        if (s) entries.push(listEntry(name, s)); // else removed since readdir
      }
      return sendJson(res, 200, entries);
    } catch (err) {
      return sendJson(res, 500, { message: `List files failed: ${(err as Error).message}` });
    } finally {
      await dir.close();
    }
  }

  private async exists(res: http.ServerResponse, requested: string): Promise<void> {
    let found = true;
    try {
      await (await openConfined(this.root, requested, O_PATH)).close();
    } catch (err) {
      if (err instanceof ConfinementError) return accessDenied(res, err.message);
      found = false;
    }
    return sendJson(res, 200, { path: requested, exists: found });
  }

  private async remove(res: http.ServerResponse, requested: string, recursive: string | null): Promise<void> {
    const confined = await confine(this.root, requested);
    if (!confined.ok) return accessDenied(res, confined.reason);
    if (confined.path === this.root) return accessDenied(res, 'the workspace root itself cannot be deleted');
    // The entry itself, not what a symbolic link points at, removed through its verified parent.
    const entry = await confineEntry(this.root, requested);
    if (!entry.ok) return accessDenied(res, entry.reason);
    try {
      const parent = await openDirectory(this.root, path.dirname(entry.path), requested);
      try {
        if (!(await removeEntry(parent, path.basename(entry.path), recursive === 'true' || recursive === '1'))) {
          return sendJson(res, 404, { message: 'File not found' });
        }
      } finally {
        await parent.close();
      }
    } catch (err) {
      if (err instanceof ConfinementError) return accessDenied(res, err.message);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return sendJson(res, 404, { message: 'File not found' });
      if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        return sendJson(res, 409, { message: 'Directory not empty; pass recursive=true' });
      }
      return sendJson(res, 500, { message: `Delete failed: ${(err as Error).message}` });
    }
    return sendJson(res, 200, { path: requested, deleted: true });
  }
}

type RouteName = 'execute' | 'upload' | 'download' | 'list' | 'exists' | 'delete';

function routeOf(rawPath: string): { name: RouteName; method: string; param: string } | undefined {
  if (rawPath === '/execute') return { name: 'execute', method: 'POST', param: '' };
  if (rawPath === '/upload') return { name: 'upload', method: 'POST', param: '' };
  const match = /^\/(download|list|exists|delete)\/(.*)$/s.exec(rawPath);
  if (!match) return undefined;
  const name = match[1] as RouteName;
  return { name, method: name === 'delete' ? 'DELETE' : 'GET', param: match[2] };
}

/**
 * One `/list` entry from lstat. A symbolic link is reported as itself (its own size and mtime) with
 * `symlink: true` and type "file": upstream's SDKs accept only "file" and "directory".
 */
function listEntry(name: string, s: Stats): Record<string, unknown> {
  const entry: Record<string, unknown> = { name, size: s.size, type: s.isDirectory() ? 'directory' : 'file' };
  if (s.isSymbolicLink()) entry.symlink = true;
  entry.mod_time = s.mtimeMs / 1000;
  return entry;
}

function listening(server: http.Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function discardSink(): PartSink {
  return {
    stream: new Writable({ write: (_chunk, _enc, cb) => cb() }),
    finish: async () => undefined,
    abort: async () => undefined,
  };
}
