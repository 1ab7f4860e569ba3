// A name no member of a federated path lists goes to the one member shown as it is (no namespace, filter, rename or
// access rule) when every other member has a namespace: it answers it as through an endpoint of its own (the
// conformance everything-server's unlisted test hooks). Any other unlisted name is the gateway's unknown tool.
import t, { type Test } from 'tap';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { serveSdkSessions } from '../helpers/sdk-session-server.js';

/** A 2025-11-25 server that lists one tool and answers any name (a hook it does not list among them). */
function hooksServer(): McpServer {
  const mcp = new McpServer({ name: 'hooks', version: '1.0.0' });
  mcp.registerTool('listed', { description: 'listed' }, async () => ({ content: [{ type: 'text', text: 'listed' }] }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (req) => ({ content: [{ type: 'text', text: `answered ${req.params.name}` }] }));
  return mcp;
}

/**
 * One path over the hooks server shown as it is (`open`) and the legacy fixture (`other`) configured as `other` says;
 * returns the gateway.
 */
async function federate(t: Test, other: Record<string, unknown>) {
  const open = await serveSdkSessions(hooksServer, 'sdk-400-json');
  t.teardown(() => open.close());
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  return startGateway(
    {
      upstreams: [
        { name: 'open', url: open.url, path: '/mcp' },
        { name: 'other', url: fixture.url, path: '/mcp', ...other },
      ],
    },
    { t },
  );
}

t.test('the member shown as it is answers a name nobody lists; a name in a namespace stays unknown', async (t) => {
  const gw = await federate(t, { expose: { namespace: 'a' } });
  const names = ((await post(gw.url, 'tools/list')).body as any).result.tools.map((x: any) => x.name);
  t.ok(names.includes('listed') && !names.includes('hook'), 'the hook is not listed');
  const hook = await post(gw.url, 'tools/call', { name: 'hook', arguments: {} });
  t.same((hook.body as any).result?.content, [{ type: 'text', text: 'answered hook' }], 'the open member answers it');
  const inNamespace = await post(gw.url, 'tools/call', { name: 'a_hook', arguments: {} });
  t.same((inNamespace.body as any).error, { code: -32602, message: 'Unknown tool: a_hook' }, "a name in another member's namespace is unknown");
});

t.test('with a second member without a namespace, nobody answers for the others: an unlisted name is unknown', async (t) => {
  // Unprefixed with an access rule: its denied names must answer as unknown ones, so no name may fall through.
  const gw = await federate(t, { access: [{ when: {}, deny: ['greet'] }] });
  const hook = await post(gw.url, 'tools/call', { name: 'hook', arguments: {} });
  t.same((hook.body as any).error, { code: -32602, message: 'Unknown tool: hook' });
  const denied = await post(gw.url, 'tools/call', { name: 'greet', arguments: {} });
  t.same((denied.body as any).error, { code: -32602, message: 'Unknown tool: greet' }, 'a denied name answers the same');
});
