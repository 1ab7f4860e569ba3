/** Input keys: the names under which input requests are asked and answered. */
import { hintedInputKey } from './input.js';
import type { JsonObject } from './jsonrpc.js';

/**
 * Mints input keys unique for a call's or a task's whole life (2026-07-28 basic/patterns/mrtr: keys are unique
 * within a request; tasks extension §Task Update Requests: unique for the task's life, never reused).
 */
export class KeyMinter {
  private seq = 0;
  private readonly used = new Set<string>();

  /** Whether `key` was ever minted here (asked at some point of the call's or task's life). */
  has(key: string): boolean {
    return this.used.has(key);
  }

  /** The upstream's hinted key if still unused, else `<kind>-<n>`. Never the same key twice. */
  mint(method: string, params: JsonObject | undefined): string {
    const hint = hintedInputKey(params);
    let key = hint !== undefined && !this.used.has(hint) ? hint : undefined;
    while (key === undefined || this.used.has(key)) key = `${method.split('/')[0] ?? 'input'}-${++this.seq}`;
    this.used.add(key);
    return key;
  }
}
