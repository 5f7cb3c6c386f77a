/**
 * `agent-sandbox-operator runtime [flags]`: the daemon inside a sandbox Pod. Serves the legacy
 * runtime HTTP API (upstream's python runtime, port 8888) over the workspace directory, and on
 * request sandboxd's REST FilesystemService (--files-port) and gRPC ProcessService (--grpc-port);
 * see `../sandboxd/server.ts`. SIGTERM/SIGINT drain: the listeners close (gRPC: no new calls),
 * background processes get SIGTERM, running commands (gRPC ones too) get `--grace-period` to
 * finish, then their process groups are killed, and the process exits 0.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_MAX_BACKGROUND_PROCESSES, DEFAULT_MAX_CONCURRENT_COMMANDS, RootRefusedError, SandboxdServer } from '../sandboxd/server';

export interface RuntimeFlags {
  port: number;
  listenAddress: string;
  workspace: string;
  tokenFile?: string;
  filesPort?: number;
  grpcPort?: number;
  streamChunkSize: number;
  allowRoot: boolean;
  execTimeoutSeconds: number;
  maxOutputBytes: number;
  maxConcurrentCommands: number;
  maxBackgroundProcesses: number;
  commandCgroups: boolean;
  gracePeriodSeconds: number;
  help: boolean;
}

export class RuntimeUsageError extends Error {}

export const RUNTIME_USAGE = `Usage: agent-sandbox-operator runtime [flags]

The in-sandbox daemon: the legacy runtime HTTP API (GET /, POST /execute, POST /upload,
GET /download/<path>, GET /list/<path>, GET /exists/<path>, DELETE /delete/<path>, GET /healthz),
with this runtime's process API on the same port (an NDJSON /execute, background processes under
/processes; docs/runtime-processes.md),
and optionally sandboxd's REST FilesystemService and gRPC ProcessService.

Flags:
  --port <n>                 port to listen on (default 8888)
  --listen-address <addr>    address to listen on (default 0.0.0.0)
  --workspace <dir>          root of every file path and cwd of commands; a relative path is
                             under it, an absolute path must lie inside it (else 403)
                             (default $SANDBOX_BASE_DIR, else /app)
  --files-port <n>           also serve sandboxd's REST FilesystemService (/v1/files/<path>
                             GET/HEAD/PUT/DELETE, /v1/health, /v1/metadata) on this port;
                             sandboxd uses 8080 (default: off)
  --grpc-port <n>            also serve sandboxd's gRPC process.v1.ProcessService (plaintext
                             HTTP/2: Start, Execute, WriteStdin, SendSignal, ResizeTTY) on this
                             port; sandboxd uses 9090 (default: off)
  --stream-chunk-size <n>    largest stdout/stderr chunk of a gRPC Start stream (default 4096)
  --token-file <file>        require "Authorization: Bearer <token>" (file content, trimmed)
                             on every route but / and /healthz
  --exec-timeout <seconds>   default per-command limit (default $SANDBOX_EXEC_TIMEOUT_SECONDS, else 300);
                             a request's timeout_seconds overrides it; also bounds a gRPC
                             Execute call without a deadline (DEADLINE_EXCEEDED)
  --max-output-bytes <n>     stdout and stderr kept per command, /execute and gRPC Execute
                             (default 4194304; the rest is dropped and a marker says how much)
  --max-concurrent-commands <n>
                             commands that may run at once, /execute and gRPC together
                             (default ${DEFAULT_MAX_CONCURRENT_COMMANDS}); beyond it /execute answers 429 with Retry-After
                             and a JSON detail, gRPC RESOURCE_EXHAUSTED; a streamed /execute
                             counts too
  --max-background-processes <n>
                             background processes (POST /processes, docs/runtime-processes.md)
                             that may run at once (default ${DEFAULT_MAX_BACKGROUND_PROCESSES}); beyond it the start answers
                             429 with Retry-After. They take no command slot
  --command-cgroups <auto|off>
                             auto (default): where the runtime's cgroup (v2) lets it, each command
                             runs in a cgroup of its own, so a timeout or a drain kills all it
                             started, even what cleared its environment and left its session; off:
                             such descendants are found in /proc by SANDBOXD_COMMAND_ID, which
                             every command's environment carries, and by parent pid
  --grace-period <seconds>   on SIGTERM, how long running commands may finish (default 20)
  --allow-root               run even as uid 0 (refused otherwise)
  -h, --help                 this text
`;

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new RuntimeUsageError(`--${name} must be a positive number, got "${value}"`);
  return n;
}

function wholeNumber(name: string, value: string): number {
  const n = positive(name, value);
  if (!Number.isInteger(n)) throw new RuntimeUsageError(`--${name} must be a whole number, got "${value}"`);
  return n;
}

function portOf(name: string, value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RuntimeUsageError(`--${name} must be 0-65535, got "${value}"`);
  }
  return port;
}

function envTimeout(): number {
  const n = Number(process.env.SANDBOX_EXEC_TIMEOUT_SECONDS);
  return Number.isFinite(n) && n > 0 ? n : 300;
}

export function parseRuntimeArgs(args: readonly string[]): RuntimeFlags {
  const flags: RuntimeFlags = {
    port: 8888,
    listenAddress: '0.0.0.0',
    workspace: process.env.SANDBOX_BASE_DIR?.trim() || '/app',
    allowRoot: false,
    execTimeoutSeconds: envTimeout(),
    maxOutputBytes: 4 * 1024 * 1024,
    maxConcurrentCommands: DEFAULT_MAX_CONCURRENT_COMMANDS,
    maxBackgroundProcesses: DEFAULT_MAX_BACKGROUND_PROCESSES,
    commandCgroups: true,
    gracePeriodSeconds: 20,
    streamChunkSize: 4096,
    help: false,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-h' || arg === '--help') {
      flags.help = true;
      continue;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new RuntimeUsageError(`unexpected argument "${arg}"`);
    const name = match[1];
    if (name === 'allow-root') {
      flags.allowRoot = match[2] === undefined || match[2] === 'true';
      continue;
    }
    let value = match[2];
    if (value === undefined) {
      if (i + 1 >= args.length) throw new RuntimeUsageError(`--${name} needs a value`);
      value = args[++i];
    }
    switch (name) {
      case 'port': flags.port = portOf(name, value); break;
      case 'files-port': flags.filesPort = value === 'off' ? undefined : portOf(name, value); break;
      case 'grpc-port': flags.grpcPort = value === 'off' || value === '0' ? undefined : portOf(name, value); break;
      case 'stream-chunk-size': flags.streamChunkSize = Math.floor(positive(name, value)); break;
      case 'listen-address': flags.listenAddress = value; break;
      case 'workspace': flags.workspace = value; break;
      case 'token-file': flags.tokenFile = value; break;
      case 'exec-timeout': flags.execTimeoutSeconds = positive(name, value); break;
      case 'max-output-bytes': flags.maxOutputBytes = Math.floor(positive(name, value)); break;
      case 'max-concurrent-commands': flags.maxConcurrentCommands = wholeNumber(name, value); break;
      case 'max-background-processes': flags.maxBackgroundProcesses = wholeNumber(name, value); break;
      case 'command-cgroups':
        if (value !== 'auto' && value !== 'off') throw new RuntimeUsageError(`--command-cgroups must be auto or off, got "${value}"`);
        flags.commandCgroups = value === 'auto';
        break;
      case 'grace-period': flags.gracePeriodSeconds = positive(name, value); break;
      default: throw new RuntimeUsageError(`unknown flag --${name}`);
    }
  }
  return flags;
}

function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
}

/** Runs until SIGTERM/SIGINT; resolves with the exit code. */
export async function runRuntime(args: readonly string[]): Promise<number> {
  let flags: RuntimeFlags;
  try {
    flags = parseRuntimeArgs(args);
  } catch (err) {
    if (!(err instanceof RuntimeUsageError)) throw err;
    process.stderr.write(`agent-sandbox-operator runtime: ${err.message}\n${RUNTIME_USAGE}`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(RUNTIME_USAGE);
    return 0;
  }
  let token: string | undefined;
  if (flags.tokenFile !== undefined) {
    token = readFileSync(flags.tokenFile, 'utf8').trim();
    if (token === '') {
      log('error', 'the token file is empty', { tokenFile: flags.tokenFile });
      return 1;
    }
  }
  const server = new SandboxdServer({
    workspace: flags.workspace,
    port: flags.port,
    listenAddress: flags.listenAddress,
    filesPort: flags.filesPort,
    grpcPort: flags.grpcPort,
    streamChunkSize: flags.streamChunkSize,
    token,
    execTimeoutMs: flags.execTimeoutSeconds * 1000,
    maxOutputBytes: flags.maxOutputBytes,
    maxConcurrentCommands: flags.maxConcurrentCommands,
    maxBackgroundProcesses: flags.maxBackgroundProcesses,
    commandCgroups: flags.commandCgroups,
    allowRoot: flags.allowRoot,
    log,
  });
  try {
    const address = await server.start();
    log('info', 'runtime listening', {
      address: address.address,
      port: address.port,
      filesPort: server.filesAddress?.port,
      grpcPort: server.grpcAddress?.port,
      workspace: flags.workspace,
      auth: token !== undefined,
      commandCgroups: server.commandCgroups,
    });
  } catch (err) {
    // Root refused, a missing workspace, a port in use: one line, exit 1.
    log('error', err instanceof RootRefusedError ? err.message : `cannot start: ${(err as Error).message}`);
    return 1;
  }
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log('info', 'draining', { signal, running: server.running, gracePeriodSeconds: flags.gracePeriodSeconds });
  await server.drain(flags.gracePeriodSeconds * 1000);
  log('info', 'stopped');
  return 0;
}
