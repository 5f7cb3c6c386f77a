/**
 * The sandbox as tools for a model: one definition per operation (name, description, JSON Schema
 * input, execute), which the framework adapters beside this file (openai, anthropic, ai, langchain)
 * and the MCP server (mcp/) turn into their own shapes. Inputs are checked before anything is sent;
 * results are short text for the model's context, bounded by `maxOutputBytes`.
 *
 * ```ts
 * import { sandboxTools } from '@cdk8s-agent-sandbox/sdk/tools';
 * const tools = sandboxTools(sandbox);
 * const result = await tools.find((t) => t.name === 'execute_command')!.execute({ command: 'ls' });
 * ```
 */
import { durationMs, type Duration } from '../duration.js';
import { SandboxConfigError, SandboxError, SandboxHttpError, SandboxSuspendedError } from '../errors.js';
import type { FileEntry } from '../files.js';
import type { SandboxHandle } from '../sandbox.js';
import { validateToolInput, type JsonSchemaProperty, type ToolInputSchema } from './schema.js';
import { shareBudget, truncateMiddle, utf8Head, utf8Length } from './text.js';

export { validateToolInput } from './schema.js';
export type { ToolInputSchema, JsonSchemaProperty } from './schema.js';

/** The tools `sandboxTools` can make. */
export type SandboxToolName = 'execute_command' | 'write_file' | 'read_file' | 'list_files' | 'file_exists' | 'remove_file' | 'extend_ttl';

/** Every tool name, in the order the tools are listed. */
export const SANDBOX_TOOL_NAMES: readonly SandboxToolName[] = ['execute_command', 'write_file', 'read_file', 'list_files', 'file_exists', 'remove_file', 'extend_ttl'];

/** Output of a running command, as it arrives (see RunOptions.onStdout). */
export interface ToolProgress {
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
}

/** What the caller of a tool passes with the input. */
export interface ToolCallContext {
  /** Stops the call (a command over gRPC is killed; see RunOptions.signal). */
  readonly signal?: AbortSignal;
  /** Called with a command's output as it arrives, before the result. */
  readonly onProgress?: (progress: ToolProgress) => void;
}

/** A tool's answer: text for the model, and the same facts as data for code. */
export interface ToolResult {
  readonly text: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** One tool: what a framework needs to offer it to a model, and to run it. */
export interface SandboxTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ToolInputSchema;
  /**
   * Checks `input` (a SandboxConfigError naming the field when it is wrong) and runs the tool. A
   * command's non-zero exit is a result; a failure to do what was asked (a missing file, a
   * sandbox that cannot be reached) is thrown.
   */
  execute(input: unknown, context?: ToolCallContext): Promise<ToolResult>;
}

/** The sandbox the tools act on, or a function giving it when a tool first needs it (lazy claims). */
export type SandboxSource = SandboxHandle | (() => Promise<SandboxHandle>);

export interface SandboxToolsOptions {
  /** Which tools to make. @default every tool but extend_ttl */
  readonly tools?: readonly SandboxToolName[];
  /** The most a result's text holds, in UTF-8 bytes (a command's stdout and stderr share it). @default 16384 */
  readonly maxOutputBytes?: number;
  /** execute_command's time limit when the model gives none, in seconds. @default 60 */
  readonly defaultTimeoutSeconds?: number;
  /** The longest timeout_seconds the model may ask for. @default 600 */
  readonly maxTimeoutSeconds?: number;
  /** The longest ttl extend_ttl accepts. @default "24h" */
  readonly maxTtl?: Duration;
  /** Gets a command's output as it arrives when the call's context has no onProgress (frameworks without a progress channel). */
  readonly onProgress?: (progress: ToolProgress) => void;
}

/** A failure the model should read as such: a missing file, a directory that is not empty. */
export class SandboxToolError extends SandboxError {
  public override readonly name = 'SandboxToolError';
}

const DEFAULT_MAX_OUTPUT_BYTES = 16_384;

