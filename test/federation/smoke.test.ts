import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { connectLegacy } from '../helpers/modern-stack.js';

t.test('a federated endpoint lists and calls tools of a legacy and a modern member', async (t) => {
  const legacy = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => legacy.close());
  const modern = await startModernFixture({ mode: 'modern', tasks: 'native' });
  t.teardown(() => modern.close());
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'old', url: legacy.url, path: '/mcp', expose: { namespace: 'l' } },
        { name: 'new', url: modern.url, path: '/mcp', expose: { namespace: 'm' } },
      ],
    },
    { t },
  );
  const list = await post(gw.url, 'tools/list');
  const names = ((list.body as any).result.tools as any[]).map((x) => x.name);
  t.ok(
    names.some((n: string) => n.startsWith('l_')),
    `legacy tools prefixed: ${names.join(',')}`,
  );
  t.ok(
    names.some((n: string) => n.startsWith('m_')),
    'modern tools prefixed',
  );
  const echoL = names.find((n: string) => n.startsWith('l_'));
  const callL = await post(gw.url, 'tools/call', { name: echoL, arguments: {} });
  t.ok((callL.body as any).result || (callL.body as any).error, JSON.stringify(callL.body).slice(0, 300));
  const unknown = await post(gw.url, 'tools/call', { name: 'nope', arguments: {} });
  t.same((unknown.body as any).error, { code: -32602, message: 'Unknown tool: nope' });

  const c = await connectLegacy(gw.url);
  t.teardown(() => c.client.close());
  const legacyList = await c.client.listTools();
  t.same(legacyList.tools.map((x) => x.name).sort(), [...names].sort(), 'the 2025-11-25 client lists the same names');
});
