/**
 * MRTR (multi round-trip requests) through the gateway, byte level: the legacy fixture's server→client requests
 * become `input_required` results; retries carry `inputResponses` and the HMAC'd `requestState`.
 */
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { startRelay, within } from '../helpers/relay.js';
import { envelope, post, type RawReply } from '../helpers/modern.js';

const SERVER_INFO = { name: 'legacy-fixture-server', version: '1.0.0' };
const ELICIT = { elicitation: {} };
const ELICIT_TOOL = 'test_input_required_result_elicitation';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stackFor(t: Teardown, config: Record<string, unknown> = {}, upstream: Record<string, unknown> = {}): Promise<Stack> {
  const stack = await startStack(config, upstream);
  t.teardown(() => stack.close());
  return stack;
}

/** Round 1 of a tool call that needs input. */
function call(stack: Stack, name: string, extra: Record<string, unknown> = {}, opts: Parameters<typeof post>[3] = {}): Promise<RawReply> {
  return post(stack.url, 'tools/call', { name, arguments: {}, ...extra }, { capabilities: ELICIT, ...opts });
}

/** A retry of `name` with answers and the state of the previous round. */
function retry(
  stack: Stack,
  name: string,
  requestState: unknown,
  inputResponses: Record<string, unknown>,
  opts: Parameters<typeof post>[3] = {},
): Promise<RawReply> {
  return call(stack, name, { requestState, inputResponses }, opts);
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

/** Replaces one character of the payload (before the '.') with a different base64url character. */
function flipPayloadChar(state: string): string {
  const dot = state.indexOf('.');
  const i = Math.floor(dot / 2);
  const c = state[i] === 'A' ? 'B' : 'A';
  return state.slice(0, i) + c + state.slice(i + 1);
}

t.test('input_required: shape of round 1', async (t) => {
  const stack = await stackFor(t);
  const r = await call(stack, ELICIT_TOOL, {}, { id: 'round-1' });
  t.equal(r.status, 200);
  t.equal(r.body.id, 'round-1');
  const result = r.body.result;
  t.equal(result.resultType, 'input_required');
  t.same(Object.keys(result.inputRequests), ['user_name']);
  const ask = result.inputRequests.user_name;
  t.equal(ask.method, 'elicitation/create');
  t.equal(ask.params.message, 'What is your name?');
  t.same(ask.params.requestedSchema, { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
  t.notOk('_meta' in ask.params, 'no _meta in the input request params');
  t.type(result.requestState, 'string');
  t.ok(result.requestState.length > 0);
  t.same(result._meta, { 'io.modelcontextprotocol/serverInfo': SERVER_INFO });
});

t.test('retry with inputResponses and requestState completes', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const r2 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: accept({ name: 'Alice' }) }, { id: 'round-2' });
  t.equal(r2.status, 200);
  t.equal(r2.body.id, 'round-2');
  t.equal(r2.body.result.resultType, 'complete');
  t.same(r2.body.result.content, [{ type: 'text', text: 'Hello, Alice!' }]);
  t.notOk('requestState' in r2.body.result);
});

t.test('tampered requestState → -32602 with HTTP 400; the genuine state still works afterwards', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const state: string = r1.body.result.requestState;
  const answers = { user_name: accept({ name: 'Alice' }) };

  const appended = await retry(stack, ELICIT_TOOL, `${state}-TAMPERED`, answers, { id: 'tamper-1' });
  t.equal(appended.status, 400);
  t.equal(appended.body.id, 'tamper-1');
  t.equal(appended.body.error.code, -32602);
  t.notOk(appended.body.result);

  // A changed payload (e.g. another hold id) with the old signature: the gateway's HMAC no longer matches.
  const flipped = flipPayloadChar(state);
  t.not(flipped, state);
  const changed = await retry(stack, ELICIT_TOOL, flipped, answers, { id: 'tamper-2' });
  t.equal(changed.status, 400);
  t.equal(changed.body.id, 'tamper-2');
  t.equal(changed.body.error.code, -32602);

  const garbage = await retry(stack, ELICIT_TOOL, 'not-a-state', answers);
  t.equal(garbage.status, 400);
  t.equal(garbage.body.error.code, -32602);

  const good = await retry(stack, ELICIT_TOOL, state, answers);
  t.same(good.body.result?.content, [{ type: 'text', text: 'Hello, Alice!' }], 'tampered retries did not consume the round');
});