/** Makes the sandbox's tools. */
export function sandboxTools(sandbox: SandboxSource, options: SandboxToolsOptions = {}): SandboxTool[] {
  const settings = resolveOptions(options);
  const get = typeof sandbox === 'function' ? sandbox : async () => sandbox;
  const all: Record<SandboxToolName, () => SandboxTool> = {
    execute_command: () => executeCommand(get, settings),
    write_file: () => writeFile(get),
    read_file: () => readFile(get, settings),
    list_files: () => listFiles(get, settings),
    file_exists: () => fileExists(get),
    remove_file: () => removeFile(get),
    extend_ttl: () => extendTtl(get, settings),
  };
  const names = options.tools ?? SANDBOX_TOOL_NAMES.filter((n) => n !== 'extend_ttl');
  for (const name of names) if (!(name in all)) throw new SandboxConfigError('tools', `unknown tool "${name}"; the tools are ${SANDBOX_TOOL_NAMES.join(', ')}`);
  return names.map((name) => all[name]());
}

/** What the model reads when a tool failed: the input's problem, or the error. */
export function toolErrorText(err: unknown): string {
  if (err instanceof SandboxConfigError) return `Invalid input: ${err.message}`;
  if (err instanceof Error) return `Error: ${err.message}`;
  return `Error: ${String(err)}`;
}

/** What `callSandboxTool` answers: the text for the model, whether it reports a failure, and the result's data. */
export interface ToolCallOutcome {
  readonly text: string;
  readonly isError: boolean;
  readonly data?: Readonly<Record<string, unknown>>;
}

/**
 * Runs the tool called `name` the way a framework's tool-call handler does: unknown names and
 * failures become an error text for the model (`isError`) instead of a rejection.
 */
export async function callSandboxTool(
  tools: readonly SandboxTool[], name: string, input: unknown, context: ToolCallContext = {},
): Promise<ToolCallOutcome> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) return { text: `Error: there is no tool "${name}"; the tools are ${tools.map((t) => t.name).join(', ')}`, isError: true };
  try {
    const result = await tool.execute(input, context);
    return { text: result.text, isError: false, data: result.data };
  } catch (err) {
    return { text: toolErrorText(err), isError: true };
  }
}

/** Parses a Duration (seconds, or "90s", "15m", "2h", "1h30m") to milliseconds; `field` names it in the SandboxConfigError. */
export function parseDuration(value: Duration, field: string): number {
  return durationMs(typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value, field);
}

interface Settings {
  readonly maxOutputBytes: number;
  readonly defaultTimeoutSeconds: number;
  readonly maxTimeoutSeconds: number;
  readonly maxTtlMs: number;
  readonly onProgress?: (progress: ToolProgress) => void;
}

function resolveOptions(options: SandboxToolsOptions): Settings {
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 256) throw new SandboxConfigError('maxOutputBytes', `must be a whole number of bytes, at least 256, got ${maxOutputBytes}`);
  const maxTimeoutSeconds = options.maxTimeoutSeconds ?? 600;
  if (!(maxTimeoutSeconds > 0) || !Number.isFinite(maxTimeoutSeconds)) throw new SandboxConfigError('maxTimeoutSeconds', `must be a positive number of seconds, got ${maxTimeoutSeconds}`);
  const defaultTimeoutSeconds = options.defaultTimeoutSeconds ?? Math.min(60, maxTimeoutSeconds);
  if (!(defaultTimeoutSeconds > 0) || defaultTimeoutSeconds > maxTimeoutSeconds) {
    throw new SandboxConfigError('defaultTimeoutSeconds', `must be a positive number of seconds, at most maxTimeoutSeconds (${maxTimeoutSeconds}), got ${defaultTimeoutSeconds}`);
  }
  return { maxOutputBytes, defaultTimeoutSeconds, maxTimeoutSeconds, maxTtlMs: durationMs(options.maxTtl ?? '24h', 'maxTtl'), onProgress: options.onProgress };
}

