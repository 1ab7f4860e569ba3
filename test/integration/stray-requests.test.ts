/**
 * Server→client requests that a legacy server sends on the session's GET stream instead of the call's own
 * stream (what SDK servers do for `server.elicitInput()` with no related request). The bundled demo upstream's
 * book_table tool is written that way.
 */
import t, { type Test } from 'tap';
import { startDemoUpstream } from '../../src/demo/demo-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';

const caps = { elicitation: { form: {} } };

async function stack(t: Test) {
  const demo = await startDemoUpstream();
  const gateway = await startGateway({ upstreams: [{ name: 'demo', url: demo.url }] });
  t.teardown(async () => {
    await gateway.close();
    await demo.close();
  });
  return gateway.url;
}

t.test('a request on the GET stream is tied to the one call running on the session', async (t) => {
  const url = await stack(t);
  for (const guests of [2, 3]) {
    // Fresh calls one after the other: each is the session's only call when its question arrives.
    const first = await post(url, 'tools/call', { name: 'book_table', arguments: { guests } }, { capabilities: caps });
    t.equal(first.body.result.resultType, 'input_required', `round 1 for ${guests}`);
    const entries = Object.entries(first.body.result.inputRequests as Record<string, any>);
    t.equal(entries.length, 1);
    const [key, request] = entries[0] as [string, any];
    t.equal(request.method, 'elicitation/create');
    t.equal(request.params.message, `Book a table for ${guests}?`);
    const done = await post(
      url,
      'tools/call',
      {
        name: 'book_table',
        arguments: { guests },
        inputResponses: { [key]: { action: 'accept', content: { confirm: true } } },
        requestState: first.body.result.requestState,
      },
      { capabilities: caps },
    );
    t.equal(done.body.result.resultType, 'complete');
    t.equal(done.body.result.content[0].text, `Booked a table for ${guests}.`);
  }
});
