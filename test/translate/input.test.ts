/**
 * translate/input: legacy server→client requests (elicitation, sampling, roots) ⇄ modern input requests and
 * responses (translation.md §3.6, §4.7; M2 §Server Requirements).
 */
import t from 'tap';
import {
  sessionInputCapabilities,
  canonicalJson,
  hintedInputKey,
  INPUT_KEY_HINT,
  INPUT_METHODS,
  isInputDeclared,
  isInputMethod,
  isValidInputResponse,
  requiredCapabilityFor,
  toInputRequest,
  toLegacyInputResult,
  absentUserAnswer,
  sessionStartAnswer,
  undeclaredInputAnswer,
  withCallerCapabilities,
} from '../../src/translate/input.js';
import { clone, K, LEGACY_WIRE, type Json } from '../fixtures/translate-wire.js';

t.test('INPUT_METHODS / isInputMethod', async (t) => {
  t.same([...INPUT_METHODS].sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage']);
  const table: Array<[string, boolean]> = [
    ['elicitation/create', true],
    ['sampling/createMessage', true],
    ['roots/list', true],
    ['ping', false],
    ['tools/call', false],
    ['notifications/elicitation/complete', false],
    ['', false],
  ];
  for (const [m, want] of table) t.equal(isInputMethod(m), want, m);
});

t.test('isInputDeclared matrix', async (t) => {
  const form = LEGACY_WIRE.elicitForm.params as Json;
  const noMode = LEGACY_WIRE.elicitFormNoMode.params as Json;
  const url = LEGACY_WIRE.elicitUrl.params as Json;
  const samp = LEGACY_WIRE.sampling.params as Json;
  const sampTools = LEGACY_WIRE.samplingWithTools.params as Json;
  const toolChoiceOnly: Json = { messages: [], maxTokens: 1, toolChoice: { mode: 'none' } };

  // [name, method, params, caps, declared?]
  const table: Array<[string, string, Json | undefined, Json, boolean]> = [
    // elicitation: {} means form only (S1)
    ['elicitation {} + form', 'elicitation/create', form, { elicitation: {} }, true],
    ['elicitation {} + no mode (form)', 'elicitation/create', noMode, { elicitation: {} }, true],
    ['elicitation {} + no params', 'elicitation/create', undefined, { elicitation: {} }, true],
    ['elicitation {} + url', 'elicitation/create', url, { elicitation: {} }, false],
    ['elicitation {form} + form', 'elicitation/create', form, { elicitation: { form: {} } }, true],
    ['elicitation {form} + url', 'elicitation/create', url, { elicitation: { form: {} } }, false],
    ['elicitation {url} + url', 'elicitation/create', url, { elicitation: { url: {} } }, true],
    ['elicitation {url} + form', 'elicitation/create', form, { elicitation: { url: {} } }, false],
    ['elicitation {url} + no mode', 'elicitation/create', noMode, { elicitation: { url: {} } }, false],
    ['elicitation {form,url} + form', 'elicitation/create', form, { elicitation: { form: {}, url: {} } }, true],
    ['elicitation {form,url} + url', 'elicitation/create', url, { elicitation: { form: {}, url: {} } }, true],
    ['elicitation {form:true} is not an object', 'elicitation/create', form, { elicitation: { form: true } }, false],
    ['elicitation {url:true} is not an object', 'elicitation/create', url, { elicitation: { url: true } }, false],
    ['elicitation true', 'elicitation/create', form, { elicitation: true }, false],
    ['no elicitation', 'elicitation/create', form, { sampling: {}, roots: {} }, false],
    ['unknown mode counts as form', 'elicitation/create', { mode: 'telepathy' }, { elicitation: {} }, true],
    // sampling: tools need sampling.tools
    ['sampling {} + plain', 'sampling/createMessage', samp, { sampling: {} }, true],
    ['sampling {} + no params', 'sampling/createMessage', undefined, { sampling: {} }, true],
    ['sampling {} + tools', 'sampling/createMessage', sampTools, { sampling: {} }, false],
    ['sampling {} + toolChoice only', 'sampling/createMessage', toolChoiceOnly, { sampling: {} }, false],
    ['sampling {tools} + tools', 'sampling/createMessage', sampTools, { sampling: { tools: {} } }, true],
    ['sampling {tools} + plain', 'sampling/createMessage', samp, { sampling: { tools: {} } }, true],
    ['sampling {context} + tools', 'sampling/createMessage', sampTools, { sampling: { context: {} } }, false],
    ['no sampling', 'sampling/createMessage', samp, { elicitation: {} }, false],
    ['sampling null', 'sampling/createMessage', samp, { sampling: null }, false],
    // roots
    ['roots {}', 'roots/list', undefined, { roots: {} }, true],
    ['roots {listChanged}', 'roots/list', undefined, { roots: { listChanged: true } }, true],
    ['no roots', 'roots/list', undefined, {}, false],
    ['roots true', 'roots/list', undefined, { roots: true }, false],
    // other methods are never input
    ['ping is not an input method', 'ping', undefined, { elicitation: {}, sampling: {}, roots: {} }, false],
    ['empty caps', 'elicitation/create', form, {}, false],
  ];
  for (const [name, method, params, caps, want] of table) t.equal(isInputDeclared(method, params, caps), want, name);
});

t.test('toInputRequest', async (t) => {
  const legacy = clone(LEGACY_WIRE.elicitForm);
  const before = clone(legacy);
  t.strictSame(
    toInputRequest(legacy.method, legacy.params as Json),
    {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Delete the file?',
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      },
    },
    'form elicitation: task and _meta removed',
  );
  t.strictSame(legacy, before, 'input not mutated');

  t.strictSame(
    toInputRequest('elicitation/create', clone(LEGACY_WIRE.elicitUrl.params) as Json),
    {
      method: 'elicitation/create',
      params: { mode: 'url', message: 'Please sign in', url: 'https://auth.example/login?s=1' },
    },
    'URL elicitation: elicitationId removed (CH2 minor #11)',
  );

  t.strictSame(
    toInputRequest('sampling/createMessage', clone(LEGACY_WIRE.samplingWithTools.params) as Json),
    {
      method: 'sampling/createMessage',
      params: clone(LEGACY_WIRE.samplingWithTools.params) as Json,
    },
    'sampling params kept',
  );

  const table: Array<[string, string, Json | undefined, Json]> = [
    ['no params', 'roots/list', undefined, { method: 'roots/list' }],
    ['empty params', 'roots/list', {}, { method: 'roots/list' }],
    ['only legacy keys → no params', 'roots/list', { _meta: { [K.relatedTask]: { taskId: 't' } }, task: { ttl: 1 } }, { method: 'roots/list' }],
    ['only elicitationId → no params', 'elicitation/create', { elicitationId: 'e' }, { method: 'elicitation/create' }],
    ['unknown keys kept', 'elicitation/create', { message: 'm', 'x-extra': 1 }, { method: 'elicitation/create', params: { message: 'm', 'x-extra': 1 } }],
  ];
  for (const [name, method, params, want] of table) t.strictSame(toInputRequest(method, params), want, name);
});

