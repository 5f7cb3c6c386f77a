/**
 * sandboxd's gRPC `process.v1.ProcessService`, with upstream's semantics
 * (`packages/sandboxd/pkg/server/process.go` in kubernetes-sigs/agent-sandbox):
 * - `Execute` runs argv (no shell added; `command[0]` looked up on PATH) to completion and answers
 *   once with the exit code and all output. Its deadline or a cancellation kills the child's
 *   process group (upstream kills only the direct child) and the client sees the gRPC status.
 *   A call without a deadline gets `execTimeoutMs` (`--exec-timeout`), ending the same way with
 *   DEADLINE_EXCEEDED. Each of stdout and stderr keeps at most `maxOutputBytes`; the rest is read
 *   and dropped, and a marker line says how much (as `/execute` does).
 * - `Start` streams one `init` (after the process is registered), stdout/stderr chunks of at most
 *   `streamChunkSize` bytes as they are read, one `exit`, then OK. Cancelling the stream kills it.
 *   Once the child has exited, output still held open by its descendants is read for at most 5 s.
 * - `WriteStdin`, `SendSignal` (SIGINT/SIGKILL/SIGTERM to the process group), `ResizeTTY` address
 *   a `Start`ed process by a daemon-local id counting from 1, until it exits (`NOT_FOUND` after).
 * - cwd is confined to the workspace like the REST paths (`PERMISSION_DENIED` on escape,
 *   `NOT_FOUND` when missing); `env_vars` override the daemon's environment.
 * - Exit codes: a signal death is -1, as upstream (Go) reports it.
 * - `pty`: see `./pty` (a real PTY through util-linux `script`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants as fsConstants, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { CommandCgroup, CommandCgroups } from './cgroup';
import { killCommand, killGroup, newCommandId, withCommandId } from './descendants';
import { Capture, type CommandSlots, type ProcessGroups } from './exec';
import { confine } from './paths';
import { ptyArgv, ptyChildPid, resizePty } from './pty';
import {
  type ExecuteRequest, type ExecuteResponse, type Empty, PROCESS_SERVICE_DEFINITION, type ProcessConfig, type ResizeTtyRequest,
  type SendSignalRequest, Signal, type StartRequest, type StartResponse, type WriteStdinRequest,
} from '../../../sdk/src/process-proto';

export interface ProcessServiceOptions {
  /** The workspace (a real path): default cwd and the confinement root. */
  readonly root: string;
  /** Largest stdout/stderr chunk of a Start stream. */
  readonly streamChunkSize: number;
  /** How long an Execute call without a deadline may run (`--exec-timeout`). */
  readonly execTimeoutMs: number;
  /** Bytes of stdout and of stderr an Execute answer keeps (`--max-output-bytes`). */
  readonly maxOutputBytes: number;
  /** Where running children are registered, so a drain can wait for them and kill what is left. */
  readonly groups: ProcessGroups;
  /** The runtime's cap on commands running at once, shared with `/execute`. */
  readonly slots: CommandSlots;
  /** Where each process gets a cgroup of its own, when the runtime may make them. */
  readonly cgroups?: CommandCgroups;
  /** Whether a call's `authorization` metadata may use the service. */
  readonly authorized: (authorization: string | undefined) => boolean;
}

/** How long output is still read once a child has exited (its descendants may hold the pipes): upstream's 5 s for Start, 10 s for Execute. */
const START_DRAIN_AFTER_EXIT_MS = 5_000;
const EXECUTE_DRAIN_AFTER_EXIT_MS = 10_000;
const SIGNALS: Record<number, NodeJS.Signals> = { [Signal.SIGINT]: 'SIGINT', [Signal.SIGKILL]: 'SIGKILL', [Signal.SIGTERM]: 'SIGTERM' };

/** A failure answered with a gRPC status. */
export class RpcError extends Error {
  public constructor(public readonly code: grpc.status, message: string) {
    super(message);
  }
}

function asStatus(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof RpcError) return { code: err.code, details: err.message };
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}

interface Launch {
  readonly child: ChildProcess;
  readonly pty: boolean;
  /** Its `SANDBOXD_COMMAND_ID`, by which its descendants are found (see ./descendants). */
  readonly id: string;
  readonly cgroup?: CommandCgroup;
}

/** A Start process, addressable until it exits. */
interface Registered extends Launch {
  /** Set once a signal was sent: `script` reports the command's signal death as 128+n. */
  signalled: boolean;
}

