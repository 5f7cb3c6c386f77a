/**
 * A binary heap whose items carry their own position, so any item (not only the top) can be
 * removed or re-sorted in O(log n): a pool member's entry leaves its node's heap when the member
 * changes, a node moves in its tier's ranking when its member count changes.
 */
export interface HeapItem {
  /** Index in the heap holding the item; -1 when in none. Written only by the heap. */
  heapPos: number;
}

export class PositionalHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  /** `before(a, b)`: a comes out first. Must be a strict total order over the items held. */
  public constructor(private readonly before: (a: T, b: T) => boolean) {}

  public get size(): number {
    return this.items.length;
  }

  public peek(): T | undefined {
    return this.items[0];
  }

  public push(item: T): void {
    item.heapPos = this.items.length;
    this.items.push(item);
    this.up(item.heapPos);
  }

  public remove(item: T): void {
    const i = item.heapPos;
    const last = this.items.pop()!;
    item.heapPos = -1;
    if (last === item) return;
    this.items[i] = last;
    last.heapPos = i;
    this.resort(last);
  }

  /** The item's key changed: move it to its place. */
  public resort(item: T): void {
    this.up(item.heapPos);
    this.down(item.heapPos);
  }

  /**
   * The items in order, lazily: each step costs O(log k) after k steps, whatever the heap's size
   * (a best-first walk of the heap's tree), so skipping a few excluded items stays cheap.
   */
  public *ascending(): Generator<T> {
    if (this.items.length === 0) return;
    const first = (a: number, b: number) => this.before(this.items[a], this.items[b]);
    const frontier = new PositionalHeap<{ heapPos: number; at: number }>((a, b) => first(a.at, b.at));
    frontier.push({ heapPos: -1, at: 0 });
    while (frontier.size > 0) {
      const top = frontier.peek()!;
      frontier.remove(top);
      yield this.items[top.at];
      for (const child of [2 * top.at + 1, 2 * top.at + 2]) {
        if (child < this.items.length) frontier.push({ heapPos: -1, at: child });
      }
    }
  }

  private up(i: number): void {
    const item = this.items[i];
    while (i > 0) {
      const parent = Math.floor((i - 1) / 2);
      if (!this.before(item, this.items[parent])) break;
      this.place(this.items[parent], i);
      i = parent;
    }
    this.place(item, i);
  }

  private down(i: number): void {
    const item = this.items[i];
    const n = this.items.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(this.items[right], this.items[left]) ? right : left;
      if (!this.before(this.items[child], item)) break;
      this.place(this.items[child], i);
      i = child;
    }
    this.place(item, i);
  }

  private place(item: T, i: number): void {
    this.items[i] = item;
    item.heapPos = i;
  }
}
