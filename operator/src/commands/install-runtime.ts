/**
 * `agent-sandbox-operator install-runtime <dir>`: copies this process's node binary and the bundle
 * it runs into `<dir>` as `node` and `agent-sandbox-operator.mjs` (with the chunks it imports, in
 * `chunks/`), so an init container of the operator image can put the runtime into a shared
 * emptyDir and a user's own image (glibc-based, same CPU architecture) can run
 * `<dir>/node <dir>/agent-sandbox-operator.mjs runtime` without a rebuild. Each file is written to
 * a temp file beside its target, made executable and renamed over it, so a reader never sees half
 * a file; the chunks go first and the entry point last, so an entry point never names a chunk not
 * yet there; a target that already matches (size and modification time) is left alone, so a
 * restarted init container does no work; chunks of an earlier version are removed at the end (no
 * process may run from `<dir>` meanwhile: an init container runs before the sandbox container).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

/** The file names inside `<dir>`; the SandboxTemplate's runtime command names the same files. */
export const INSTALLED_NODE = 'node';
export const INSTALLED_BUNDLE = 'agent-sandbox-operator.mjs';
/** The folder beside the bundle holding the chunks it imports (operator/build.mjs writes it). */
export const BUNDLE_CHUNKS = 'chunks';

/** What happened to each file, by its path inside `<dir>`, and the chunks of an earlier version removed. */
export interface InstallResult {
  readonly files: { readonly [file: string]: 'copied' | 'unchanged' };
  readonly removed: readonly string[];
}

export const INSTALL_RUNTIME_USAGE = `Usage: agent-sandbox-operator install-runtime <dir>

Copies this node binary and the operator bundle into <dir> (an existing, writable directory,
typically an emptyDir shared with the sandbox container) as ${INSTALLED_NODE} and ${INSTALLED_BUNDLE}
(and the bundle's ${BUNDLE_CHUNKS}/), executable, atomically; files already in place are kept. Then
run in the sandbox container:
  <dir>/${INSTALLED_NODE} <dir>/${INSTALLED_BUNDLE} runtime [flags]
`;

/** Where the files come from; tests pass their own. */
export interface RuntimeSources {
  readonly node: string;
  readonly bundle: string;
}

/** A problem the caller can fix (a missing or read-only directory); reported as one line, exit 1. */
export class InstallRuntimeError extends Error {}

/** Copy `from` to `to` atomically with mode 0755, unless `to` already has its size and mtime (to the millisecond, as utimes keeps it). */
async function installFile(from: string, to: string): Promise<'copied' | 'unchanged'> {
  const source = await fsp.stat(from);
  const existing = await fsp.stat(to).catch(() => undefined);
  if (existing?.isFile() && existing.size === source.size && Math.abs(existing.mtimeMs - source.mtimeMs) < 1) return 'unchanged';
  const temp = path.join(path.dirname(to), `.${path.basename(to)}.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await fsp.copyFile(from, temp);
    await fsp.chmod(temp, 0o755);
    await fsp.utimes(temp, source.atime, source.mtime);
    await fsp.rename(temp, to);
  } catch (err) {
    await fsp.rm(temp, { force: true });
    throw err;
  }
  return 'copied';
}

/** The `.mjs` files in the `chunks/` folder beside `bundle`; none when it has no such folder (a bundle of one file). */
async function chunksOf(bundle: string): Promise<string[]> {
  const entries = await fsp.readdir(path.join(path.dirname(bundle), BUNDLE_CHUNKS), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.mjs')).map((e) => e.name).sort();
}

/** Install into `dir`; resolves with what happened to each file. */
export async function installRuntime(dir: string, sources: RuntimeSources): Promise<InstallResult> {
  const stat = await fsp.stat(dir).catch(() => undefined);
  if (!stat?.isDirectory()) {
    throw new InstallRuntimeError(`${dir} is not a directory; mount a volume there (an emptyDir shared with the sandbox container) and pass its path`);
  }
  try {
    await fsp.access(dir, 2 /* W_OK */);
  } catch {
    throw new InstallRuntimeError(`${dir} is not writable by uid ${process.getuid?.() ?? '?'}; mount a writable volume (an emptyDir) there`);
  }
  const files: { [file: string]: 'copied' | 'unchanged' } = {};
  const chunks = await chunksOf(sources.bundle);
  const chunkDir = path.join(dir, BUNDLE_CHUNKS);
  if (chunks.length > 0) await fsp.mkdir(chunkDir, { recursive: true });
  for (const chunk of chunks) {
    files[`${BUNDLE_CHUNKS}/${chunk}`] = await installFile(path.join(path.dirname(sources.bundle), BUNDLE_CHUNKS, chunk), path.join(chunkDir, chunk));
  }
  files[INSTALLED_NODE] = await installFile(sources.node, path.join(dir, INSTALLED_NODE));
  files[INSTALLED_BUNDLE] = await installFile(sources.bundle, path.join(dir, INSTALLED_BUNDLE));
  // Only now that the new entry point is in place: the chunks the previous one imported.
  const wanted = new Set(chunks);
  const removed: string[] = [];
  for (const name of await chunksOf(path.join(dir, INSTALLED_BUNDLE))) {
    if (wanted.has(name)) continue;
    await fsp.rm(path.join(chunkDir, name), { force: true });
    removed.push(`${BUNDLE_CHUNKS}/${name}`);
  }
  return { files, removed };
}

/** The one argument, an absolute directory; `undefined` for --help. Throws a usage error otherwise. */
export function parseInstallRuntimeArgs(args: readonly string[]): string | undefined {
  if (args.length === 1 && (args[0] === '-h' || args[0] === '--help')) return undefined;
  if (args.length !== 1 || args[0].startsWith('-') || !path.isAbsolute(args[0])) {
    throw new InstallRuntimeUsageError(`expected one absolute directory, got ${JSON.stringify(args)}`);
  }
  return args[0];
}

export class InstallRuntimeUsageError extends Error {}

/** The command: copy into the directory, one JSON log line either way. */
export async function runInstallRuntime(args: readonly string[]): Promise<number> {
  let dir: string | undefined;
  try {
    dir = parseInstallRuntimeArgs(args);
  } catch (err) {
    process.stderr.write(`agent-sandbox-operator install-runtime: ${(err as Error).message}\n${INSTALL_RUNTIME_USAGE}`);
    return 2;
  }
  if (dir === undefined) {
    process.stdout.write(INSTALL_RUNTIME_USAGE);
    return 0;
  }
  try {
    const result = await installRuntime(dir, { node: process.execPath, bundle: await fsp.realpath(process.argv[1]) });
    const outcomes = Object.values(result.files);
    process.stderr.write(`${JSON.stringify({
      level: 'info',
      time: new Date().toISOString(),
      msg: 'runtime installed',
      dir,
      copied: outcomes.filter((o) => o === 'copied').length,
      unchanged: outcomes.filter((o) => o === 'unchanged').length,
      removed: result.removed.length,
    })}\n`);
    return 0;
  } catch (err) {
    const message = err instanceof InstallRuntimeError ? err.message : `cannot install the runtime into ${dir}: ${(err as Error).message}`;
    process.stderr.write(`${JSON.stringify({ level: 'error', time: new Date().toISOString(), msg: message })}\n`);
    return 1;
  }
}