type GetSandbox = () => Promise<SandboxHandle>;

/** A tool whose input is checked against its schema before `run` gets it. */
function define(name: SandboxToolName, description: string, properties: Record<string, JsonSchemaProperty>, required: string[],
  run: (input: Record<string, any>, context: ToolCallContext) => Promise<ToolResult>): SandboxTool {
  const inputSchema: ToolInputSchema = { type: 'object', properties, required, additionalProperties: false };
  return {
    name,
    description,
    inputSchema,
    execute: async (input, context = {}) => run(validateToolInput(inputSchema, input), context),
  };
}

const PATH: JsonSchemaProperty = { type: 'string', minLength: 1, description: 'Path relative to the sandbox\'s workspace directory (a leading "/" means the same).' };
const ENCODING = (verb: string): JsonSchemaProperty => ({
  type: 'string',
  enum: ['utf8', 'base64'],
  default: 'utf8',
  description: `How content is ${verb}: "utf8" for text, "base64" for binary files.`,
});

function executeCommand(get: GetSandbox, s: Settings): SandboxTool {
  return define('execute_command',
    'Run a shell command (/bin/sh -c) in the sandbox, in its workspace directory, and get its exit code, stdout and stderr. '
    + 'A non-zero exit code is reported in the result, not as a failure. '
    + `Output longer than ${s.maxOutputBytes} bytes is cut in the middle; redirect large output to a file and read parts of it.`,
    {
      command: { type: 'string', minLength: 1, description: 'The shell command, e.g. "python3 main.py" or "ls -la && cat out.txt".' },
      timeout_seconds: {
        type: 'number',
        minimum: 1,
        maximum: s.maxTimeoutSeconds,
        default: s.defaultTimeoutSeconds,
        description: `Time limit in seconds; the command is killed when it runs out (exit code 124). Default ${s.defaultTimeoutSeconds}, at most ${s.maxTimeoutSeconds}.`,
      },
      cwd: { type: 'string', minLength: 1, description: 'Working directory, relative to the workspace. Default: the workspace.' },
    },
    ['command'],
    async (input, context) => {
      const timeoutSeconds: number = input.timeout_seconds ?? s.defaultTimeoutSeconds;
      const onProgress = context.onProgress ?? s.onProgress;
      const sandbox = await get();
      const result = await sandbox.run(input.command, {
        timeoutMs: timeoutSeconds * 1000,
        ...(input.cwd === undefined ? {} : { cwd: input.cwd }),
        ...(context.signal ? { signal: context.signal } : {}),
        ...(onProgress ? {
          onStdout: (text: string) => onProgress({ stream: 'stdout', text }),
          onStderr: (text: string) => onProgress({ stream: 'stderr', text }),
        } : {}),
      });
      const [outBudget, errBudget] = shareBudget(utf8Length(result.stdout), utf8Length(result.stderr), s.maxOutputBytes);
      const stdout = truncateMiddle(result.stdout, outBudget);
      const stderr = truncateMiddle(result.stderr, errBudget);
      const lines = [result.timedOut ? `timed out after ${timeoutSeconds} s and was killed (exit code ${result.exitCode})` : `exit code: ${result.exitCode}`];
      if (result.stdout !== '') lines.push('stdout:', stdout.text.replace(/\n$/, ''));
      if (result.stderr !== '') lines.push('stderr:', stderr.text.replace(/\n$/, ''));
      if (result.stdout === '' && result.stderr === '') lines.push('(no output)');
      return {
        text: lines.join('\n'),
        data: {
          exitCode: result.exitCode,
          timedOut: result.timedOut,
          stdoutBytesOmitted: stdout.omittedBytes,
          stderrBytesOmitted: stderr.omittedBytes,
        },
      };
    });
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function writeFile(get: GetSandbox): SandboxTool {
  return define('write_file',
    'Create or replace a file in the sandbox (parent directories are created).',
    {
      path: PATH,
      content: { type: 'string', description: 'The file\'s whole content (text, or base64 with encoding "base64").' },
      encoding: ENCODING('given'),
    },
    ['path', 'content'],
    async (input, context) => {
      let bytes: Buffer;
      if (input.encoding === 'base64') {
        const compact = (input.content as string).replace(/\s+/g, '');
        if (compact.length % 4 === 1 || !BASE64.test(compact)) throw new SandboxConfigError('content', 'is not valid base64 (encoding is "base64")');
        bytes = Buffer.from(compact, 'base64');
      } else {
        bytes = Buffer.from(input.content as string, 'utf8');
      }
      const sandbox = await get();
      await sandbox.files.write(input.path, bytes, { signal: context.signal });
      return { text: `wrote ${bytes.length} bytes to ${input.path}`, data: { path: input.path, bytes: bytes.length } };
    });
}

function readFile(get: GetSandbox, s: Settings): SandboxTool {
  // base64 takes 4 characters for every 3 bytes.
  const maxBase64Bytes = Math.floor((s.maxOutputBytes * 3) / 4);
  return define('read_file',
    `Read a file from the sandbox: its text (encoding "utf8"), or its bytes as base64 (encoding "base64"). At most ${s.maxOutputBytes} bytes are returned (${maxBase64Bytes} as base64); the result says when the file is longer.`,
    {
      path: PATH,
      max_bytes: { type: 'integer', minimum: 1, maximum: s.maxOutputBytes, default: s.maxOutputBytes, description: 'Read at most this many bytes from the start of the file.' },
      encoding: ENCODING('returned'),
    },
    ['path'],
    async (input, context) => {
      const base64 = input.encoding === 'base64';
      const limit = Math.min(input.max_bytes ?? s.maxOutputBytes, base64 ? maxBase64Bytes : s.maxOutputBytes);
      const sandbox = await get();
      const { bytes, more } = await notFoundAs(input.path, 'file', async () => {
        const stream = await sandbox.files.readStream(input.path, { signal: context.signal });
        const chunks: Buffer[] = [];
        let size = 0;
        try {
          for await (const chunk of stream) {
            chunks.push(chunk as Buffer);
            size += (chunk as Buffer).length;
            if (size > limit) break;
          }
        } finally {
          stream.destroy();
        }
        const all = Buffer.concat(chunks);
        return { bytes: all, more: all.length > limit };
      });
      let text: string;
      let kept: Buffer;
      if (base64) {
        kept = bytes.subarray(0, limit);
        text = kept.toString('base64');
      } else {
        // Cut where a character starts: the byte after the limit tells whether the last one is whole.
        kept = utf8Head(bytes, limit);
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(kept);
        } catch {
          throw new SandboxToolError(`${input.path} is not UTF-8 text (a binary file?): read it with encoding "base64"`);
        }
        if (text === '' && !more) text = '(the file is empty)';
      }
      if (more) text += `\n[... read_file stopped after ${kept.length} bytes: the file is longer. Read less at a time with execute_command (e.g. "tail -c 4000 ${input.path}" or "sed -n 100,200p ${input.path}")]`;
      return { text, data: { path: input.path, bytes: kept.length, truncated: more, encoding: base64 ? 'base64' : 'utf8' } };
    });
}