t.test('requestState replayed after the call completed → error', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const state = r1.body.result.requestState;
  const answers = { user_name: accept({ name: 'Alice' }) };
  const done = await retry(stack, ELICIT_TOOL, state, answers);
  t.equal(done.body.result?.resultType, 'complete');
  const replay = await retry(stack, ELICIT_TOOL, state, answers, { id: 'replay' });
  t.equal(replay.status, 400);
  t.equal(replay.body.id, 'replay');
  t.equal(replay.body.error.code, -32602);
});

t.test('requestState bound to the request: another tool name → error', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const other = await retry(stack, 'test_input_required_result_tampered_state', r1.body.result.requestState, {
    confirm: accept({ ok: true }),
  });
  t.equal(other.status, 400);
  t.equal(other.body.error.code, -32602);
});

t.test('requestState bound to the upstream: a state minted on one endpoint is refused on another', async (t) => {
  const a = await startLegacyFixture();
  t.teardown(() => a.close());
  const b = await startLegacyFixture();
  t.teardown(() => b.close());
  const upstreams = [
    { name: 'a', path: '/a', url: a.url },
    { name: 'b', path: '/b', url: b.url },
  ];
  const base = (await startGateway({ upstreams }, { t })).origin;
  const params = { name: ELICIT_TOOL, arguments: {} };
  const r1 = await post(`${base}/a`, 'tools/call', params, { capabilities: ELICIT });
  t.equal(r1.body.result?.resultType, 'input_required');
  const cross = await post(
    `${base}/b`,
    'tools/call',
    { ...params, requestState: r1.body.result.requestState, inputResponses: { user_name: accept({ name: 'Cross' }) } },
    { capabilities: ELICIT },
  );
  t.equal(cross.status, 400);
  t.equal(cross.body.error?.code, -32602);
});

t.test('requestState from a different principal → error; the owner can still continue', async (t) => {
  const stack = await stackFor(t);
  const alice = { authorization: 'Bearer alice-token' };
  const r1 = await call(stack, ELICIT_TOOL, {}, { headers: alice });
  t.equal(r1.body.result?.resultType, 'input_required');
  const state = r1.body.result.requestState;
  const answers = { user_name: accept({ name: 'Alice' }) };

  const mallory = await retry(stack, ELICIT_TOOL, state, answers, { headers: { authorization: 'Bearer mallory-token' } });
  t.equal(mallory.status, 400);
  t.equal(mallory.body.error.code, -32602);
  const anonymous = await retry(stack, ELICIT_TOOL, state, answers);
  t.equal(anonymous.status, 400);
  t.equal(anonymous.body.error.code, -32602);

  const owner = await retry(stack, ELICIT_TOOL, state, answers, { headers: alice });
  t.same(owner.body.result?.content, [{ type: 'text', text: 'Hello, Alice!' }]);
});

t.test('multi-round: a new requestState each round; an older round cannot be replayed', async (t) => {
  const stack = await stackFor(t);
  const tool = 'test_input_required_result_multi_round';
  const r1 = await call(stack, tool);
  t.same(Object.keys(r1.body.result.inputRequests), ['step1']);
  const s1 = r1.body.result.requestState;

  const r2 = await retry(stack, tool, s1, { step1: accept({ name: 'Ada' }) });
  t.equal(r2.body.result.resultType, 'input_required');
  t.same(Object.keys(r2.body.result.inputRequests), ['step2']);
  t.match(r2.body.result.inputRequests.step2.params.message, /favorite color/);
  const s2 = r2.body.result.requestState;
  t.type(s2, 'string');
  t.not(s2, s1, 'round 2 has a new requestState');

  const stale = await retry(stack, tool, s1, { step1: accept({ name: 'Eve' }) });
  t.equal(stale.status, 400);
  t.equal(stale.body.error.code, -32602, 'round 1 state is spent');

  // Round 3 sends only the new answer.
  const r3 = await retry(stack, tool, s2, { step2: accept({ color: 'blue' }) });
  t.equal(r3.body.result.resultType, 'complete');
  t.same(r3.body.result.content, [{ type: 'text', text: 'Multi-round complete for Ada who likes blue' }]);
});

