/**
 * E2B paths are absolute in the sandbox's filesystem, or relative to the user's home
 * (`/home/user`). This runtime's files API and command `cwd` reach only its workspace (the
 * template's `runtime.workspacePath`), with paths relative to it. `workspacePath` says where the
 * workspace is: an absolute path under it becomes the relative path the SDK takes, a relative
 * path is relative to it (as E2B's are to the home), and an absolute path elsewhere is refused
 * with an error that says so, rather than written to some other place than the one named.
 */
import * as path from 'node:path';
import { directoryPath } from '../paths.js';
import { InvalidArgumentError, translate } from './errors.js';

/** E2B's home directory, where its code puts files. */
export const DEFAULT_WORKSPACE_PATH = '/home/user';

export class Workspace {
  public readonly root: string;

  public constructor(root: string = DEFAULT_WORKSPACE_PATH) {
    const normalized = typeof root === 'string' && root.startsWith('/') ? path.posix.normalize(root).replace(/\/+$/, '') : '';
    if (normalized === '') {
      throw new InvalidArgumentError(`workspacePath: must be an absolute directory other than "/" (the template's runtime.workspacePath, e.g. "/home/user"), got ${JSON.stringify(root)}`);
    }
    this.root = normalized;
  }

  /** `value` relative to the workspace, normalized ('' is the workspace itself); `what` names the argument in errors. */
  public relative(value: string, what: string): string {
    if (typeof value !== 'string') throw new InvalidArgumentError(`${what}: must be a string, got ${typeof value}`);
    if (!value.startsWith('/')) return checked(value, what);
    const normalized = path.posix.normalize(value);
    if (normalized === this.root || normalized === `${this.root}/`) return '';
    if (normalized.startsWith(`${this.root}/`)) return checked(normalized.slice(this.root.length + 1), what);
    throw new InvalidArgumentError(
      `${what}: "${value}" is outside the sandbox's workspace (${this.root}); this runtime's files and command cwd reach only the workspace: ` +
      `use a path under ${this.root} or a relative one, or set workspacePath to the template's runtime.workspacePath`,
    );
  }

  /** The absolute path of `relative` (as `relative()` gives it). */
  public absolute(relative: string): string {
    const clean = relative.replace(/^\/+/, '').replace(/\/+$/, '');
    return clean === '' || clean === '.' ? this.root : path.posix.join(this.root, clean);
  }
}

/** The SDK's check of a relative path (no `..` above the workspace, no control characters), normalized. */
function checked(relative: string, what: string): string {
  try {
    return directoryPath(relative, what);
  } catch (err) {
    throw translate(err);
  }
}
