/**
 * A bound on JSON nesting, checked on the raw text before `JSON.parse`. The parser itself copes with any depth, but
 * what walks the parsed value afterwards (serializing it again, validating it, translating it) recurses, and a value
 * nested ten thousand deep exhausts the stack there, far from the request that carried it. One linear scan over the
 * text finds the depth without recursion and without allocating.
 */

export const OPEN_OBJECT = 0x7b; // {
export const OPEN_ARRAY = 0x5b; // [
export const CLOSE_OBJECT = 0x7d; // }
export const CLOSE_ARRAY = 0x5d; // ]
export const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/** What `nestEnd` answers once the depth passes its bound. */
const TOO_DEEP = -2;

/**
 * Whether the JSON text `text` nests objects and arrays deeper than `maxDepth` (a top-level `{}` is depth 1).
 * Brackets inside strings do not count (escaped quotes are honoured). Malformed text is not judged: the scan stops
 * at an unterminated string and answers for what it saw, leaving the verdict on the syntax to `JSON.parse`.
 * O(length): string contents are skipped with `indexOf`.
 */
export function jsonTooDeep(text: string, maxDepth: number): boolean {
  // A text shorter than the bound cannot open more levels than it has characters.
  if (text.length <= maxDepth) return false;
  // Valid JSON closes back to depth 0 once, at its end; malformed text is scanned on from there at depth 0.
  let at = 0;
  while (at >= 0) at = nestEnd(text, at, maxDepth);
  return at === TOO_DEEP;
}

/**
 * Scanning `text` from `from` at depth 0 (brackets inside strings do not count; a close below depth 0 goes negative):
 * the index just past the bracket that closes back to depth 0, so just past the object or array opened at `from`;
 * -1 when the text or a string in it ends first; TOO_DEEP once an open passes `maxDepth`.
 */
export function nestEnd(text: string, from: number, maxDepth = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  const n = text.length;
  for (let i = from; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return TOO_DEEP;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (--depth === 0) return i + 1;
    } else if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) return -1;
    }
  }
  return -1;
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
