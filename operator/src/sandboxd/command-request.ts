/**
 * The body that starts a command, shared by `POST /execute` (upstream's fields: `command`, `shell`,
 * `timeout_seconds`, `env`, `cwd`) and `POST /processes` (those, plus `stdin` and `tag`, and
 * `timeout_seconds` may be absent for no limit). Refusals are answered here, in the order and with
 * the bodies `/execute` has always used: 422 FastAPI-shaped, 403 when `cwd` leaves the workspace, 404
 * when it is no directory there.
 */
import { promises as fsp } from 'node:fs';
import * as http from 'node:http';
import { accessDenied, invalidField, sendJson } from './http-io';
import { confine } from './paths';

export interface CommandRequest {
  readonly command: string;
  readonly shell: boolean;
  /** The confined, real working directory. */
  readonly cwd: string;
  /** The runtime's environment with the request's `env` over it, when it sent one. */
  readonly env?: NodeJS.ProcessEnv;
  /** Undefined: no limit (a process started without `timeout_seconds`). */
  readonly timeoutMs?: number;
  /** Give the process a stdin pipe (process API only). */
  readonly stdin: boolean;
  /** The client's label for the process (process API only). */
  readonly tag?: string;
}

export interface ParseOptions {
  /** The workspace (a real path). */
  readonly root: string;
  /** The limit when the request names none; undefined: none. */
  readonly defaultTimeoutMs?: number;
  /** Accept the process API's fields (`stdin`, `tag`). */
  readonly processFields: boolean;
}

/** The longest `tag`, in characters. */
export const MAX_TAG_LENGTH = 256;

/** The request, or undefined once a refusal was sent. */
export async function parseCommandRequest(body: unknown, res: http.ServerResponse, options: ParseOptions): Promise<CommandRequest | undefined> {
  const request = (body ?? {}) as Record<string, unknown>;
  const invalid = (loc: string, msg: string) => void invalidField(res, loc, msg);
  if (typeof body !== 'object' || Array.isArray(body) || body === null) return invalid('command', 'the body must be a JSON object');
  if (typeof request.command !== 'string') return invalid('command', 'Field required: a string');
  const shell = request.shell ?? false;
  if (typeof shell !== 'boolean') return invalid('shell', 'must be a boolean');
  let timeoutMs = options.defaultTimeoutMs;
  if (request.timeout_seconds !== undefined && request.timeout_seconds !== null) {
    const seconds = request.timeout_seconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) {
      return invalid('timeout_seconds', 'must be a positive number of seconds');
    }
    timeoutMs = seconds * 1000;
  }
  let cwd = options.root;
  if (request.cwd !== undefined && request.cwd !== null) {
    if (typeof request.cwd !== 'string') return invalid('cwd', 'must be a string');
    const confined = await confine(options.root, request.cwd);
    if (!confined.ok) return void accessDenied(res, confined.reason);
    cwd = confined.path;
    // Refused like a path outside the workspace (`message` and `reason`, no `detail`: what the SDK
    // reads as a path refusal), as 404. cwd is this runtime's extension: upstream clients never send it.
    if (!(await fsp.stat(cwd).then((st) => st.isDirectory(), () => false))) {
      return void sendJson(res, 404, { message: 'cwd not found', reason: `cwd "${request.cwd}" is not a directory in the workspace` });
    }
  }
  let env: NodeJS.ProcessEnv | undefined;
  if (request.env !== undefined && request.env !== null) {
    const extra = request.env as Record<string, unknown>;
    if (typeof extra !== 'object' || Array.isArray(extra) || Object.values(extra).some((v) => typeof v !== 'string')) {
      return invalid('env', 'must be an object of strings');
    }
    env = { ...process.env, ...(extra as Record<string, string>) };
  }
  if (!options.processFields) return { command: request.command, shell, cwd, env, timeoutMs, stdin: false };
  const stdin = request.stdin ?? false;
  if (typeof stdin !== 'boolean') return invalid('stdin', 'must be a boolean: true gives the process a stdin pipe to write to');
  const tag = request.tag ?? undefined;
  if (tag !== undefined && (typeof tag !== 'string' || tag.length > MAX_TAG_LENGTH)) return invalid('tag', `must be a string of at most ${MAX_TAG_LENGTH} characters`);
  return { command: request.command, shell, cwd, env, timeoutMs, stdin, tag: tag as string | undefined };
}
