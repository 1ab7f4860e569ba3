/**
 * A bound on JSON nesting, checked on the raw text before `JSON.parse`. The parser itself copes with any depth, but
 * what walks the parsed value afterwards (serializing it again, validating it, translating it) recurses, and a value
 * nested ten thousand deep exhausts the stack there, far from the request that carried it. One linear scan over the
 * text finds the depth without recursion and without allocating.
 */

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Whether the JSON text `text` nests objects and arrays deeper than `maxDepth` (a top-level `{}` is depth 1).
 * Brackets inside strings do not count (escaped quotes are honoured). Malformed text is not judged: the scan stops
 * at an unterminated string and answers for what it saw, leaving the verdict on the syntax to `JSON.parse`.
 * O(length): string contents are skipped with `indexOf`.
 */
export function jsonTooDeep(text: string, maxDepth: number): boolean {
  // A text shorter than the bound cannot open more levels than it has characters.
  if (text.length <= maxDepth) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    }
  }
  return false;
}

/** The index of the quote closing the string opened at `open`, or -1 when it is never closed. */
export function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    // A quote preceded by an odd run of backslashes is escaped and does not close the string.
    let slashes = 0;
    for (let j = at - 1; j > open && text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return at;
  }
}