function listFiles(get: GetSandbox, s: Settings): SandboxTool {
  return define('list_files',
    'List a directory of the sandbox: one entry a line, directories ending in "/", files with their size.',
    { path: { type: 'string', default: '', description: 'The directory, relative to the workspace. Default: the workspace itself.' } },
    [],
    async (input, context) => {
      const dir: string = input.path ?? '';
      const sandbox = await get();
      const entries: FileEntry[] = await notFoundAs(dir || '.', 'directory', () => sandbox.files.list(dir, { signal: context.signal }));
      const where = dir === '' || dir === '/' || dir === '.' ? 'the workspace' : dir;
      const lines = [entries.length === 0 ? `${where} is empty` : `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'} in ${where}:`];
      let used = utf8Length(lines[0]);
      let shown = 0;
      for (const entry of entries) {
        const line = entry.type === 'directory' ? `${entry.name}/` : `${entry.name} (${entry.size} bytes)`;
        // Room for the closing note.
        if (used + utf8Length(line) + 1 > s.maxOutputBytes - 80) break;
        lines.push(line);
        used += utf8Length(line) + 1;
        shown++;
      }
      if (shown < entries.length) lines.push(`[... ${entries.length - shown} more entries left out: list a subdirectory, or use execute_command with find or ls]`);
      return {
        text: lines.join('\n'),
        data: { path: dir, entries: entries.slice(0, shown).map((e) => ({ name: e.name, type: e.type, size: e.size })), total: entries.length },
      };
    });
}

