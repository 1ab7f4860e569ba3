/**
 * Splicing JSON text instead of serializing parsed values again: a translated answer whose result the gateway changes
 * only at its top level (a 2025-11-25 `tools/call` result gains `resultType` and the upstream's `serverInfo` in
 * `_meta`) is written from the upstream's own bytes around those members. `JSON.stringify` of a 100 KB result was
 * the largest cost of the translated path's large answers (docs/performance.md). The text was parsed whole already
 * (it is valid JSON): the scan below only finds member boundaries, skipping string contents with `indexOf`.
 */
import { CLOSE_ARRAY, CLOSE_OBJECT, nestEnd, OPEN_ARRAY, OPEN_OBJECT, QUOTE, stringEnd } from './json-depth.js';
import type { JsonObject } from './jsonrpc.js';

const COMMA = 0x2c; // ,
const COLON = 0x3a; // :

/**
 * Below this many characters an answer is not spliced: serializing a small parsed result again costs less than
 * scanning its text (the splice showed as 2 % of the small-answer path's profile, more than the serializing it saved).
 */
const SPLICE_MIN_CHARS = 8 * 1024;

/** One member of a JSON object in a text: its key as written between the quotes, and where its value starts and ends. */
interface Member {
  key: string;
  start: number;
  end: number;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  return at;
}

/** The index just past the string whose opening quote is at `open`, or -1. */
function afterString(text: string, open: number): number {
  const close = stringEnd(text, open);
  return close < 0 ? -1 : close + 1;
}

/** The index just past the value that starts at `at`, or -1. */
function afterValue(text: string, at: number): number {
  const c = text.charCodeAt(at);
  if (c === QUOTE) return afterString(text, at);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return nestEnd(text, at);
  // A number, true, false or null: up to the next delimiter.
  let i = at;
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break;
    i++;
  }
  return i > at ? i : -1;
}

/** The members of the object whose `{` is at `open`, and the index of its `}`; `undefined` when it is not one. */
function membersOf(text: string, open: number): { members: Member[]; close: number } | undefined {
  if (text.charCodeAt(open) !== OPEN_OBJECT) return undefined;
  const members: Member[] = [];
  let at = skipSpace(text, open + 1);
  if (text.charCodeAt(at) === CLOSE_OBJECT) return { members, close: at };
  for (;;) {
    if (text.charCodeAt(at) !== QUOTE) return undefined;
    const keyEnd = afterString(text, at);
    if (keyEnd < 0) return undefined;
    const key = text.slice(at + 1, keyEnd - 1);
    at = skipSpace(text, keyEnd);
    if (text.charCodeAt(at) !== COLON) return undefined;
    const start = skipSpace(text, at + 1);
    const end = afterValue(text, start);
    if (end < 0) return undefined;
    members.push({ key, start, end });
    at = skipSpace(text, end);
    const c = text.charCodeAt(at);
    if (c === CLOSE_OBJECT) return { members, close: at };
    if (c !== COMMA) return undefined;
    at = skipSpace(text, at + 1);
  }
}

/**
 * The JSON text of `translated`, a result the gateway made from `original` (the `result` of the response whose text,
 * the whole message as the upstream sent it, is `raw`) by dropping, replacing and adding top-level members only:
 * each member `translated` keeps as it was (the same value) is copied from `raw` as it came, a replaced one and an
 * added one are serialized (after the kept ones). `undefined` (serialize it all) when `raw` is shorter than `minChars`
 * (default SPLICE_MIN_CHARS), or its result is not an object whose members are exactly `original`'s, each key written without an escape.
 */
export function splicedResult(raw: string, original: JsonObject, translated: JsonObject, minChars = SPLICE_MIN_CHARS): string | undefined {
  if (raw.length < minChars) return undefined;
  const message = membersOf(raw, skipSpace(raw, 0));
  const spans = message?.members.filter((m) => m.key === 'result');
  if (spans?.length !== 1) return undefined;
  const result = membersOf(raw, (spans[0] as Member).start);
  if (!result || result.members.length !== Object.keys(original).length) return undefined;
  const parts: string[] = [];
  const seen = new Set<string>();
  for (const m of result.members) {
    if (m.key.includes('\\') || !Object.hasOwn(original, m.key) || seen.has(m.key)) return undefined;
    seen.add(m.key);
    const value = translated[m.key];
    if (value === undefined) continue;
    parts.push(value === original[m.key] ? `"${m.key}":${raw.slice(m.start, m.end)}` : member(m.key, value));
  }
  for (const key of Object.keys(translated)) if (!seen.has(key) && translated[key] !== undefined) parts.push(member(key, translated[key]));
  return `{${parts.join(',')}}`;
}

function member(key: string, value: unknown): string {
  return `${JSON.stringify(key)}:${JSON.stringify(value)}`;
}
