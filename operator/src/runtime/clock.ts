/**
 * Time as the runtime sees it. Work queues, informers and leader election take a Clock so their
 * timing logic can be tested deterministically with a manual clock instead of real waits.
 */

/** An opaque handle of a scheduled callback. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The process clock. */
export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, Math.max(0, delayMs)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Resolves after `delayMs` on `clock`, or at once when `signal` aborts. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