export class ProcessService {
  private nextId = 1;
  private readonly processes = new Map<number, Registered>();

  public constructor(private readonly options: ProcessServiceOptions) {}

  /** The handlers to register with `PROCESS_SERVICE_DEFINITION`. */
  public implementation(): grpc.UntypedServiceImplementation {
    const refused = (call: { metadata: grpc.Metadata }): Partial<grpc.StatusObject> | undefined => {
      const given = call.metadata.get('authorization')[0];
      if (this.options.authorized(typeof given === 'string' ? given : undefined)) return undefined;
      return { code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid authorization metadata (Bearer <token>)' };
    };
    const unary = <Req, Res>(handler: (req: Req) => Promise<Res>) => (call: grpc.ServerUnaryCall<Req, Res>, cb: grpc.sendUnaryData<Res>) => {
      const refusal = refused(call);
      if (refusal) return cb(refusal);
      handler(call.request).then((res) => cb(null, res), (err) => cb(asStatus(err)));
    };
    return {
      Start: (call: grpc.ServerWritableStream<StartRequest, StartResponse>) => {
        const refusal = refused(call);
        if (refusal) return void call.emit('error', refusal);
        void this.start(call);
      },
      Execute: (call: grpc.ServerUnaryCall<ExecuteRequest, ExecuteResponse>, cb: grpc.sendUnaryData<ExecuteResponse>) => {
        const refusal = refused(call);
        if (refusal) return cb(refusal);
        void this.execute(call, cb);
      },
      WriteStdin: unary((req: WriteStdinRequest) => this.writeStdin(req)),
      SendSignal: unary((req: SendSignalRequest) => this.sendSignal(req)),
      ResizeTTY: unary((req: ResizeTtyRequest) => this.resize(req)),
    };
  }

  private async execute(call: grpc.ServerUnaryCall<ExecuteRequest, ExecuteResponse>, cb: grpc.sendUnaryData<ExecuteResponse>): Promise<void> {
    let launch: Launch;
    try {
      launch = await this.launch(call.request.config, undefined, false);
    } catch (err) {
      return cb(asStatus(err));
    }
    const { child } = launch;
    const stdout = new Capture(this.options.maxOutputBytes);
    const stderr = new Capture(this.options.maxOutputBytes);
    child.stdout!.on('data', (c: Buffer) => stdout.push(c));
    child.stderr!.on('data', (c: Buffer) => stderr.push(c));
    const kill = () => void killLaunch(launch);
    call.once('cancelled', kill);
    // Cancelled while the child was being started: the event has passed already.
    if (call.cancelled) kill();
    // Without a deadline from the client, --exec-timeout bounds the call.
    let timedOut = false;
    const timeoutMs = this.options.execTimeoutMs;
    const timer = hasDeadline(call) ? undefined : setTimeout(() => {
      timedOut = true;
      kill();
    }, Math.max(1, Math.min(timeoutMs, 2 ** 31 - 1)));
    const exitCode = await exited(child, EXECUTE_DRAIN_AFTER_EXIT_MS);
    clearTimeout(timer);
    call.off('cancelled', kill);
    if (call.cancelled) return;
    if (timedOut) {
      return cb({
        code: grpc.status.DEADLINE_EXCEEDED,
        details: `the command ran longer than --exec-timeout (${timeoutMs / 1000} s) and its process group was killed; set a deadline on the call to allow longer`,
      });
    }
    cb(null, { exitCode, stdout: stdout.bytes(), stderr: stderr.bytes() });
  }

  private async start(call: grpc.ServerWritableStream<StartRequest, StartResponse>): Promise<void> {
    const pty = call.request.pty;
    let launch: Launch;
    try {
      launch = await this.launch(call.request.config, pty ?? undefined, true);
    } catch (err) {
      return void call.emit('error', asStatus(err));
    }
    const { child } = launch;
    const id = this.nextId++;
    const entry: Registered = { ...launch, signalled: false };
    this.processes.set(id, entry);
    const onCancel = () => void killLaunch(launch);
    call.once('cancelled', onCancel);
    if (call.cancelled) onCancel();
    call.write({ event: { init: { processId: id } } });
    const size = this.options.streamChunkSize;
    const streams = [child.stdout!, child.stderr!];
    for (const [stream, name] of [[child.stdout!, 'stdout'], [child.stderr!, 'stderr']] as const) {
      stream.on('data', (data: Buffer) => {
        let more = true;
        for (let at = 0; at < data.length; at += size) {
          const chunk = data.subarray(at, at + size);
          more = call.write({ event: name === 'stdout' ? { stdout: chunk } : { stderr: chunk } });
        }
        if (!more) {
          for (const s of streams) s.pause();
          call.once('drain', () => streams.forEach((s) => s.resume()));
        }
      });
    }
    let exitCode = await exited(child, START_DRAIN_AFTER_EXIT_MS);
    this.processes.delete(id);
    call.off('cancelled', onCancel);
    if (launch.pty && entry.signalled && exitCode > 128) exitCode = -1;
    if (call.cancelled) return;
    call.write({ event: { exit: { exitCode } } });
    call.end();
  }

  private async writeStdin(req: WriteStdinRequest): Promise<Empty> {
    const { child } = this.lookup(req.processId);
    const stdin = child.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) {
      throw new RpcError(grpc.status.FAILED_PRECONDITION, `process ${req.processId} has no open stdin (closed by an earlier eof)`);
    }
    if (req.payload && 'eof' in req.payload) {
      stdin.end();
    } else if (req.payload && req.payload.input.length > 0) {
      const input = req.payload.input;
      const failed = (err: Error) => new RpcError(grpc.status.FAILED_PRECONDITION, `writing to process ${req.processId}'s stdin failed: ${err.message}`);
      await new Promise<void>((resolve, reject) => stdin.write(input, (err) => (err ? reject(failed(err)) : resolve())));
    }
    return {};
  }

