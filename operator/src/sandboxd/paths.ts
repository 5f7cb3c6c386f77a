/**
 * Path confinement for the in-sandbox daemon: every path a client names is resolved under the
 * workspace root, the way upstream's python runtime does it
 * (`examples/python-runtime-sandbox/main.py` in kubernetes-sigs/agent-sandbox): leading `/` are
 * stripped (an absolute path names a file under the root), `..` may move around inside the root but
 * not above it, and symlinks are resolved (realpath of the longest existing prefix) so a link
 * pointing outside the root is refused. Paths that do not exist yet are allowed (uploads).
 */
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

export type Confined =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly reason: string };

/** True when `candidate` is `root` or below it (both absolute and normalized). */
export function isWithin(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return candidate.startsWith(prefix);
}

/**
 * The lexical half: joins `requested` to `root` (an absolute, normalized path) without touching the
 * filesystem. Pure, so property-tested.
 */
export function confineLexically(root: string, requested: string): Confined {
  if (requested.includes('\0')) return { ok: false, reason: 'the path contains a NUL byte' };
  const relative = requested.replace(/^\/+/, '');
  const joined = path.posix.normalize(path.posix.join(root, relative));
  const resolved = joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
  if (!isWithin(root, resolved)) {
    return { ok: false, reason: `"${requested}" leaves the workspace (".." above the root)` };
  }
  return { ok: true, path: resolved };
}

/** realpath of the longest existing prefix of `absolute`, with the missing rest appended. */
export async function realpathOfExistingPrefix(absolute: string): Promise<string> {
  const missing: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      const real = await fsp.realpath(current);
      return missing.length === 0 ? real : path.posix.join(real, ...missing.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      const parent = path.posix.dirname(current);
      if (parent === current) return absolute;
      missing.push(path.posix.basename(current));
      current = parent;
    }
  }
}

/**
 * Lexical confinement, then symlinks: the result is the real path of the target (of its existing
 * prefix when it does not exist yet), and it must stay under `root` (itself a real path).
 */
export async function confine(root: string, requested: string): Promise<Confined> {
  const lexical = confineLexically(root, requested);
  if (!lexical.ok) return lexical;
  const real = await realpathOfExistingPrefix(lexical.path);
  if (!isWithin(root, real)) {
    return { ok: false, reason: `"${requested}" resolves outside the workspace through a symbolic link` };
  }
  return { ok: true, path: real };
}

/**
 * A path parameter as upstream reads it: the URL path segment is percent-decoded by the server and
 * then once more by the handler, so `%2F` and `/` are the same and `%2541` names `A`. A sequence
 * that does not decode is kept as it is.
 */
export function decodePathParam(raw: string): string {
  return decodeOnce(decodeOnce(raw));
}

function decodeOnce(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
