/**
 * `sandbox.files` in E2B's shape, over the SDK's files API (the runtime's workspace). Paths go
 * through Workspace (absolute under `workspacePath`, or relative to it). What the files API has no
 * call for is done with a command in the workspace: `makeDir` (`mkdir -p`) and `rename` (`mv`).
 * `watchDir` has no counterpart and throws a NotSupportedError.
 */
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { FileCallOptions, FileContent } from '../files.js';
import { checkUser, FacadeContext } from './commands.js';
import { InvalidArgumentError, NotFoundError, NotSupportedError, SandboxError, e2bCall } from './errors.js';

/** The type of a filesystem entry, with E2B's values. */
export enum FileType {
  FILE = 'file',
  DIR = 'dir',
}

/** A file or directory, as E2B's `files.list` and `getInfo` describe it (the runtime reports no mode, owner or group). */
export interface EntryInfo {
  readonly name: string;
  readonly type: FileType;
  /** Its absolute path, under `workspacePath`. */
  readonly path: string;
  /** Bytes. */
  readonly size: number;
  readonly modifiedTime?: Date;
}

/** What `files.write` wrote. */
export interface WriteInfo {
  readonly name: string;
  readonly type?: FileType;
  readonly path: string;
}

/** What `files.write` takes. */
export type WriteData = string | ArrayBuffer | Uint8Array | Blob | ReadableStream<Uint8Array>;

/** One file of `files.write(entries)`. */
export interface WriteEntry {
  readonly path: string;
  readonly data: WriteData;
}

export interface FilesystemRequestOpts {
  /** The request's time limit, up to the answer's headers. @default the client's requestTimeoutMs */
  readonly requestTimeoutMs?: number;
  /** Only the sandbox's own user (`"user"`, or unset). */
  readonly user?: string;
}

export interface FilesystemListOpts extends FilesystemRequestOpts {
  /** How many levels to list: 1 is the directory's own entries. @default 1 */
  readonly depth?: number;
}

export type ReadFormat = 'text' | 'bytes' | 'blob' | 'stream';

export class Filesystem {
  public constructor(private readonly ctx: FacadeContext) {}

  /** The file as UTF-8 text, or as `format` says. */
  public read(path: string, opts?: FilesystemRequestOpts & { readonly format?: 'text' }): Promise<string>;
  public read(path: string, opts: FilesystemRequestOpts & { readonly format: 'bytes' }): Promise<Uint8Array>;
  public read(path: string, opts: FilesystemRequestOpts & { readonly format: 'blob' }): Promise<Blob>;
  public read(path: string, opts: FilesystemRequestOpts & { readonly format: 'stream' }): Promise<ReadableStream<Uint8Array>>;
  public read(
    path: string, opts: FilesystemRequestOpts & { readonly format?: ReadFormat } = {},
  ): Promise<string | Uint8Array | Blob | ReadableStream<Uint8Array>> {
    return e2bCall(async () => {
      const relative = this.path(path, opts, 'files.read');
      const files = this.ctx.handle.files;
      const format = opts.format ?? 'text';
      if (format === 'stream') return Readable.toWeb(await files.readStream(relative, call(opts))) as unknown as ReadableStream<Uint8Array>;
      const bytes = await files.read(relative, call(opts));
      if (format === 'text') return bytes.toString('utf8');
      if (format === 'bytes') return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (format === 'blob') return new Blob([bytes]);
      throw new InvalidArgumentError(`files.read: format must be "text", "bytes", "blob" or "stream", got ${JSON.stringify(format)}`);
    });
  }

  /** Creates or replaces the file (and its parent directories). */
  public write(path: string, data: WriteData, opts?: FilesystemRequestOpts): Promise<WriteInfo>;
  /** Writes each file, one after the other. */
  public write(files: readonly WriteEntry[], opts?: FilesystemRequestOpts): Promise<WriteInfo[]>;
  public write(
    target: string | readonly WriteEntry[], data?: WriteData | FilesystemRequestOpts, opts?: FilesystemRequestOpts,
  ): Promise<WriteInfo | WriteInfo[]> {
    return e2bCall(async () => {
      if (Array.isArray(target)) {
        const options = (data ?? {}) as FilesystemRequestOpts;
        const written: WriteInfo[] = [];
        for (const entry of target as readonly WriteEntry[]) written.push(await this.writeOne(entry?.path, entry?.data, options));
        return written;
      }
      return this.writeOne(target as string, data as WriteData, opts ?? {});
    });
  }

  /** The entries of a directory (`depth` levels of it). */
  public list(path: string, opts: FilesystemListOpts = {}): Promise<EntryInfo[]> {
    return e2bCall(async () => {
      const depth = opts.depth ?? 1;
      if (!Number.isSafeInteger(depth) || depth < 1) throw new InvalidArgumentError(`files.list: depth must be a whole number >= 1, got ${depth}`);
      return this.listLevels(this.path(path, opts, 'files.list'), depth, opts);
    });
  }

  public exists(path: string, opts: FilesystemRequestOpts = {}): Promise<boolean> {
    return e2bCall(() => this.ctx.handle.files.exists(this.path(path, opts, 'files.exists'), call(opts)));
  }

  /** Information about one file or directory; a NotFoundError when there is none. */
  public getInfo(path: string, opts: FilesystemRequestOpts = {}): Promise<EntryInfo> {
    return e2bCall(() => this.info(this.path(path, opts, 'files.getInfo'), path, opts));
  }

