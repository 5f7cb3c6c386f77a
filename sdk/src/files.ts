/**
 * `sandbox.files`: write, read, list, check and remove files in the sandbox's workspace over the
 * runtime's legacy API. Paths are relative to the workspace (`/a` means `a`); a path the runtime
 * refuses (it leaves the workspace through a link, or may not be read) is a SandboxPathError naming
 * the path as the caller gave it. Buffers and strings
 * are idempotent overwrites and retried on connection errors and 502/503/504; a streamed write is
 * sent once; reads and listings are retried; large files stream both ways.
 */
import { Readable } from 'node:stream';
import { PathSubject } from './errors.js';
import { readAll } from './http.js';
import { directoryPath, filePath } from './paths.js';
import { RuntimeApi } from './runtime-api.js';

/** Options of every file call. */
export interface FileCallOptions {
  /** Limit up to the answer's headers, and for each pause of a body read whole (`read`, `readText`, `list`, ...). @default the client's requestTimeoutMs */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface RemoveOptions extends FileCallOptions {
  /** Remove a non-empty directory with everything in it. @default false */
  readonly recursive?: boolean;
}

/** One entry of a directory listing. */
export interface FileEntry {
  readonly name: string;
  readonly type: 'file' | 'directory';
  /** Bytes. */
  readonly size: number;
  readonly modifiedAt?: Date;
}

/** What `files.write` takes: text (written as UTF-8), bytes, or a stream of bytes. */
export type FileContent = string | Uint8Array | Readable | AsyncIterable<Uint8Array>;

/** The file operations of a sandbox; the SandboxHandle's `files`. */
export interface SandboxFiles {
  /** Creates or replaces the file (and its parent directories). */
  write(path: string, content: FileContent, options?: FileCallOptions): Promise<void>;
  /** The whole file. Throws a SandboxHttpError with status 404 when it does not exist. */
  read(path: string, options?: FileCallOptions): Promise<Buffer>;
  /** The whole file as UTF-8 text. */
  readText(path: string, options?: FileCallOptions): Promise<string>;
  /** The file as a stream, for large files (consume it or destroy it). */
  readStream(path: string, options?: FileCallOptions): Promise<Readable>;
  /** The entries of a directory ('' or '/' is the workspace). */
  list(path?: string, options?: FileCallOptions): Promise<FileEntry[]>;
  exists(path: string, options?: FileCallOptions): Promise<boolean>;
  /** Removes a file, or a directory (`recursive` when it is not empty). */
  remove(path: string, options?: RemoveOptions): Promise<void>;
}

export class RuntimeFiles implements SandboxFiles {
  public constructor(private readonly api: RuntimeApi, private readonly defaultTimeoutMs: number, private readonly ensureOpen: () => void) {}

  public async write(path: string, content: FileContent, options: FileCallOptions = {}): Promise<void> {
    this.ensureOpen();
    const relative = filePath(path);
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content instanceof Uint8Array ? content : undefined;
    const body = bytes ?? (content instanceof Readable ? content : Readable.from(content as AsyncIterable<Uint8Array>));
    await this.api.upload(relative, body, { ...this.call(options, path), idempotent: bytes !== undefined, replayable: bytes !== undefined });
  }

  public async read(path: string, options: FileCallOptions = {}): Promise<Buffer> {
    this.ensureOpen();
    // The whole exchange is one retriable unit: a connection cut mid-body is tried again.
    const relative = filePath(path);
    return this.api.download(relative, { ...this.call(options, path), idempotent: true, bufferedBody: true }, readAll);
  }

  public async readText(path: string, options: FileCallOptions = {}): Promise<string> {
    return (await this.read(path, options)).toString('utf8');
  }

  public async readStream(path: string, options: FileCallOptions = {}): Promise<Readable> {
    this.ensureOpen();
    return this.api.download(filePath(path), { ...this.call(options, path), idempotent: true }, async (body) => body);
  }

  public async list(path = '', options: FileCallOptions = {}): Promise<FileEntry[]> {
    this.ensureOpen();
    const entries = (await this.api.list(directoryPath(path), { ...this.call(options, path), idempotent: true })) ?? [];
    return entries.map((e) => ({
      name: e.name, type: e.type, size: e.size, ...(e.mod_time ? { modifiedAt: new Date(e.mod_time * 1000) } : {}),
    }));
  }

  public async exists(path: string, options: FileCallOptions = {}): Promise<boolean> {
    this.ensureOpen();
    return (await this.api.exists(directoryPath(path), { ...this.call(options, path), idempotent: true })).exists === true;
  }

  public async remove(path: string, options: RemoveOptions = {}): Promise<void> {
    this.ensureOpen();
    await this.api.remove(filePath(path), options.recursive ?? false, { ...this.call(options, path), idempotent: true });
  }

  /** The options of a call about `path` (as the caller gave it: a refusal names it). */
  private call(options: FileCallOptions, path: string): { timeoutMs: number; signal?: AbortSignal; subject: PathSubject } {
    return { timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs, signal: options.signal, subject: { field: 'path', path } };
  }
}
