/**
 * Splicing a translated result from the upstream's own text (src/translate/json-splice.ts): whatever the upstream's
 * formatting, the spliced text parses to exactly the translated result, or there is none and the result is serialized.
 */
import fc from 'fast-check';
import t from 'tap';
import { legacyResult, modernResult, splicedResult, type JsonObject } from '../../src/translate/index.js';

const SERVER_INFO = { name: 'up', version: '1' };
const toModern = (legacy: JsonObject) => modernResult('tools/call', legacy, { serverInfo: SERVER_INFO, cache: { ttlMs: 0, scope: 'private' } });

/** The upstream's whole response message as text, the result in it parsed, and the text spliced for `translate`'s result. */
function splice(raw: string, translate: (r: JsonObject) => JsonObject): { translated: JsonObject; text: string | undefined } {
  const original = (JSON.parse(raw) as { result: JsonObject }).result;
  const translated = translate(original);
  return { translated, text: splicedResult(raw, original, translated, 0) };
}

t.test('a legacy tools/call result gains resultType and _meta, its members copied as they came', async (t) => {
  const raw = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'x'.repeat(100_000) }], isError: false } });
  const { translated, text } = splice(raw, toModern);
  t.ok(text, 'spliced');
  t.same(JSON.parse(text as string), translated);
  t.ok((text as string).startsWith('{"content":[{"type":"text","text":"xxx'), "the upstream's bytes first");
});

t.test('the upstream formatting (spaces, newlines, key order, escapes inside strings) survives; the value is the same', async (t) => {
  const raw =
    '{\n  "result" : {\n    "content" : [ { "type" : "text", "text" : "a \\"quoted\\" }{ ] [ \\\\" } ],\n    "structuredContent" : { "n" : -1.5e3, "ok" : true, "v" : null }\n  },\n  "id" : "q",\n  "jsonrpc" : "2.0"\n}\n';
  const { translated, text } = splice(raw, toModern);
  t.ok(text);
  t.same(JSON.parse(text as string), translated);
});

t.test('an empty result, and one whose _meta is replaced (serverInfo added, relatedTask dropped)', async (t) => {
  const empty = splice('{"jsonrpc":"2.0","id":1,"result":{}}', toModern);
  t.same(JSON.parse(empty.text as string), empty.translated);
  const meta = splice(
    JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [], _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' }, mine: 1 } } }),
    toModern,
  );
  t.same(JSON.parse(meta.text as string), meta.translated);
  t.same(meta.translated._meta, { mine: 1, 'io.modelcontextprotocol/serverInfo': SERVER_INFO });
});

t.test('the other way: a modern result loses resultType and its serverInfo, and a non-object structuredContent', async (t) => {
  const raw = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    result: { content: [], structuredContent: [1, 2], resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO } },
  });
  const { translated, text } = splice(raw, (r) => {
    const out = legacyResult('tools/call', r);
    if (!out.ok) throw new Error('not translated');
    return out.value;
  });
  t.same(translated, { content: [] });
  t.same(JSON.parse(text as string), translated);
});

t.test('a short answer is serialized, not spliced (the scan would cost more)', async (t) => {
  const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'hi' }] } });
  const original = (JSON.parse(raw) as { result: JsonObject }).result;
  t.equal(splicedResult(raw, original, toModern(original)), undefined);
});

t.test('nothing is spliced where the text does not say exactly what was parsed', async (t) => {
  const none = (raw: string) => splice(raw, toModern).text;
  t.equal(none('{"jsonrpc":"2.0","id":1,"result":{"content":[],"content":[1]}}'), undefined, 'a duplicate key (the parse kept the last)');
  t.equal(none('{"jsonrpc":"2.0","id":1,"result":{"\\u005fmeta":{},"content":[]}}'), undefined, 'a key written with an escape');
  t.equal(none('{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":{"content":[]}}'), undefined, 'two results');
  t.equal(splicedResult('[{"jsonrpc":"2.0","id":1,"result":{}}]', {}, { resultType: 'complete' }, 0), undefined, 'a batch');
  t.equal(splicedResult('{"jsonrpc":"2.0","id":1,"result":[1]}', {}, { resultType: 'complete' }, 0), undefined, 'a result that is no object');
});

t.test('any result object, any formatting: the splice parses to the translated result', async (t) => {
  const json = fc.jsonValue({ maxDepth: 3 });
  const results = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 6 });
  fc.assert(
    fc.property(results, fc.boolean(), (result, pretty) => {
      const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, result }, null, pretty ? 2 : undefined);
      const { translated, text } = splice(raw, toModern);
      // Keys with escapes are left to serialization; everything else is spliced and means the same.
      if (text === undefined) return Object.keys(result).some((k) => JSON.stringify(k) !== `"${k}"`) || Object.hasOwn(result, '__proto__');
      t.same(JSON.parse(text), translated);
      return true;
    }),
    { numRuns: 300 },
  );
});
