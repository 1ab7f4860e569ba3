/**
 * `subscriptions/listen` in front of a legacy upstream: the acknowledgement first, then only the notifications
 * the filter opted into, each tagged with the subscription id; the stream is read incrementally, and every
 * expectation is ordered against a trigger the test itself sends (no timing assumptions).
 */
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { post } from '../helpers/modern.js';
import { startRelay, within } from '../helpers/relay.js';
import { openListen } from '../helpers/sse-reader.js';

const SUB_ID = 'io.modelcontextprotocol/subscriptionId';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stackFor(t: Teardown, upstream: Record<string, unknown> = {}): Promise<Stack> {
  const stack = await startStack({}, upstream);
  t.teardown(() => stack.close());
  return stack;
}

/** Opens a listen stream declaring `capabilities` (none by default). */
function listen(t: Teardown, url: string, id: string | number, notifications: Record<string, unknown>, capabilities: Record<string, unknown> = {}) {
  return openListen(t, url, id, notifications, { capabilities });
}

/** Calls one of the fixture's trigger tools on another connection. */
async function trigger(url: string, tool: string): Promise<void> {
  const r = await post(url, 'tools/call', { name: tool, arguments: {} });
  if (r.status !== 200 || r.body.result?.isError) throw new Error(`${tool} failed: ${JSON.stringify(r.body)}`);
}

t.test('toolsListChanged: acknowledgement first, then tools/list_changed tagged with the subscription id', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 'sub-tools', { toolsListChanged: true });
  t.equal(l.response.status, 200);
  t.match(l.response.headers.get('content-type') ?? '', /^text\/event-stream/);

  const ack = await l.stream.next();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  t.same(ack.params.notifications, { toolsListChanged: true });
  t.equal(ack.params._meta[SUB_ID], 'sub-tools', 'subscriptionId = the listen request id');

  await trigger(stack.url, 'test_trigger_tool_change');
  const changed = await l.stream.next();
  t.equal(changed.jsonrpc, '2.0');
  t.equal(changed.method, 'notifications/tools/list_changed');
  t.equal(changed.params._meta[SUB_ID], 'sub-tools');
  t.notOk('id' in changed, 'a notification, not a request');

  // The stream stays open for later changes.
  await trigger(stack.url, 'test_trigger_tool_change');
  const again = await l.stream.next();
  t.equal(again.method, 'notifications/tools/list_changed');
});

t.test('a numeric listen id is the subscription id, unchanged', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 7, { promptsListChanged: true });
  const ack = await l.stream.next();
  t.equal(ack.params._meta[SUB_ID], 7);
  await trigger(stack.url, 'test_trigger_prompt_change');
  t.equal((await l.stream.next()).params._meta[SUB_ID], 7);
});

t.test('a promptsListChanged-only stream does not get tools changes', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 'sub-prompts', { promptsListChanged: true });
  const ack = await l.stream.next();
  t.same(ack.params.notifications, { promptsListChanged: true });

  // The upstream sends the tools change first on the same session stream; had it been relayed, it would
  // arrive before the prompts change.
  await trigger(stack.url, 'test_trigger_tool_change');
  await trigger(stack.url, 'test_trigger_prompt_change');
  const next = await l.stream.next();
  t.equal(next.method, 'notifications/prompts/list_changed');
  t.equal(next.params._meta[SUB_ID], 'sub-prompts');
});

t.test('two streams with different filters each get only their own kind', async (t) => {
  const stack = await stackFor(t);
  const tools = await listen(t, stack.url, 'a', { toolsListChanged: true });
  const prompts = await listen(t, stack.url, 'b', { promptsListChanged: true });
  await tools.stream.next();
  await prompts.stream.next();
  await trigger(stack.url, 'test_trigger_prompt_change');
  await trigger(stack.url, 'test_trigger_tool_change');
  const toTools = await tools.stream.next();
  const toPrompts = await prompts.stream.next();
  t.same([toTools.method, toTools.params._meta[SUB_ID]], ['notifications/tools/list_changed', 'a']);
  t.same([toPrompts.method, toPrompts.params._meta[SUB_ID]], ['notifications/prompts/list_changed', 'b']);
});