t.test('toLegacyInputResult', async (t) => {
  const table: Array<[string, unknown, Json | undefined]> = [
    ['resultType removed', { resultType: 'complete', action: 'accept', content: { ok: true } }, { action: 'accept', content: { ok: true } }],
    ['no resultType', { roots: [] }, { roots: [] }],
    ['_meta kept', { action: 'decline', _meta: { a: 1 } }, { action: 'decline', _meta: { a: 1 } }],
    ['null', null, undefined],
    ['array', [], undefined],
    ['string', 'accept', undefined],
  ];
  for (const [name, v, want] of table) t.strictSame(toLegacyInputResult(v), want, name);
});

t.test('isValidInputResponse per method', async (t) => {
  const table: Array<[string, string, unknown, boolean]> = [
    ['elicit accept', 'elicitation/create', { action: 'accept', content: { ok: true } }, true],
    ['elicit decline', 'elicitation/create', { action: 'decline' }, true],
    ['elicit cancel', 'elicitation/create', { action: 'cancel' }, true],
    ['elicit unknown action', 'elicitation/create', { action: 'maybe' }, false],
    ['elicit no action', 'elicitation/create', { content: {} }, false],
    ['elicit action case', 'elicitation/create', { action: 'ACCEPT' }, false],
    ['sampling text content', 'sampling/createMessage', { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' }, true],
    ['sampling content array', 'sampling/createMessage', { role: 'assistant', content: [{ type: 'text', text: 'a' }], model: 'm' }, true],
    ['sampling without model', 'sampling/createMessage', { role: 'assistant', content: [{ type: 'text', text: 'a' }] }, false],
    ['sampling role unknown', 'sampling/createMessage', { role: 'system', content: { type: 'text', text: 'a' }, model: 'm' }, false],
    ['sampling stopReason a number', 'sampling/createMessage', { role: 'assistant', content: { type: 'text', text: 'a' }, model: 'm', stopReason: 1 }, false],
    ['sampling block without text', 'sampling/createMessage', { role: 'assistant', content: { type: 'text' }, model: 'm' }, false],
    [
      'sampling image block',
      'sampling/createMessage',
      { role: 'assistant', content: { type: 'image', data: 'AA==', mimeType: 'image/png' }, model: 'm', stopReason: 'endTurn' },
      true,
    ],
    ['sampling unknown block type', 'sampling/createMessage', { role: 'assistant', content: { type: 'video' }, model: 'm' }, false],
    ['roots uri not a string', 'roots/list', { roots: [{ uri: 1 }] }, false],
    ['roots uri not file://', 'roots/list', { roots: [{ uri: 'https://x' }] }, false],
    ['elicit _meta not an object', 'elicitation/create', { action: 'decline', _meta: 'x' }, false],
    ['roots _meta not an object', 'roots/list', { roots: [], _meta: [] }, false],
    ['elicit content not an object', 'elicitation/create', { action: 'accept', content: 'x' }, false],
    ['elicit content nested object', 'elicitation/create', { action: 'accept', content: { a: { b: 1 } } }, false],
    ['sampling no role', 'sampling/createMessage', { content: { type: 'text', text: 'hi' } }, false],
    ['sampling role not a string', 'sampling/createMessage', { role: 1, content: {} }, false],
    ['sampling content string', 'sampling/createMessage', { role: 'assistant', content: 'hi' }, false],
    ['sampling no content', 'sampling/createMessage', { role: 'assistant' }, false],
    ['roots array', 'roots/list', { roots: [{ uri: 'file:///r' }] }, true],
    ['roots empty', 'roots/list', { roots: [] }, true],
    ['roots object', 'roots/list', { roots: {} }, false],
    ['roots missing', 'roots/list', {}, false],
    ['unknown method, object', 'vendor/x', { anything: 1 }, true],
    ['unknown method, empty object', 'vendor/x', {}, true],
    ['non-object, elicitation', 'elicitation/create', 'accept', false],
    ['non-object, unknown method', 'vendor/x', null, false],
    ['array', 'roots/list', [], false],
  ];
  for (const [name, method, r, want] of table) t.equal(isValidInputResponse(method, r), want, name);
});

t.test('undeclaredInputAnswer', async (t) => {
  // What a client without the kind answers (not a decline: that would be a user's answer the client never asked for).
  for (const m of ['elicitation/create', 'sampling/createMessage', 'roots/list', 'vendor/x']) {
    const a = undeclaredInputAnswer(m);
    t.ok('error' in a, `${m} is refused`);
    if ('error' in a) {
      t.equal(a.error.code, -32601, `${m} code`);
      t.match(a.error.message, m, `${m} message names the method`);
    }
  }
});

t.test('absentUserAnswer: an elicitation declined, anything else refused as undeclared', async (t) => {
  t.strictSame(absentUserAnswer('elicitation/create'), { result: { action: 'decline' } });
  for (const m of ['sampling/createMessage', 'roots/list', 'vendor/x']) t.strictSame(absentUserAnswer(m), undeclaredInputAnswer(m), m);
});

t.test('sessionStartAnswer: no roots for roots/list, otherwise what an absent user answers', async (t) => {
  t.strictSame(sessionStartAnswer('roots/list'), { result: { roots: [] } });
  for (const m of ['elicitation/create', 'sampling/createMessage', 'vendor/x']) t.strictSame(sessionStartAnswer(m), absentUserAnswer(m), m);
});

t.test('sessionInputCapabilities: the input kinds a caller declared, normalised to what a session declares', async (t) => {
  const cases: Array<[Json, Json, string]> = [
    [{}, {}, ''],
    [{ extensions: { x: {} }, experimental: {} }, {}, ''],
    [{ elicitation: {} }, { elicitation: { form: {} } }, 'f'],
    [{ elicitation: { form: {} } }, { elicitation: { form: {} } }, 'f'],
    [{ elicitation: { url: {} } }, { elicitation: { url: {} } }, 'u'],
    [{ elicitation: { form: {}, url: {} } }, { elicitation: { form: {}, url: {} } }, 'fu'],
    [{ elicitation: { other: {} } }, {}, ''],
    [{ sampling: {} }, { sampling: {} }, 's'],
    [{ sampling: { tools: {}, context: {} } }, { sampling: { tools: {} } }, 'S'],
    [{ roots: {} }, { roots: { listChanged: true } }, 'r'],
    [{ roots: { listChanged: true }, sampling: {}, elicitation: {} }, { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } }, 'fsr'],
    [{ elicitation: true, sampling: 'yes', roots: null }, {}, ''],
  ];
  for (const [declared, session, key] of cases) {
    const n = sessionInputCapabilities(declared as never);
    t.same(n.capabilities, session, `${JSON.stringify(declared)} → session capabilities`);
    t.equal(n.key, key, `${JSON.stringify(declared)} → key`);
  }
  // Whatever was declared, a session of its key lets the upstream ask exactly what the caller can answer.
  const asks: Array<[string, Json | undefined, Json]> = [
    ['elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } }, { elicitation: {} }],
    ['elicitation/create', { mode: 'url', message: 'm', url: 'https://example.com', elicitationId: 'e' }, { elicitation: { url: {} } }],
    ['sampling/createMessage', { messages: [], maxTokens: 1, tools: [] }, { sampling: { tools: {} } }],
    ['roots/list', undefined, { roots: {} }],
  ];
  for (const [method, params, declared] of asks) {
    const session = sessionInputCapabilities(declared as never).capabilities;
    t.equal(isInputDeclared(method, params as never, session), isInputDeclared(method, params as never, declared as never), `${method} as declared`);
    t.notOk(isInputDeclared(method, params as never, sessionInputCapabilities({}).capabilities), `${method} not on a session of a caller without it`);
  }
});

t.test('withCallerCapabilities: the caller’s own capabilities ride in _meta, the rest of the params kept', async (t) => {
  const KEY = 'io.modelcontextprotocol/clientCapabilities';
  const caps = { sampling: {} };
  t.strictSame(withCallerCapabilities(undefined, caps), { _meta: { [KEY]: caps } }, 'no params');
  const params = { name: 'x', arguments: { a: 1 }, _meta: { progressToken: 7 } };
  const before = clone(params);
  t.strictSame(withCallerCapabilities(params, caps), { name: 'x', arguments: { a: 1 }, _meta: { progressToken: 7, [KEY]: caps } }, 'other _meta kept');
  t.strictSame(params, before, 'input not mutated');
  t.strictSame(withCallerCapabilities({ _meta: { [KEY]: { roots: {} } } }, {}), { _meta: { [KEY]: {} } }, 'the caller’s truth replaces any other');
});

t.test('canonicalJson', async (t) => {
  const table: Array<[string, unknown, string]> = [
    ['keys sorted', { b: 1, a: 2 }, '{"a":2,"b":1}'],
    ['nested keys sorted', { z: { y: 1, x: [{ d: 1, c: 2 }] }, a: null }, '{"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}}'],
    ['array order kept', [3, 1, 2], '[3,1,2]'],
    ['empty object', {}, '{}'],
    ['empty array', [], '[]'],
    ['string escaped', 'a"b\n', '"a\\"b\\n"'],
    ['key escaped', { 'a"b': 1 }, '{"a\\"b":1}'],
    ['number', 1.5, '1.5'],
    ['boolean', true, 'true'],
    ['null', null, 'null'],
    ['undefined', undefined, 'null'],
  ];
  for (const [name, v, want] of table) t.equal(canonicalJson(v), want, name);
  t.equal(
    canonicalJson({ sampling: {}, elicitation: { url: {}, form: {} } }),
    canonicalJson({ elicitation: { form: {}, url: {} }, sampling: {} }),
    'insertion order does not matter',
  );
  t.not(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }), 'array order matters');
  const sample = { b: [1, { d: 'x', c: null }], a: { f: true, e: 0 } };
  t.strictSame(JSON.parse(canonicalJson(sample)), sample, 'valid JSON that parses back to the same value');
});

