/** The JSON depth scan (src/translate/json-depth.ts): exact on any JSON text, blind to brackets inside strings. */
import fc from 'fast-check';
import t from 'tap';
import { jsonTooDeep } from '../../src/translate/index.js';
import { CLOSE_ARRAY, CLOSE_OBJECT, nestEnd, OPEN_ARRAY, OPEN_OBJECT, QUOTE, stringEnd } from '../../src/translate/json-depth.js';

/** The nesting depth of a parsed value, computed the obvious (recursive) way. */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

t.test('depth counted on objects and arrays; scalars are depth 0', async (t) => {
  t.equal(jsonTooDeep('1', 0), false);
  t.equal(jsonTooDeep('{}', 0), true);
  t.equal(jsonTooDeep('{}', 1), false);
  t.equal(jsonTooDeep('[[[]]]', 2), true);
  t.equal(jsonTooDeep('[[[]]]', 3), false);
  t.equal(jsonTooDeep('[[],[],[[]]]', 2), true, 'the deepest branch counts, not the number of brackets');
  t.equal(jsonTooDeep('[[],[],[]]', 2), false);
});

t.test('brackets inside strings do not count; escaped quotes do not end a string', async (t) => {
  t.equal(jsonTooDeep(JSON.stringify({ a: '[[[[[[[[[[{{{{{{' }), 1), false);
  t.equal(jsonTooDeep(JSON.stringify({ a: 'say \\"[[[[[[[[\\" \\\\' }), 1), false);
  t.equal(jsonTooDeep(JSON.stringify(['\\', [[]]]), 2), true, 'a string ending in a backslash ends at its quote');
  t.equal(jsonTooDeep(JSON.stringify(['"', '[[[[[[[[', []]), 1), true);
});

t.test('malformed text does not throw and leaves the verdict to JSON.parse', async (t) => {
  t.equal(jsonTooDeep('["unterminated [[[[[[[[[[[[', 2), false);
  t.equal(jsonTooDeep(']]]]]]]]]]]]', 2), false);
  t.equal(jsonTooDeep('[[['.repeat(10), 5), true, 'unclosed brackets still count');
});

t.test('10,000 deep is found without recursion', async (t) => {
  const deep = '['.repeat(10_000) + ']'.repeat(10_000);
  t.equal(jsonTooDeep(deep, 128), true);
  t.equal(jsonTooDeep(deep, 10_000), false);
});

t.test('property: on any JSON value, the scan agrees with the recursive depth', async (t) => {
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 2 }),
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(fc.string(), tie('node'), { maxKeys: 3 }),
    ),
  })).node;
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 12 }), (v, max) => jsonTooDeep(JSON.stringify(v), max) === depthOf(v) > max),
    { numRuns: 500 },
  );
  t.pass('500 values');
});

t.test('stringEnd: the quote closing a string, escaped quotes and backslashes honoured; -1 for one never closed', async (t) => {
  const text = '{"a":"x\\"y\\\\","b":1}';
  t.equal(text.slice(5, stringEnd(text, 5) + 1), '"x\\"y\\\\"', 'past the escaped quote, at the quote after an escaped backslash');
  t.equal(stringEnd('"never', 0), -1);
  t.equal(stringEnd('""', 0), 1);
});

t.test('the bytes the scans look for are the characters they name', async (t) => {
  t.equal(String.fromCharCode(OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY, QUOTE), '{}[]"');
});

t.test('nestEnd: just past the object or array opened at `from`, brackets inside strings skipped; -1 when never closed', async (t) => {
  const text = '{"a":[1,{"b":"]}"}],"c":{}} tail';
  t.equal(nestEnd(text, 0), text.indexOf(' tail'), 'the whole object');
  t.equal(text.slice(5, nestEnd(text, 5)), '[1,{"b":"]}"}]', 'a nested array, past the brackets in its string');
  t.equal(nestEnd('[[]', 0), -1, 'never closed');
  t.equal(nestEnd('["]', 0), -1, 'a string never closed');
  t.equal(nestEnd('[[[]]]', 0, 2), -2, 'deeper than the bound');
  t.equal(nestEnd('[[]]', 0, 2), 4, 'as deep as the bound');
  t.equal(nestEnd(']][]', 0), -1, 'a close below depth 0 goes negative, so the text ends first');
});

t.test('property: nestEnd finds the end of any JSON object or array, wherever it starts', async (t) => {
  const container = fc.oneof(
    fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 4 }),
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
  );
  fc.assert(
    fc.property(container, fc.string({ maxLength: 5 }), (v, tail) => {
      const text = `  ${JSON.stringify(v)}${tail}`;
      return nestEnd(text, 2) === 2 + JSON.stringify(v).length;
    }),
    { numRuns: 300 },
  );
  t.pass('300 values');
});
