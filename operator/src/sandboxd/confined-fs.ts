/**
 * File operations that stay in the workspace even while its contents change under them.
 *
 * `confine()` (./paths) checks a path, but a directory on that path can be swapped for a symbolic
 * link to `/etc` between the check and the open. So every operation here checks what it opened,
 * not the path: after open(2) the descriptor's real path (`readlink /proc/self/fd/N`) must lie in
 * the workspace. Creating and removing go through a directory descriptor reached from the root one
 * component at a time with O_NOFOLLOW, then name the entry relative to it as
 * `/proc/self/fd/<dir>/<name>` (the kernel resolves that link to the open directory itself, like
 * openat(2), which Node lacks); a swapped-in link on the way is refused, and the final component
 * is never followed (O_EXCL|O_NOFOLLOW on create; rename, unlink and rmdir do not follow it).
 * Needs Linux /proc; without it nothing can be verified and every operation fails.
 */
/* eslint-disable no-bitwise -- open(2)'s flags are a bit set */
import { randomBytes } from 'node:crypto';
import { constants as C, promises as fsp, Stats } from 'node:fs';
import * as path from 'node:path';
import type { PartSink } from './multipart';
import { confine, isWithin } from './paths';

type FileHandle = fsp.FileHandle;

/** open(2)'s O_PATH (Linux, all architectures Node runs on): a handle on the entry itself, no read access needed. Node does not export it. */
export const O_PATH = 0o10000000;

/** Flags to open a file for reading; O_NONBLOCK so that opening a FIFO cannot hang (it is then refused as no regular file). */
export const READ_FILE = C.O_RDONLY | C.O_NONBLOCK;
/** Flags to open a directory for listing. */
export const READ_DIRECTORY = C.O_RDONLY | C.O_DIRECTORY;

/** A path was swapped (or a link points) so that the operation would leave the workspace. */
export class ConfinementError extends Error {}

