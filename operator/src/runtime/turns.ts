/**
 * Give the event loop back during long stretches of work that never waits on I/O.
 *
 * A worker whose queue holds keys gets each next key from an already-resolved promise, and a
 * reconcile that finds nothing to write (every Sandbox of a large cluster, right after a restart)
 * never waits on I/O either: the whole queue then drains inside one macrotask, as microtasks, and
 * no socket is read until it is empty. After a restart with 10,000 cached Sandboxes that held the
 * first claim's watch event and API responses back for over half a second.
 *
 * `takeTurn()` costs nothing while the current macrotask is young: it returns undefined. Once the
 * macrotask has run for `sliceMs`, it returns a promise that resolves from `setImmediate`, after
 * the loop's poll phase has delivered whatever I/O arrived meanwhile. A macrotask's start is
 * noticed lazily: the first call in a macrotask arms a `setImmediate` that marks the next one.
 */

/** How long one macrotask may run worker turns before it yields to I/O. */
export const TURN_SLICE_MS = 2;

export class Turns {
  private sliceStart = 0;
  private armed = false;

  public constructor(
    private readonly sliceMs: number = TURN_SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Undefined while this macrotask has run under `sliceMs`; otherwise a promise to await before going on. */
  public takeTurn(): Promise<void> | undefined {
    const now = this.now();
    if (!this.armed) {
      this.armed = true;
      this.sliceStart = now;
      setImmediate(() => (this.armed = false));
      return undefined;
    }
    if (now - this.sliceStart < this.sliceMs) return undefined;
    return new Promise((resolve) => setImmediate(resolve));
  }
}