function fileExists(get: GetSandbox): SandboxTool {
  return define('file_exists',
    'Check whether a file or directory exists in the sandbox. A missing path is an answer ("does not exist"), not a failure.',
    { path: PATH },
    ['path'],
    async (input, context) => {
      const sandbox = await get();
      const exists = await sandbox.files.exists(input.path, { signal: context.signal });
      return { text: exists ? `${input.path} exists` : `${input.path} does not exist`, data: { path: input.path, exists } };
    });
}

function removeFile(get: GetSandbox): SandboxTool {
  return define('remove_file',
    'Remove a file or directory from the sandbox. A directory that is not empty needs recursive: true.',
    {
      path: PATH,
      recursive: { type: 'boolean', default: false, description: 'Remove a directory with everything in it.' },
    },
    ['path'],
    async (input, context) => {
      const sandbox = await get();
      try {
        await notFoundAs(input.path, 'file or directory', () => sandbox.files.remove(input.path, { recursive: input.recursive === true, signal: context.signal }));
      } catch (err) {
        // The runtime's 409 (not empty), not the router's (a suspended sandbox: its own message says what to do).
        if (err instanceof SandboxHttpError && err.status === 409 && !(err instanceof SandboxSuspendedError)) throw new SandboxToolError(`${input.path} is a directory that is not empty: pass recursive: true to remove it with its contents`);
        throw err;
      }
      return { text: `removed ${input.path}`, data: { path: input.path } };
    });
}

function extendTtl(get: GetSandbox, s: Settings): SandboxTool {
  return define('extend_ttl',
    'Keep the sandbox longer: move its expiry to now + ttl (never earlier than it already is).',
    { ttl: { type: 'string', minLength: 1, description: `How long from now, e.g. "30m", "2h" or "1h30m" (seconds without a unit); at most ${Math.round(s.maxTtlMs / 60_000)} minutes.` } },
    ['ttl'],
    async (input) => {
      const ms = parseDuration(input.ttl, 'ttl');
      if (ms > s.maxTtlMs) throw new SandboxConfigError('ttl', `must be at most ${Math.round(s.maxTtlMs / 60_000)} minutes, got "${input.ttl}"`);
      const sandbox = await get();
      const expiresAt = await sandbox.extendTtl(ms / 1000);
      return expiresAt
        ? { text: `the sandbox now expires at ${expiresAt.toISOString()}`, data: { expiresAt: expiresAt.toISOString() } }
        : { text: 'the sandbox has no expiry: it lives until it is released', data: { expiresAt: null } };
    });
}

/** Runs `call`; a 404 from the runtime becomes a SandboxToolError saying what is missing. */
async function notFoundAs<T>(path: string, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    // The router's own 404 ("Sandbox x not found.") is about the sandbox, not the path.
    if (err instanceof SandboxHttpError && err.status === 404 && !/^sandbox .* not found/i.test(err.detail ?? '')) throw new SandboxToolError(`${path}: no such ${what}`, { sandbox: err.sandbox, cause: err });
    throw err;
  }
}