t.test('undeclared capability: test_missing_capability with {} → 400, -32021, requiredCapabilities.sampling', async (t) => {
  const stack = await stackFor(t);
  const r = await post(stack.url, 'tools/call', { name: 'test_missing_capability', arguments: {} }, { capabilities: {}, id: 'mc' });
  t.equal(r.status, 400);
  t.equal(r.body.id, 'mc');
  t.equal(r.body.error.code, -32021);
  t.same(r.body.error.data.requiredCapabilities, { sampling: {} });
  t.notOk(Array.isArray(r.body.error.data.requiredCapabilities));
});

t.test('declared sampling: test_missing_capability asks for sampling instead', async (t) => {
  const stack = await stackFor(t);
  const tool = 'test_missing_capability';
  const r1 = await post(stack.url, 'tools/call', { name: tool, arguments: {} }, { capabilities: { sampling: {} } });
  t.equal(r1.body.result.resultType, 'input_required');
  t.same(Object.keys(r1.body.result.inputRequests), ['capability_probe']);
  t.equal(r1.body.result.inputRequests.capability_probe.method, 'sampling/createMessage');
  const r2 = await post(
    stack.url,
    'tools/call',
    {
      name: tool,
      arguments: {},
      requestState: r1.body.result.requestState,
      inputResponses: { capability_probe: { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'test-model' } },
    },
    { capabilities: { sampling: {} } },
  );
  t.same(r2.body.result?.content, [{ type: 'text', text: 'Success: sampled' }]);
});

t.test('elicitation tool without the elicitation capability: no round; the tool fails as it would with such a client directly', async (t) => {
  const stack = await stackFor(t);
  for (const capabilities of [{}, { sampling: {} }]) {
    const r = await post(stack.url, 'tools/call', { name: ELICIT_TOOL, arguments: {} }, { capabilities, id: 'no-elicit' });
    t.equal(r.body.id, 'no-elicit');
    t.notOk(r.body.result, `${JSON.stringify(capabilities)}: no input_required round`);
    // The fixture sends the request whatever its session declared; it is answered as a client without elicitation
    // answers (method not found), and the tool's own failure with that code is what the client gets.
    t.equal(r.body.error?.code, -32601, 'the upstream’s own error, not a -32021 of the gateway’s');
    t.equal(r.status, 404, 'as a modern method-not-found');
  }
});

t.test('prompts/get MRTR', async (t) => {
  const stack = await stackFor(t);
  const name = 'test_input_required_result_prompt';
  const r1 = await post(stack.url, 'prompts/get', { name }, { capabilities: ELICIT });
  t.equal(r1.status, 200);
  t.equal(r1.body.result.resultType, 'input_required');
  t.same(Object.keys(r1.body.result.inputRequests), ['user_context']);
  t.equal(r1.body.result.inputRequests.user_context.method, 'elicitation/create');
  const r2 = await post(
    stack.url,
    'prompts/get',
    { name, requestState: r1.body.result.requestState, inputResponses: { user_context: accept({ context: 'billing' }) } },
    { capabilities: ELICIT },
  );
  t.equal(r2.body.result.resultType, 'complete');
  t.same(r2.body.result.messages, [{ role: 'user', content: { type: 'text', text: 'Prompt with context: billing' } }]);
});

