/**
 * Time as the runtime sees it. Work queues, informers and leader election take a Clock so their
 * timing logic can be tested deterministically with a manual clock instead of real waits.
 *
 * Two clocks run in the process: SYSTEM_CLOCK is the wall clock (what object timestamps such as
 * shutdownTime and a Lease's renewTime are compared with and written in), and MONOTONIC_CLOCK never
 * steps (what delays, backoffs, timeouts and lease expiry as observed locally are measured in), so
 * an NTP step of the wall clock neither fires every delay at once nor postpones them all.
 */
import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';

/** An opaque handle of a scheduled callback. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * Test-only hook: when this environment variable names a file, the wall clock (SYSTEM_CLOCK) reads
 * as the machine's plus the number of milliseconds written in that file, re-read every 100 ms, so a
 * fault test can step the operator's wall clock as NTP would without touching the machine's.
 * Timers are unaffected, as with a real step. Never set in an install.
 */
export const TEST_CLOCK_OFFSET_FILE_ENV = 'AGENT_SANDBOX_TEST_CLOCK_OFFSET_FILE';

let testOffsetMs = 0;
const testOffsetFile = process.env[TEST_CLOCK_OFFSET_FILE_ENV];
if (testOffsetFile) {
  const read = () => {
    try {
      const value = Number(fs.readFileSync(testOffsetFile, 'utf8').trim());
      if (Number.isFinite(value)) testOffsetMs = value;
    } catch {
      // No file (yet): no offset change.
    }
  };
  read();
  setInterval(read, 100).unref();
}

const realTimers: Pick<Clock, 'setTimeout' | 'clearTimeout'> = {
  setTimeout: (callback, delayMs) => setTimeout(callback, Math.max(0, delayMs)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** The wall clock: milliseconds since the epoch as the machine says now (it can step). */
export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now() + testOffsetMs,
  ...realTimers,
};

/**
 * A clock that never steps: the wall time at process start plus the monotonic time elapsed since.
 * For measuring durations; never compare it with timestamps from the API server.
 */
export const MONOTONIC_CLOCK: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  ...realTimers,
};

/** Resolves after `delayMs` on `clock`, or at once when any of `signals` aborts. */
export function sleep(clock: Clock, delayMs: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  // Any of several signals ends the sleep. Listeners are removed when it ends either way: no
  // AbortSignal.any, which leaks when one of its signals is long-lived (nodejs/node#55351).
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  return new Promise((resolve) => {
    if (live.some((s) => s.aborted)) return resolve();
    const finish = () => {
      clock.clearTimeout(handle);
      for (const s of live) s.removeEventListener('abort', finish);
      resolve();
    };
    const handle = clock.setTimeout(finish, delayMs);
    for (const s of live) s.addEventListener('abort', finish, { once: true });
  });
}