t.test('resourceSubscriptions: resources/updated for that uri only; list_changed is not opted into', async (t) => {
  const stack = await stackFor(t);
  const uri = 'test://watched-resource';
  const l = await listen(t, stack.url, 'sub-res', { resourceSubscriptions: [uri] });
  const ack = await l.stream.next();
  t.same(ack.params.notifications, { resourceSubscriptions: [uri] });

  // Each trigger sends resources/updated (subscribed sessions) and then resources/list_changed (every session).
  await trigger(stack.url, 'test_trigger_resource_update');
  await trigger(stack.url, 'test_trigger_resource_update');
  const first = await l.stream.next();
  const second = await l.stream.next();
  for (const m of [first, second]) {
    t.equal(m.method, 'notifications/resources/updated');
    t.equal(m.params.uri, uri);
    t.equal(m.params._meta[SUB_ID], 'sub-res');
  }
});

t.test('resourcesListChanged: resources/list_changed is delivered', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 'sub-rl', { resourcesListChanged: true });
  t.same((await l.stream.next()).params.notifications, { resourcesListChanged: true });
  await trigger(stack.url, 'test_trigger_resource_update');
  const m = await l.stream.next();
  t.equal(m.method, 'notifications/resources/list_changed');
  t.equal(m.params._meta[SUB_ID], 'sub-rl');
});

t.test('an empty or unknown filter is acknowledged as empty', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 'sub-empty', { somethingElse: true });
  t.equal(l.response.status, 200);
  const ack = await l.stream.next();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  t.same(ack.params.notifications, {});
  t.equal(ack.params._meta[SUB_ID], 'sub-empty');
});

t.test('taskIds without the tasks extension → -32021', async (t) => {
  const stack = await stackFor(t);
  const l = await listen(t, stack.url, 'sub-tasks', { taskIds: ['task-1'] });
  // Whatever the framing, the only message is the listen request's error.
  const m = await l.stream.next();
  t.equal(m.id, 'sub-tasks');
  t.equal(m.error?.code, -32021);
  t.same(m.error?.data?.requiredCapabilities, { extensions: { 'io.modelcontextprotocol/tasks': {} } });
  t.equal(await l.stream.next(), undefined, 'nothing follows');
});

t.test('taskIds without the tasks extension is refused with HTTP 400 (as every -32021)', async (t) => {
  const stack = await stackFor(t);
  const r = await post(stack.url, 'subscriptions/listen', { notifications: { taskIds: ['task-1'] } }, { id: 'sub-tasks' });
  t.equal(r.status, 400);
  t.match(r.contentType, /^application\/json/);
  t.equal(r.body.error.code, -32021);
});

t.test('a listen has a session of its own, never a call session; aborting it undoes its resource subscription there', async (t) => {
  const relay = await startRelay(t);
  // Era pinned: the relay counts sessions and DELETEs, and the era probe would add one of each.
  const stack = await stackFor(t, { url: relay.url, era: 'legacy' });
  relay.setTarget(stack.fixture.url);

  const authorization = 'Bearer one-caller';
  const headers = { authorization };
  const l = await openListen(t, stack.url, 'sub-abort', { resourceSubscriptions: ['test://watched-resource'] }, { authorization });
  t.same((await l.stream.next()).params.notifications, { resourceSubscriptions: ['test://watched-resource'] });
  const subscribe = relay.seen.find((s) => s.rpcMethod === 'resources/subscribe');
  t.ok(subscribe?.sessionId, 'subscribed on an upstream session');
  // The caller's ordinary requests check out call sessions: a listen's session is held by no call.
  await post(stack.url, 'tools/list', {}, { headers });
  t.not(relay.seen.findLast((s) => s.rpcMethod === 'tools/list')?.sessionId, subscribe?.sessionId, 'calls on another session');

  l.abort();
  // Guard only: a missing unsubscribe fails in 5 s rather than at the suite timeout.
  const unsubscribe = await within(
    relay.waitFor((s) => s.rpcMethod === 'resources/unsubscribe'),
    5_000,
  );
  t.equal(unsubscribe?.sessionId, subscribe?.sessionId, 'the subscription was undone on the listen session');

  // A later listen of the same caller takes the same listen session again (kept until idle), and calls keep working.
  const again = await openListen(t, stack.url, 'sub-again', { resourceSubscriptions: ['test://watched-resource'] }, { authorization });
  await again.stream.next();
  t.equal(relay.seen.findLast((s) => s.rpcMethod === 'resources/subscribe')?.sessionId, subscribe?.sessionId, 'the listen session is reused');
  again.abort();
  const r = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Ok' } }, { headers });
  t.same(r.body.result?.content, [{ type: 'text', text: 'Hello, Ok!' }]);
});