t.test('a retry without the answer re-asks with the same key; the new state then completes', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const s1 = r1.body.result.requestState;
  const r2 = await retry(stack, ELICIT_TOOL, s1, {});
  t.equal(r2.status, 200);
  t.equal(r2.body.result.resultType, 'input_required');
  t.same(Object.keys(r2.body.result.inputRequests), ['user_name']);
  t.same(r2.body.result.inputRequests.user_name, r1.body.result.inputRequests.user_name, 'the same question');
  const s2 = r2.body.result.requestState;
  t.not(s2, s1);
  const r3 = await retry(stack, ELICIT_TOOL, s2, { user_name: accept({ name: 'Bo' }) });
  t.same(r3.body.result?.content, [{ type: 'text', text: 'Hello, Bo!' }]);
});

t.test('a key never asked: refused -32602 before anything goes upstream; the round stays usable', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const r2 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { wrong_key: accept({ name: 'X' }) });
  t.equal(r2.status, 400);
  t.equal(r2.body.error?.code, -32602);
  t.match(r2.body.error?.message, /inputResponses key "wrong_key" was not asked/);
  // The same state carries the right answer to the end.
  const r3 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: accept({ name: 'Ada' }) });
  t.equal(r3.status, 200);
  t.notOk(r3.body.result?.resultType === 'input_required', 'the call completed');
});

t.test('an invalid response: refused -32602 (the shape, then the content against the requested schema); the round stays usable', async (t) => {
  const stack = await stackFor(t);
  const r1 = await call(stack, ELICIT_TOOL);
  const r2 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: 12345 });
  t.equal(r2.status, 400);
  t.equal(r2.body.error?.code, -32602);
  t.match(r2.body.error?.message, /the answer to input request "user_name" is invalid/);

  // Well-formed ElicitResult whose content fails the requested schema: refused too, never sent upstream.
  const r3 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: accept({ name: 12345 }) });
  t.equal(r3.status, 400);
  t.match(r3.body.error?.message, /content\.name: expected a string/);

  // Fresh call (no state) carrying an invalid answer: asked, not answered with it.
  const fresh = await call(stack, ELICIT_TOOL, { inputResponses: { user_name: 12345 } });
  t.equal(fresh.body.result?.resultType, 'input_required');
  t.same(Object.keys(fresh.body.result.inputRequests), ['user_name']);

  // The refused round goes on with the same state.
  const r4 = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: accept({ name: 'Ada' }) });
  t.equal(r4.status, 200);
  t.notOk(r4.body.result?.resultType === 'input_required', 'the call completed');
});

t.test('a fresh call that already carries the answer completes in one round', async (t) => {
  const stack = await stackFor(t);
  const r = await call(stack, ELICIT_TOOL, {
    inputResponses: { user_name: accept({ name: 'Alice' }), unknown_extra_key: { foo: 1 } },
  });
  t.equal(r.body.result?.resultType, 'complete');
  t.same(r.body.result.content, [{ type: 'text', text: 'Hello, Alice!' }]);
});

t.test('progress is relayed as SSE before the result, with the client token', async (t) => {
  const stack = await stackFor(t);
  const r = await post(
    stack.url,
    'tools/call',
    {
      name: 'test_tool_with_progress',
      arguments: {},
      _meta: envelope({}, { progressToken: 'client-token-7' }),
    },
    { id: 'prog' },
  );
  t.equal(r.status, 200);
  t.match(r.contentType, /^text\/event-stream/);
  t.same(
    r.messages.map((m) => [m.method, m.params.progressToken, m.params.progress]),
    [
      ['notifications/progress', 'client-token-7', 0],
      ['notifications/progress', 'client-token-7', 50],
      ['notifications/progress', 'client-token-7', 100],
    ],
  );
  t.equal(r.body.id, 'prog', 'the result comes last');
  t.same(r.body.result.content, [{ type: 'text', text: 'client-token-7' }]);
});