  /** Removes a file, or a directory with everything in it; nothing when there is none. */
  public remove(path: string, opts: FilesystemRequestOpts = {}): Promise<void> {
    return e2bCall(async () => {
      const relative = this.path(path, opts, 'files.remove');
      if (relative === '') throw new InvalidArgumentError(`files.remove: "${path}" is the workspace itself; remove what is in it instead`);
      if (!(await this.ctx.handle.files.exists(relative, call(opts)))) return;
      await this.ctx.handle.files.remove(relative, { ...call(opts), recursive: true });
    });
  }

  /** Creates the directory and its parents (`mkdir -p`, a command in the workspace): true, or false when it existed. */
  public makeDir(path: string, opts: FilesystemRequestOpts = {}): Promise<boolean> {
    return e2bCall(async () => {
      const relative = this.path(path, opts, 'files.makeDir');
      if (relative === '' || (await this.ctx.handle.files.exists(relative, call(opts)))) return false;
      await this.shell('files.makeDir', `mkdir -p -- ${quote(relative)}`);
      return true;
    });
  }

  /** Moves a file or directory (`mv`, a command in the workspace); resolves with its new entry. */
  public rename(oldPath: string, newPath: string, opts: FilesystemRequestOpts = {}): Promise<EntryInfo> {
    return e2bCall(async () => {
      const from = this.path(oldPath, opts, 'files.rename');
      const to = this.path(newPath, opts, 'files.rename');
      if (from === '' || to === '') throw new InvalidArgumentError('files.rename: cannot move the workspace itself, nor onto it');
      if (!(await this.ctx.handle.files.exists(from, call(opts)))) throw new NotFoundError(`files.rename: "${oldPath}" does not exist`, { sandbox: this.ctx.handle.name });
      await this.shell('files.rename', `mv -- ${quote(from)} ${quote(to)}`);
      return this.info(to, newPath, opts);
    });
  }

  /** E2B's directory watch: the runtime has none. */
  public async watchDir(_path: string, ..._rest: unknown[]): Promise<never> {
    throw new NotSupportedError('files.watchDir', 'the runtime has no file watch; poll files.list(), or run a watcher (inotifywait) with commands.run(..., { background: true, onStdout })');
  }

  private async writeOne(target: string, data: WriteData, opts: FilesystemRequestOpts): Promise<WriteInfo> {
    const relative = this.path(target, opts, 'files.write');
    if (relative === '') throw new InvalidArgumentError(`files.write: "${target}" is the workspace itself, not a file`);
    await this.ctx.handle.files.write(relative, await content(data), call(opts));
    return { name: posix.basename(relative), type: FileType.FILE, path: this.ctx.workspace.absolute(relative) };
  }

  private async listLevels(relative: string, depth: number, opts: FilesystemRequestOpts): Promise<EntryInfo[]> {
    const entries: EntryInfo[] = [];
    for (const entry of await this.ctx.handle.files.list(relative, call(opts))) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      entries.push(entryInfo(this.ctx.workspace.absolute(child), entry));
      if (depth > 1 && entry.type === 'directory') entries.push(...await this.listLevels(child, depth - 1, opts));
    }
    return entries;
  }

  private async info(relative: string, given: string, opts: FilesystemRequestOpts): Promise<EntryInfo> {
    const root = this.ctx.workspace.absolute('');
    if (relative === '') return { name: posix.basename(root), type: FileType.DIR, path: root, size: 0 };
    const parent = posix.dirname(relative);
    const name = posix.basename(relative);
    const entry = (await this.ctx.handle.files.list(parent === '.' ? '' : parent, call(opts)).catch((err) => {
      // A missing parent directory: the entry is missing too.
      if (err instanceof SandboxError && (err as { status?: number }).status === 404) return [];
      throw err;
    })).find((e) => e.name === name);
    if (!entry) throw new NotFoundError(`"${given}" does not exist in sandbox ${this.ctx.handle.name}`, { sandbox: this.ctx.handle.name });
    return entryInfo(this.ctx.workspace.absolute(relative), entry);
  }

  private path(value: string, opts: FilesystemRequestOpts, method: string): string {
    checkUser(opts.user, method);
    return this.ctx.workspace.relative(value, `${method}: path`);
  }

  private async shell(method: string, command: string): Promise<void> {
    const result = await this.ctx.handle.run(command, { timeoutMs: 30_000 });
    if (result.exitCode !== 0) throw new SandboxError(`${method}: ${command} failed (exit code ${result.exitCode}): ${result.stderr.trim()}`, { sandbox: this.ctx.handle.name });
  }
}

function entryInfo(absolute: string, entry: { name: string; type: 'file' | 'directory'; size: number; modifiedAt?: Date }): EntryInfo {
  return {
    name: entry.name,
    type: entry.type === 'directory' ? FileType.DIR : FileType.FILE,
    path: absolute,
    size: entry.size,
    ...(entry.modifiedAt ? { modifiedTime: entry.modifiedAt } : {}),
  };
}

function call(opts: FilesystemRequestOpts): FileCallOptions {
  return opts.requestTimeoutMs === undefined ? {} : { timeoutMs: opts.requestTimeoutMs };
}

async function content(data: WriteData): Promise<FileContent> {
  if (typeof data === 'string' || data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (typeof Blob !== 'undefined' && data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
  if (data && typeof (data as ReadableStream).getReader === 'function') return Readable.fromWeb(data as unknown as WebReadableStream<Uint8Array>);
  throw new InvalidArgumentError('files.write: data must be a string, an ArrayBuffer, a Uint8Array, a Blob or a ReadableStream');
}

/** A word for /bin/sh, quoted. */
function quote(word: string): string {
  return `'${word.replace(/'/g, '\'\\\'\'')}'`;
}
