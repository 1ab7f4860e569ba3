/**
 * Counts per key (a principal's open streams, listens or held calls): a key leaves the map when its count drops to
 * zero, so the map holds only keys with something open and stays bounded by what is open.
 */
export class Tally {
  private readonly counts = new Map<string, number>();

  /** The count of `key` (0 when nothing is open). */
  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** One more for `key`. */
  add(key: string): void {
    this.counts.set(key, this.of(key) + 1);
  }

  /** One fewer for `key`; at zero the key is forgotten. */
  remove(key: string): void {
    const left = this.of(key) - 1;
    if (left > 0) this.counts.set(key, left);
    else this.counts.delete(key);
  }
}
