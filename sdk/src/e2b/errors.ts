/**
 * The error classes E2B-shaped code catches (`CommandExitError`, `TimeoutError`, `NotFoundError`,
 * ...), all subclasses of the SDK's own SandboxError (which this module exports under that name,
 * as E2B names its root class), so `instanceof` works against either API. An SDK error is turned
 * into the E2B class that means the same by `translate`; the original is its `cause`. Errors with
 * no E2B counterpart (SandboxSuspendedError, SandboxProcessError, SandboxClaimFailedError, ...)
 * pass through as they are.
 */
import { constants } from 'node:os';
import {
  SandboxApiError, SandboxAuthError, SandboxClaimTimeoutError, SandboxColdStartError, SandboxConfigError, SandboxError, SandboxHttpError,
  SandboxPoolNotFoundError, SandboxTimeoutError,
} from '../errors.js';
import type { RunResult } from '../sandbox.js';

export { SandboxError };

/** A finished command, as E2B's `commands.run` and `CommandHandle.wait` give it. */
export interface CommandResult {
  /** 0 on success; a negative signal number when a signal ended the command. */
  readonly exitCode: number;
  /** Why the command failed (`exit status 3`, `signal: SIGKILL`); absent on success. */
  readonly error?: string;
  readonly stdout: string;
  readonly stderr: string;
}

interface ErrorOptions {
  readonly sandbox?: string;
  readonly cause?: unknown;
}

/** A command ended with a non-zero exit code: thrown by `commands.run` and `CommandHandle.wait`, as E2B does. */
export class CommandExitError extends SandboxError implements CommandResult {
  public override readonly name = 'CommandExitError';

  public constructor(public readonly result: CommandResult, options: ErrorOptions = {}) {
    super(result.error ?? `exit status ${result.exitCode}`, options);
  }

  public get exitCode(): number {
    return this.result.exitCode;
  }

  public get error(): string | undefined {
    return this.result.error;
  }

  public get stdout(): string {
    return this.result.stdout;
  }

  public get stderr(): string {
    return this.result.stderr;
  }
}

/** A time limit ran out: a command's `timeoutMs` (`result` has its output so far), a request's, or the wait for a sandbox. */
export class TimeoutError extends SandboxError {
  public override readonly name = 'TimeoutError';
  public readonly result?: CommandResult;

  public constructor(message: string, options: ErrorOptions & { readonly result?: CommandResult } = {}) {
    super(message, options);
    this.result = options.result;
  }
}

/** A file, process, sandbox (claim) or template (SandboxWarmPool) that does not exist. */
export class NotFoundError extends SandboxError {
  public override readonly name = 'NotFoundError';
}

/** An argument or option is wrong; the message names it and the fix. */
export class InvalidArgumentError extends SandboxError {
  public override readonly name = 'InvalidArgumentError';
}

/** The router or the Kubernetes API refused the credentials (401) or the rights (403). */
export class AuthenticationError extends SandboxError {
  public override readonly name = 'AuthenticationError';
}

/** The router or the runtime answered 429 (a limit of concurrent commands or processes). */
export class RateLimitError extends SandboxError {
  public override readonly name = 'RateLimitError';
}

/**
 * An E2B method or option this facade cannot honestly give on Kubernetes sandboxes. `method` names
 * it; the message says what to use instead.
 */
export class NotSupportedError extends SandboxError {
  public override readonly name = 'NotSupportedError';

  public constructor(public readonly method: string, instead: string) {
    super(`${method} is not supported by @cdk8s-agent-sandbox/sdk/e2b: ${instead}`);
  }
}

/** The E2B class for an SDK error (the original as its cause); anything else as it is. */
export function translate(err: unknown): unknown {
  if (!(err instanceof SandboxError) || isE2bError(err)) return err;
  const options = { sandbox: err.sandbox, cause: err };
  if (err instanceof SandboxConfigError) return new InvalidArgumentError(err.message, options);
  if (err instanceof SandboxTimeoutError || err instanceof SandboxClaimTimeoutError || err instanceof SandboxColdStartError) {
    return new TimeoutError(err.message, options);
  }
  if (err instanceof SandboxPoolNotFoundError) return new NotFoundError(err.message, options);
  if (err instanceof SandboxAuthError) return new AuthenticationError(err.message, options);
  const status = err instanceof SandboxHttpError || err instanceof SandboxApiError ? err.status : undefined;
  if (status === 404) return new NotFoundError(err.message, options);
  if (status === 429) return new RateLimitError(err.message, options);
  if (err instanceof SandboxApiError && (status === 401 || status === 403)) return new AuthenticationError(err.message, options);
  return err;
}

function isE2bError(err: SandboxError): boolean {
  return err instanceof CommandExitError || err instanceof TimeoutError || err instanceof NotFoundError || err instanceof InvalidArgumentError
    || err instanceof AuthenticationError || err instanceof RateLimitError || err instanceof NotSupportedError;
}

/** Runs `call`, throwing its SDK errors as their E2B classes. */
export async function e2bCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw translate(err);
  }
}

/** A finished run as E2B's CommandResult (`error` says how it failed). */
export function commandResult(run: RunResult): CommandResult {
  const base = { exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr };
  if (run.exitCode === 0) return base;
  const signal = run.exitCode < 0 ? Object.entries(constants.signals).find(([, n]) => n === -run.exitCode)?.[0] : undefined;
  return { ...base, error: run.exitCode < 0 ? `signal: ${signal ?? -run.exitCode}` : `exit status ${run.exitCode}` };
}

/** A finished command as E2B reports it: the result, or a TimeoutError (it ran out of its timeoutMs) or a CommandExitError. */
export function settle(result: CommandResult, timedOut: boolean, what: string, sandbox: string): CommandResult {
  if (timedOut) {
    throw new TimeoutError(`${what}: the command ran out of its timeoutMs and was killed (pass a larger timeoutMs, or 0 for no limit); its output so far is in error.result`, { sandbox, result });
  }
  if (result.exitCode !== 0) throw new CommandExitError(result, { sandbox });
  return result;
}