t.test('hintedInputKey', async (t) => {
  t.equal(INPUT_KEY_HINT, 'mcp-tasks-gateway/inputKey');
  t.equal(hintedInputKey(LEGACY_WIRE.elicitForm.params as Json), 'confirm', 'fixture hint');
  const withHint = (hint: unknown): Json => ({ message: 'm', _meta: { [INPUT_KEY_HINT]: hint } });
  const table: Array<[string, Json | undefined, string | undefined]> = [
    ['simple', withHint('confirm'), 'confirm'],
    ['all allowed chars', withHint('A-z_0.9:x'), 'A-z_0.9:x'],
    ['64 chars', withHint('k'.repeat(64)), 'k'.repeat(64)],
    ['65 chars', withHint('k'.repeat(65)), undefined],
    ['empty', withHint(''), undefined],
    ['space', withHint('a b'), undefined],
    ['slash', withHint('a/b'), undefined],
    ['newline', withHint('a\n'), undefined],
    ['non-ASCII', withHint('clé'), undefined],
    ['number', withHint(7), undefined],
    ['no hint', { _meta: { other: 'x' } }, undefined],
    ['_meta not an object', { _meta: 'confirm' }, undefined],
    ['no _meta', { message: 'm' }, undefined],
    ['no params', undefined, undefined],
  ];
  for (const [name, params, want] of table) t.equal(hintedInputKey(params), want, name);
});

