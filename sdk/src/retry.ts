/**
 * Retries where they are safe: a request the caller marked idempotent (reads, overwriting writes,
 * deletes) is tried again after a connection error or a 429/502/503/504, with exponential backoff
 * and jitter, a bound on attempts and on each wait, and `Retry-After` honoured within that bound.
 * A request that is not idempotent (`run`) is sent again only after a refusal
 * that says nothing ran: a 429 or 503 with `Retry-After`, which the router sends when a limit or
 * an unreachable API server stops a request before it is forwarded, and the runtime when it is
 * running as many commands as it may. A streamed upload, whose body the first attempt consumed, is
 * sent once.
 *
 * A sandbox the router is waking (idle policy, resumeOnRequest) is the one refusal retried by time
 * instead of by count: the router holds each try until the sandbox serves or its bound passes, so
 * a count would either give up while the resume is nearly done or wait far past the caller's
 * time. It is tried again while the call's own time (`resumeBy`) lasts.
 */
import { SandboxConnectionError, SandboxHttpError, SandboxResumingError } from './errors.js';

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

/** A try after a resume refusal needs at least this much of the call's time left to be worth sending. */
const MIN_RESUME_TRY_MS = 1000;

/**
 * Whether `err` is the router's refusal of a sandbox it is still waking that ran nothing (503
 * SandboxResuming with Retry-After), and `resumeBy` (ms since the epoch) leaves time to try again
 * after the wait it returns; undefined when not.
 */
export function resumeRetryDelay(err: unknown, options: RetryOptions, resumeBy: number | undefined, now = Date.now()): number | undefined {
  if (!(err instanceof SandboxResumingError) || err.retryAfterSeconds === undefined || resumeBy === undefined) return undefined;
  // Retry-After 0 from a router that did not hold the request would make a busy loop: never sooner than the first backoff.
  const wait = Math.max(backoffMs(options, 1, err.retryAfterSeconds), options.initialDelayMs ?? 100);
  return resumeBy - now - wait >= MIN_RESUME_TRY_MS ? wait : undefined;
}

/** How one call is retried. */
export interface RetryCall {
  /** Any retriable error may be tried again; else only refusals that say nothing ran. */
  readonly idempotent: boolean;
  readonly signal?: AbortSignal;
  /** False when the request cannot be sent again (a streamed body is consumed by the first attempt). @default true */
  readonly replayable?: boolean;
  /** Until when (ms since the epoch) a refusal of a sandbox being woken is tried again; not counted against `attempts`. */
  readonly resumeBy?: number;
}

/**
 * Runs `fn` up to `attempts` times: any retriable error when `idempotent`, else only refusals that
 * say nothing ran; never again when the request cannot be sent again. A sandbox still being woken
 * is tried again until `resumeBy`, however many attempts that takes.
 */
export async function withRetries<T>(fn: () => Promise<T>, call: RetryCall, options: RetryOptions): Promise<T> {
  const { idempotent, signal } = call;
  const replayable = call.replayable ?? true;
  const attempts = replayable ? Math.max(1, options.attempts ?? 4) : 1;
  let attempt = 1;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const resumeWait = replayable && !signal?.aborted ? resumeRetryDelay(err, options, call.resumeBy) : undefined;
      if (resumeWait !== undefined) {
        await sleep(resumeWait, signal);
        continue;
      }
      // The call's time for the resume is up: another try would only be held and refused again.
      if (err instanceof SandboxResumingError && call.resumeBy !== undefined) throw err;
      const again = idempotent ? retriable(err) : refusedUnprocessed(err);
      if (attempt >= attempts || !again || signal?.aborted) throw err;
      const retryAfter = err instanceof SandboxHttpError ? err.retryAfterSeconds : undefined;
      await sleep(backoffMs(options, attempt, retryAfter), signal);
      attempt++;
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
