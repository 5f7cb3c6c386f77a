/**
 * Path confinement for the in-sandbox daemon: every path a client names must lie inside the
 * workspace root. A relative path is joined to the root; `..` may move around inside the root but
 * not above it; symlinks are resolved (realpath of the longest existing prefix) so a link pointing
 * outside the root is refused. Paths that do not exist yet are allowed (uploads).
 *
 * Unlike upstream's python runtime (`examples/python-runtime-sandbox/main.py` in
 * kubernetes-sigs/agent-sandbox), which strips leading `/` and so silently re-roots `/etc/passwd`
 * to `<root>/etc/passwd`, an absolute path here is taken literally: `/workspace/a.txt` is accepted
 * when the root is `/workspace`, and any absolute path outside the root is refused with a reason
 * that says to use a path relative to the workspace. A path made only of `/` still names the root.
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
 * The lexical half: resolves `requested` against `root` (an absolute, normalized path) without
 * touching the filesystem. Pure, so property-tested.
 */
export function confineLexically(root: string, requested: string): Confined {
  if (requested.includes('\0')) return { ok: false, reason: 'the path contains a NUL byte' };
  // A bare "/" keeps naming the root: upstream's Python SDK strips the leading "/" for
  // files.write/read but sends files.list("/") and files.exists("/") as "%2F".
  if (/^\/+$/.test(requested)) return { ok: true, path: root };
  const absolute = requested.startsWith('/');
  const joined = path.posix.normalize(absolute ? requested : path.posix.join(root, requested));
  const resolved = joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
  if (isWithin(root, resolved)) return { ok: true, path: resolved };
  return {
    ok: false,
    reason: absolute
      ? `"${requested}" is an absolute path outside the workspace ${root}; use a path relative to the workspace, such as "a.txt", or one under ${root}/`
      : `"${requested}" leaves the workspace (".." above the root); use a path relative to the workspace that stays inside it`,
  };
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
 * The entry `requested` names itself, without following a symbolic link in its last component (what
 * a delete removes): the confined real path of its parent joined with its base name. The root
 * itself is returned as the root.
 */
export async function confineEntry(root: string, requested: string): Promise<Confined> {
  const lexical = confineLexically(root, requested);
  if (!lexical.ok || lexical.path === root) return lexical;
  const parent = await confine(root, path.posix.dirname(lexical.path));
  return parent.ok ? { ok: true, path: path.posix.join(parent.path, path.posix.basename(lexical.path)) } : parent;
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