/** `/proc/self/fd/<fd>`, or an entry of that open directory: names what is open, wherever its path now leads. */
export function fdPath(handle: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${handle.fd}` : `/proc/self/fd/${handle.fd}/${name}`;
}

/** The real path `handle` is open on; a ConfinementError when it lies outside `root`. */
async function verifyInside(root: string, handle: FileHandle, requested: string): Promise<string> {
  const real = await fsp.readlink(fdPath(handle));
  if (!isWithin(root, real)) throw new ConfinementError(`"${requested}" resolves outside the workspace through a symbolic link`);
  return real;
}

/** Opens `file` with `flags` and returns the handle if what it opened lies inside `root` (else closes it and throws ConfinementError). */
export async function openVerified(root: string, file: string, flags: number, requested: string): Promise<FileHandle> {
  const handle = await fsp.open(file, flags);
  try {
    await verifyInside(root, handle, requested);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Opens what `requested` names (confined first, so a plain escape gets its usual reason) and
 * verifies the descriptor. Throws ConfinementError on an escape; open(2)'s own errors (ENOENT,
 * ENOTDIR, EACCES, ...) pass through. The caller closes the handle.
 */
export async function openConfined(root: string, requested: string, flags: number): Promise<FileHandle> {
  const confined = await confine(root, requested);
  if (!confined.ok) throw new ConfinementError(confined.reason);
  return openVerified(root, confined.path, flags, requested);
}

/**
 * The directory `dir` (a path inside `root`, normally from confine()) opened by walking from the
 * root with O_NOFOLLOW, creating missing components when `createMode` is given. A link met on the
 * way is refused: confine() resolved the real links already, so one now was swapped in.
 */
export async function openDirectory(root: string, dir: string, requested: string, createMode?: number): Promise<FileHandle> {
  if (!isWithin(root, dir)) throw new ConfinementError(`"${requested}" resolves outside the workspace`);
  let current = await openVerified(root, root, READ_DIRECTORY, requested);
  try {
    for (const name of path.relative(root, dir).split('/').filter((n) => n !== '')) {
      if (createMode !== undefined) await fsp.mkdir(fdPath(current, name), createMode).catch(ignore('EEXIST'));
      const next = await fsp.open(fdPath(current, name), C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW).catch((err: NodeJS.ErrnoException) => {
        // O_NOFOLLOW with O_DIRECTORY says ENOTDIR (sometimes ELOOP) for a link: tell it from a plain file.
        if (err.code !== 'ENOTDIR' && err.code !== 'ELOOP') throw err;
        return fsp.lstat(fdPath(current, name)).then((st) => {
          throw st.isSymbolicLink() ? new ConfinementError(`"${requested}" changed to pass through a symbolic link while being opened`) : err;
        });
      });
      await current.close();
      current = next;
    }
    await verifyInside(root, current, requested);
    return current;
  } catch (err) {
    await current.close().catch(() => undefined);
    throw err;
  }
}

/** A handler for a rejected fs call that ignores the given error codes. */
function ignore(...codes: string[]): (err: NodeJS.ErrnoException) => void {
  return (err) => {
    if (!codes.includes(err.code ?? '')) throw err;
  };
}

export interface CreateOptions {
  /** Mode of the finished file, set (with an fsync) before it is renamed into place; default: 0666 less the umask, no fsync. */
  readonly mode?: number;
  /** Mode of created parent directories (default 0777 less the umask). */
  readonly dirMode?: number;
}

/**
 * A sink that writes `target` (a confined real path) atomically: its parents are created as
 * needed, a temp file is made beside it in the verified directory, and `finish` renames it over
 * the target there; `abort` removes it.
 */
export async function createAtomically(root: string, target: string, requested: string, options: CreateOptions = {}): Promise<PartSink> {
  const dir = await openDirectory(root, path.dirname(target), requested, options.dirMode ?? 0o777);
  const temp = `.sandboxd-upload-${randomBytes(6).toString('hex')}`;
  let file: FileHandle;
  try {
    file = await fsp.open(fdPath(dir, temp), C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, options.mode === undefined ? 0o666 : 0o600);
  } catch (err) {
    await dir.close();
    throw err;
  }
  const closeDir = () => dir.close().catch(() => undefined);
  return {
    stream: file.createWriteStream(),
    finish: async () => {
      try {
        if (options.mode !== undefined) {
          const written = await fsp.open(fdPath(dir, temp), C.O_RDONLY | C.O_NOFOLLOW);
          try {
            await written.chmod(options.mode);
            await written.sync();
          } finally {
            await written.close();
          }
        }
        await fsp.rename(fdPath(dir, temp), fdPath(dir, path.basename(target)));
      } catch (err) {
        await fsp.unlink(fdPath(dir, temp)).catch(() => undefined);
        throw err;
      } finally {
        await closeDir();
      }
    },
    abort: async () => {
      await fsp.unlink(fdPath(dir, temp)).catch(() => undefined);
      await closeDir();
    },
  };
}

/** The names in an open directory. */
export function namesIn(dir: FileHandle): Promise<string[]> {
  return fsp.readdir(fdPath(dir));
}

/** lstat of an entry of an open directory (the entry itself, a link not followed); undefined if it is gone. */
export function lstatEntry(dir: FileHandle, name: string): Promise<Stats | undefined> {
  return fsp.lstat(fdPath(dir, name)).catch(() => undefined);
}

/** stat of what an entry of an open directory leads to, when that lies inside `root`; undefined if it is gone or outside. */
export async function statEntryInside(root: string, dir: FileHandle, name: string): Promise<Stats | undefined> {
  const handle = await openVerified(root, fdPath(dir, name), O_PATH, name).catch(() => undefined);
  if (!handle) return undefined;
  try {
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/**
 * Removes `name` from the open directory `dir`: a file or link is unlinked, a directory removed
 * (with everything in it when `recursive`, else it must be empty: ENOTEMPTY). Never follows a link.
 * Resolves false when there is no such entry.
 */
export async function removeEntry(dir: FileHandle, name: string, recursive: boolean): Promise<boolean> {
  const stat = await lstatEntry(dir, name);
  if (!stat) return false;
  if (!stat.isDirectory()) await fsp.unlink(fdPath(dir, name));
  else if (recursive) await removeTree(dir, name);
  else await fsp.rmdir(fdPath(dir, name));
  return true;
}

/** Removes every entry of the open directory `dir`, recursively. */
export async function emptyDirectory(dir: FileHandle): Promise<void> {
  for (const name of await namesIn(dir)) await removeEntry(dir, name, true).catch(ignore('ENOENT'));
}

/** Removes the directory `name` of `parent` and all below it, each level through its own descriptor. */
async function removeTree(parent: FileHandle, name: string): Promise<void> {
  const child = await fsp.open(fdPath(parent, name), C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOTDIR' || err.code === 'ELOOP') return undefined; // swapped for a file or link: remove that instead
    throw err;
  });
  if (!child) {
    await fsp.unlink(fdPath(parent, name)).catch(ignore('ENOENT'));
    return;
  }
  try {
    await emptyDirectory(child);
  } finally {
    await child.close();
  }
  await fsp.rmdir(fdPath(parent, name));
}
