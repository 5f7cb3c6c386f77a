/** A manual Clock for deterministic timing tests: time moves only in advance(). */
import { Clock, TimerHandle } from '../../src/runtime/clock';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

export class FakeClock implements Clock {
  private time: number;
  private nextId = 1;
  private timers: Timer[] = [];

  public constructor(start = 1_000_000) {
    this.time = start;
  }

  public now(): number {
    return this.time;
  }

  public setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const timer = { id: this.nextId++, at: this.time + Math.max(0, delayMs), callback };
    this.timers.push(timer);
    return timer.id;
  }

  public clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Timers not yet fired. */
  public get pending(): number {
    return this.timers.length;
  }

  /** Move time forward, firing due timers in time order (and timers they schedule within the window). */
  public advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.callback();
    }
    this.time = end;
  }
}