t.test('a streaming call that needs input: notifications then input_required on the stream, never a request frame', async (t) => {
  const stack = await stackFor(t);
  const tool = 'test_streaming_elicitation';
  const r1 = await post(stack.url, 'tools/call', { name: tool, arguments: {}, _meta: envelope(ELICIT, { progressToken: 'stream-1' }) }, { id: 'st' });
  t.equal(r1.status, 200);
  t.match(r1.contentType, /^text\/event-stream/);
  t.same(
    r1.messages.map((m) => [m.method, m.params?.progressToken, 'id' in m]),
    [['notifications/progress', 'stream-1', false]],
  );
  t.equal(r1.body.id, 'st');
  t.equal(r1.body.result.resultType, 'input_required');
  t.same(Object.keys(r1.body.result.inputRequests), ['streaming_confirm']);
  const r2 = await post(
    stack.url,
    'tools/call',
    { name: tool, arguments: {}, requestState: r1.body.result.requestState, inputResponses: { streaming_confirm: accept({ ok: true }) } },
    { capabilities: ELICIT },
  );
  t.same(r2.body.result?.content, [{ type: 'text', text: 'Streaming complete (accept)' }]);
});

t.test('log messages: dropped without logLevel, relayed with logLevel debug, filtered by a higher level', async (t) => {
  const stack = await stackFor(t);
  const tool = 'test_logging_tool';
  const silent = await post(stack.url, 'tools/call', { name: tool, arguments: {} });
  t.same(silent.body.result.content, [{ type: 'text', text: 'Logging evaluated' }]);
  t.same(silent.messages, [], 'no log without logLevel');

  const debug = await post(stack.url, 'tools/call', {
    name: tool,
    arguments: {},
    _meta: envelope({}, { 'io.modelcontextprotocol/logLevel': 'debug' }),
  });
  t.match(debug.contentType, /^text\/event-stream/);
  t.same(
    debug.messages.map((m) => [m.method, m.params.level, m.params.data]),
    [['notifications/message', 'info', 'Diagnostic trace logging activated']],
  );
  t.same(debug.body.result.content, [{ type: 'text', text: 'Logging evaluated' }]);

  const error = await post(stack.url, 'tools/call', {
    name: tool,
    arguments: {},
    _meta: envelope({}, { 'io.modelcontextprotocol/logLevel': 'error' }),
  });
  t.same(error.messages, [], 'info is below error');
  t.same(error.body.result.content, [{ type: 'text', text: 'Logging evaluated' }]);
});

t.test('a held call expires: the gateway cancels it upstream, and a later retry fails', async (t) => {
  // The relay lets the test await the gateway's own expiry action (notifications/cancelled upstream) instead of
  // guessing a delay.
  const relay = await startRelay(t);
  const stack = await stackFor(t, { input: { holdMs: 50 } }, { url: relay.url });
  relay.setTarget(stack.fixture.url);
  const r1 = await call(stack, ELICIT_TOOL);
  t.equal(r1.body.result.resultType, 'input_required');
  const upstreamCall = relay.seen.find((s) => s.rpcMethod === 'tools/call');
  t.ok(upstreamCall, 'the call went upstream');
  const cancelled = await within(
    relay.waitFor((s) => s.rpcMethod === 'notifications/cancelled' && s.body?.params?.requestId === upstreamCall?.body?.id),
    5_000,
  );
  t.ok(cancelled, 'the held upstream call was cancelled when the hold expired');

  const late = await retry(stack, ELICIT_TOOL, r1.body.result.requestState, { user_name: accept({ name: 'Late' }) }, { id: 'late' });
  t.equal(late.status, 400);
  t.equal(late.body.id, 'late');
  t.equal(late.body.error.code, -32602);

  // A new call on the same (pooled) upstream session still works end to end.
  const again = await call(stack, ELICIT_TOOL, { inputResponses: { user_name: accept({ name: 'Fresh' }) } });
  t.same(again.body.result?.content, [{ type: 'text', text: 'Hello, Fresh!' }]);
});
