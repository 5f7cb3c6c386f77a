/**
 * A min-heap of keys by due time, at most one entry per key. The work queue arms a single timer
 * for the earliest entry instead of one timer per key, so 100k pending requeues cost one timer.
 */

interface Entry {
  key: string;
  at: number;
  /** Insertion order: entries due at the same time come out first-in, first-out. */
  seq: number;
}

export class DelayHeap {
  private readonly heap: Entry[] = [];
  private readonly index = new Map<string, number>();
  private seq = 0;

  public get size(): number {
    return this.heap.length;
  }

  /**
   * Schedule `key` at `at`. A key already waiting keeps the earlier of its two times, as client-go's
   * delaying queue does: a short requeue must not be pushed back by a later, longer one.
   */
  public schedule(key: string, at: number): void {
    const i = this.index.get(key);
    if (i === undefined) {
      this.heap.push({ key, at, seq: this.seq++ });
      this.index.set(key, this.heap.length - 1);
      this.up(this.heap.length - 1);
    } else if (at < this.heap[i].at) {
      this.heap[i].at = at;
      this.up(i);
    }
  }

  /** When the earliest entry is due, or undefined when empty. */
  public peekTime(): number | undefined {
    return this.heap[0]?.at;
  }

  /** Remove and return every key due at or before `now`, earliest first. */
  public popDue(now: number): string[] {
    const due: string[] = [];
    while (this.heap.length > 0 && this.heap[0].at <= now) {
      const top = this.heap[0];
      const last = this.heap.pop()!;
      this.index.delete(top.key);
      if (this.heap.length > 0) {
        this.heap[0] = last;
        this.index.set(last.key, 0);
        this.down(0);
      }
      due.push(top.key);
    }
    return due;
  }

  /** Drop `key`'s entry, if it has one. */
  public remove(key: string): boolean {
    const i = this.index.get(key);
    if (i === undefined) return false;
    this.index.delete(key);
    const last = this.heap.pop()!;
    if (i < this.heap.length) {
      this.heap[i] = last;
      this.index.set(last.key, i);
      this.down(i);
      this.up(i);
    }
    return true;
  }

  public clear(): void {
    this.heap.length = 0;
    this.index.clear();
  }

  private less(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i];
    this.heap[i] = this.heap[j];
    this.heap[j] = a;
    this.index.set(this.heap[i].key, i);
    this.index.set(this.heap[j].key, j);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = Math.floor((i - 1) / 2);
      if (!this.less(this.heap[i], this.heap[parent])) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < this.heap.length && this.less(this.heap[l], this.heap[smallest])) smallest = l;
      if (r < this.heap.length && this.less(this.heap[r], this.heap[smallest])) smallest = r;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }
}