t.test('requiredCapabilityFor', async (t) => {
  const table: Array<[string, string, Json | undefined, Json]> = [
    ['form elicitation', 'elicitation/create', LEGACY_WIRE.elicitForm.params as Json, { elicitation: {} }],
    ['elicitation without mode', 'elicitation/create', LEGACY_WIRE.elicitFormNoMode.params as Json, { elicitation: {} }],
    ['elicitation without params', 'elicitation/create', undefined, { elicitation: {} }],
    ['url elicitation', 'elicitation/create', LEGACY_WIRE.elicitUrl.params as Json, { elicitation: { url: {} } }],
    ['plain sampling', 'sampling/createMessage', LEGACY_WIRE.sampling.params as Json, { sampling: {} }],
    ['sampling with tools', 'sampling/createMessage', LEGACY_WIRE.samplingWithTools.params as Json, { sampling: { tools: {} } }],
    ['sampling with toolChoice only', 'sampling/createMessage', { toolChoice: { mode: 'none' } }, { sampling: { tools: {} } }],
    ['sampling without params', 'sampling/createMessage', undefined, { sampling: {} }],
    ['roots', 'roots/list', undefined, { roots: {} }],
    ['unknown', 'vendor/x', { a: 1 }, {}],
  ];
  for (const [name, method, params, want] of table) {
    const req = requiredCapabilityFor(method, params);
    t.strictSame(req, want, name);
    if (method !== 'vendor/x') t.ok(isInputDeclared(method, params, req), `${name}: the required capability satisfies isInputDeclared`);
  }
});
