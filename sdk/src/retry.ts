/**
 * Retries where they are safe: a request the caller marked idempotent (reads, overwriting writes,
 * deletes) is tried again after a connection error or a 429/502/503/504, with exponential backoff
 * and jitter, a bound on attempts and on each wait, and `Retry-After` honoured within that bound.
 * A request that is not idempotent (`run`) is sent again only after a refusal
 * that says nothing ran: a 429 or 503 with `Retry-After`, which the router sends when a limit or
 * an unreachable API server stops a request before it is forwarded, and the runtime when it is
 * running as many commands as it may. A streamed upload, whose body the first attempt consumed, is
 * sent once.
 */
import { SandboxConnectionError, SandboxHttpError } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included. @default 4 */
  readonly attempts?: number;
  /** The first wait; each later one doubles. @default 100 */
  readonly initialDelayMs?: number;
  /** The longest single wait, `Retry-After` included. @default 2000 */
  readonly maxDelayMs?: number;
}

const RETRIABLE_STATUS = new Set([429, 502, 503, 504]);

/** Whether `err` is worth another try of an idempotent request. */
export function retriable(err: unknown): boolean {
  if (err instanceof SandboxConnectionError) return true;
  return err instanceof SandboxHttpError && RETRIABLE_STATUS.has(err.status);
}

/** The wait before attempt `attempt + 1` (attempt counts from 1). */
export function backoffMs(options: RetryOptions, attempt: number, retryAfterSeconds?: number, random: () => number = Math.random): number {
  const initial = options.initialDelayMs ?? 100;
  const max = options.maxDelayMs ?? 2000;
  if (retryAfterSeconds !== undefined && Number.isFinite(retryAfterSeconds) && retryAfterSeconds >= 0) {
    return Math.min(max, retryAfterSeconds * 1000);
  }
  const exp = Math.min(max, initial * 2 ** (attempt - 1));
  // Full jitter over the upper half, so many clients do not come back in step.
  return exp / 2 + random() * (exp / 2);
}

/** Whether `err` is a refusal that guarantees nothing ran: 429 or 503 with Retry-After. */
export function refusedUnprocessed(err: unknown): boolean {
  return err instanceof SandboxHttpError && (err.status === 429 || err.status === 503) && err.retryAfterSeconds !== undefined;
}

/**
 * Runs `fn` up to `attempts` times: any retriable error when `idempotent`, else only refusals that
 * say nothing ran; never again when the request cannot be sent again (`replayable` false: a
 * streamed body is consumed by the first attempt).
 */
export async function withRetries<T>(
  fn: () => Promise<T>,
  idempotent: boolean,
  options: RetryOptions,
  signal?: AbortSignal,
  replayable = true,
): Promise<T> {
  const attempts = replayable ? Math.max(1, options.attempts ?? 4) : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const again = idempotent ? retriable(err) : refusedUnprocessed(err);
      if (attempt >= attempts || !again || signal?.aborted) throw err;
      const retryAfter = err instanceof SandboxHttpError ? err.retryAfterSeconds : undefined;
      await sleep(backoffMs(options, attempt, retryAfter), signal);
    }
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