  private async sendSignal(req: SendSignalRequest): Promise<Empty> {
    const signal = SIGNALS[req.signal];
    if (signal === undefined) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, `signal ${req.signal} is not supported: send SIGNAL_SIGINT (2), SIGNAL_SIGKILL (9) or SIGNAL_SIGTERM (15)`);
    }
    const entry = this.lookup(req.processId);
    entry.signalled = true;
    // With a PTY the command leads its own session under `script`; without, the child leads the group.
    const leader = entry.pty ? (await ptyChildPid(entry.child.pid!)) ?? entry.child.pid! : entry.child.pid!;
    try {
      process.kill(-leader, signal);
    } catch {
      // already gone: a no-op, as upstream
    }
    return {};
  }

  private async resize(req: ResizeTtyRequest): Promise<Empty> {
    const entry = this.lookup(req.processId);
    if (!entry.pty) throw new RpcError(grpc.status.FAILED_PRECONDITION, `process ${req.processId} has no TTY (start it with pty set)`);
    const pid = await ptyChildPid(entry.child.pid!);
    if (pid === undefined) throw new RpcError(grpc.status.FAILED_PRECONDITION, `process ${req.processId} has not started on its TTY yet, or has finished`);
    try {
      await resizePty(pid, req.cols, req.rows);
    } catch (err) {
      throw new RpcError(grpc.status.FAILED_PRECONDITION, `resizing process ${req.processId}'s TTY failed: ${(err as Error).message}`);
    }
    return {};
  }

  private lookup(id: number): Registered {
    const entry = this.processes.get(id);
    if (!entry) throw new RpcError(grpc.status.NOT_FOUND, `process ${id} not found`);
    return entry;
  }

  /** Validates the config, resolves cwd and the executable, and spawns the child in its own process group. */
  private async launch(config: ProcessConfig | undefined, pty: { cols: number; rows: number } | undefined, withStdin: boolean): Promise<Launch> {
    const command = config?.command ?? [];
    if (command.length === 0 || command[0] === '') throw new RpcError(grpc.status.INVALID_ARGUMENT, 'command is required');
    if (command.some((arg) => arg.includes('\0'))) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'config.command: an argument contains a NUL byte');
    for (const key of Object.keys(config?.envVars ?? {})) {
      if (key === '' || key.includes('=') || key.includes('\0')) {
        throw new RpcError(grpc.status.INVALID_ARGUMENT, `config.env_vars: "${key}" is not a valid variable name (non-empty, no "=" or NUL)`);
      }
    }
    if (Object.values(config?.envVars ?? {}).some((v) => v.includes('\0'))) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'config.env_vars: a value contains a NUL byte');
    const cwd = await this.cwdOf(config?.cwd);
    const id = newCommandId();
    const env: NodeJS.ProcessEnv = withCommandId({ ...process.env, ...config?.envVars }, id);
    await lookPath(command[0], cwd, env.PATH ?? '');
    let file = command[0];
    let args = command.slice(1);
    let childEnv = env;
    if (pty) {
      const wrapped = ptyArgv(command, pty.cols, pty.rows, env.SHELL);
      ({ file, args } = wrapped);
      childEnv = { ...env, SHELL: wrapped.shellEnv };
    }
    const release = this.options.slots.take();
    if (!release) throw new RpcError(grpc.status.RESOURCE_EXHAUSTED, this.options.slots.refusal());
    const start = () => spawn(file, args, { cwd, env: childEnv, detached: true, stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const { child, cgroup } = this.options.cgroups ? this.options.cgroups.spawnIn(id, start) : { child: start(), cgroup: undefined };
    child.once('close', () => void cgroup?.remove());
    // The slot is held until the child has exited and its output is closed (or it never started).
    child.once('close', release);
    child.once('error', release);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err: NodeJS.ErrnoException) => reject(new RpcError(
        err.code === 'ENOENT' ? grpc.status.NOT_FOUND : grpc.status.INTERNAL,
        pty && err.code === 'ENOENT' ? 'a PTY needs util-linux "script" on PATH, and it is not there' : `starting ${command[0]}: ${err.message}`,
      )));
    });
    child.stdin?.on('error', () => undefined);
    let settle!: () => void;
    const launch: Launch = { child, pty: pty !== undefined, id, cgroup };
    this.options.groups.add(child, new Promise<void>((r) => (settle = r)), () => void killLaunch(launch));
    child.once('exit', () => settle());
    return launch;
  }

  private async cwdOf(requested: string | undefined): Promise<string> {
    if (requested === undefined || requested === '') return this.options.root;
    const confined = await confine(this.options.root, requested);
    if (!confined.ok) throw new RpcError(grpc.status.PERMISSION_DENIED, `config.cwd: ${confined.reason}`);
    const stat = await fsp.stat(confined.path).catch(() => undefined);
    if (!stat) throw new RpcError(grpc.status.NOT_FOUND, `config.cwd: "${requested}" does not exist in the workspace`);
    if (!stat.isDirectory()) throw new RpcError(grpc.status.NOT_FOUND, `config.cwd: "${requested}" is not a directory`);
    return confined.path;
  }
}

