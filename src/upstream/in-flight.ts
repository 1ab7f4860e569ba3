/**
 * What is in flight (a client's exchanges, for its `close()` to abort them; the edge's open responses, for a drain):
 * an intrusive list, not a `Set`. A `Set` added to and deleted from per request keeps rehashed tables that point at
 * requests in flight, which promotes them out of V8's young generation (docs/performance.md, the drain's `Map`); a
 * node is unlinked, its links cleared, when its exchange ends.
 */
export class InFlight<T> {
  private head: Node<T> | undefined;

  /** Adds `value`; the returned node removes it (`remove`). */
  add(value: T): Node<T> {
    const node: Node<T> = { value, prev: undefined, next: this.head };
    if (this.head) this.head.prev = node;
    this.head = node;
    return node;
  }

  /** Removes a node added here (again: nothing). */
  remove(node: Node<T>): void {
    if (node.prev) node.prev.next = node.next;
    else if (this.head === node) this.head = node.next;
    else return;
    if (node.next) node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
  }

  /** Every value, newest first, as an array: the list itself is unchanged (a value may be removed while the array is walked). */
  values(): T[] {
    const out: T[] = [];
    for (let n = this.head; n; n = n.next) out.push(n.value);
    return out;
  }

  /** Takes every value out, newest first (the list is empty after). */
  drain(): T[] {
    const out: T[] = [];
    for (let n = this.head; n; ) {
      const next = n.next;
      out.push(n.value);
      n.prev = undefined;
      n.next = undefined;
      n = next;
    }
    this.head = undefined;
    return out;
  }
}

/** One value of an `InFlight` list. */
export interface Node<T> {
  readonly value: T;
  prev: Node<T> | undefined;
  next: Node<T> | undefined;
}
