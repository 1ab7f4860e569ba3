// /healthz reports liveness and the gauges an operator watches: calls held for input, upstream sessions.
import t from 'tap';
import { startStack } from '../helpers/stack.js';
import { post } from '../helpers/modern.js';

t.test('held calls and sessions are counted, and released when the exchange ends', async (t) => {
  const stack = await startStack();
  t.teardown(() => stack.close());
  const health = async () => (await fetch(new URL('/healthz', stack.url))).json() as Promise<any>;

  const before = await health();
  t.equal(before.status, 'ok');
  t.equal(before.heldCalls, 0);
  t.same(
    before.upstreams.map((u: any) => u.name),
    ['fixture'],
  );

  const caps = { elicitation: {} };
  // One caller with credentials: its calls check out sessions of its own pool (warm ones are opened beside them).
  const headers = { authorization: 'Bearer one-caller' };
  const first = await post(stack.url, 'tools/call', { name: 'test_input_required_result_elicitation', arguments: {} }, { capabilities: caps, headers });
  t.equal(first.body.result.resultType, 'input_required');
  const held = await health();
  t.equal(held.heldCalls, 1, 'the upstream call waits for the retry');
  t.ok(held.upstreams[0].sessions >= 1, 'the held call holds a session');

  const done = await post(
    stack.url,
    'tools/call',
    {
      name: 'test_input_required_result_elicitation',
      arguments: {},
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: first.body.result.requestState,
    },
    { capabilities: caps, headers },
  );
  t.equal(done.body.result.resultType, 'complete');
  t.equal((await health()).heldCalls, 0, 'nothing held once the call answered');

  // Sessions are pooled per principal and declared input kinds: other kinds, another pool; other credentials, another.
  const pooled = (await health()).upstreams[0].sessions;
  await post(stack.url, 'tools/list', {}, { capabilities: caps, headers });
  t.equal((await health()).upstreams[0].sessions, pooled, 'the same credentials and kinds: a pooled session again, none opened');
  await post(stack.url, 'tools/list', {}, { capabilities: {}, headers: { authorization: 'Bearer someone-else' } });
  t.ok((await health()).upstreams[0].sessions > pooled, 'other credentials, sessions of their own');
});