/** Like Go's exec.LookPath: a name with a slash is taken as is (from `cwd`), others are searched on PATH. */
async function lookPath(name: string, cwd: string, pathVar: string): Promise<string> {
  const executable = (file: string) => fsp.stat(file)
    .then(async (st) => st.isFile() && (await fsp.access(file, fsConstants.X_OK).then(() => true, () => false)), () => false);
  if (name.includes('/')) {
    const file = path.resolve(cwd, name);
    if (await executable(file)) return file;
    throw new RpcError(grpc.status.NOT_FOUND, `config.command: ${name}: no such executable file`);
  }
  for (const dir of pathVar.split(':')) {
    const file = path.join(dir === '' ? '.' : dir, name);
    if (await executable(file)) return file;
  }
  throw new RpcError(grpc.status.NOT_FOUND, `config.command: ${name}: executable file not found in $PATH`);
}

/** Whether the client set a deadline on the call (grpc-js reports none as Infinity). */
function hasDeadline(call: grpc.ServerUnaryCall<unknown, unknown>): boolean {
  const deadline = call.getDeadline();
  return deadline instanceof Date || Number.isFinite(deadline);
}

/**
 * SIGKILL to the child's process group and every descendant (its cgroup, ./descendants) and, with a PTY, first
 * to the command's own session under `script` (found while `script` still lives), which a hangup
 * alone might not end.
 */
async function killLaunch(launch: Launch): Promise<void> {
  const pid = launch.child.pid!;
  if (launch.pty) {
    const inner = await ptyChildPid(pid);
    if (inner !== undefined) killGroup(inner);
  }
  await Promise.all([launch.cgroup?.kill(), killCommand(pid, launch.id)]);
}

/**
 * Resolves with the exit code (-1 for a signal death) once the child has exited and its output
 * is read; output still open `drainMs` after the exit is cut off.
 */
function exited(child: ChildProcess, drainMs: number): Promise<number> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    child.once('exit', () => {
      timer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, drainMs);
    });
    child.once('close', (code: number | null) => {
      clearTimeout(timer);
      resolve(code ?? -1);
    });
  });
}

/** Serves `service` as plaintext gRPC on `address` (`host:port`, port 0 for any); resolves with the server and its bound port. */
export async function serveProcessService(service: ProcessService, address: string): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(PROCESS_SERVICE_DEFINITION, service.implementation());
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return { server, port };
}
