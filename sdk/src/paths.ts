/**
 * Client-side checks of sandbox file paths, so a mistake fails here with a clear message instead of
 * a 403 from the runtime: no control characters, no `..` segment, nothing left after normalizing.
 * Paths are relative to the workspace; a leading `/` is allowed and means the same.
 */
import * as path from 'node:path';
import { SandboxConfigError } from './errors.js';

/** A normalized relative path for a file (never empty). */
export function filePath(value: string, field = 'path'): string {
  const normalized = directoryPath(value, field);
  if (normalized === '') throw new SandboxConfigError(field, `names the workspace root, not a file: "${value}"`);
  return normalized;
}

/** A normalized relative path; '' is the workspace root. */
export function directoryPath(value: string, field = 'path'): string {
  if (typeof value !== 'string') throw new SandboxConfigError(field, `must be a string, got ${typeof value}`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(value)) throw new SandboxConfigError(field, `contains a control character: ${JSON.stringify(value)}`);
  const normalized = path.posix.normalize(value.replace(/^\/+/, '') || '.').replace(/\/+$/, '');
  if (normalized === '.' ) return '';
  if (normalized.split('/').includes('..')) {
    throw new SandboxConfigError(field, `must stay inside the workspace (no ".." above it): "${value}"`);
  }
  return normalized;
}

/**
 * A path as one URL path segment for the legacy runtime, which percent-decodes path parameters
 * twice (as upstream's python runtime does): encoding twice makes every name arrive as written.
 */
export function encodeLegacyPath(relative: string): string {
  return encodeURIComponent(encodeURIComponent(relative));
}

/** The legacy routes whose last segment is a path encoded by `encodeLegacyPath`. */
const LEGACY_PATH_ROUTE = /^\/(download|list|exists|delete)\/([^/]*)$/;

/**
 * A request's URL path as errors show it: a legacy path route shows the path as the caller named
 * it (`/download/missing/file.txt`), not as encoded twice for the wire (`missing%252Ffile.txt`);
 * any other path is shown as it is.
 */
export function shownRequestPath(pathname: string): string {
  const match = LEGACY_PATH_ROUTE.exec(pathname);
  if (!match) return pathname;
  try {
    return `/${match[1]}/${decodeURIComponent(decodeURIComponent(match[2]))}`;
  } catch {
    return pathname;
  }
}
