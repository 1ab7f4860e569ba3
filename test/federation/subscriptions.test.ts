import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { connectLegacy } from '../helpers/modern-stack.js';

// A dual-era member whose 2026-07-28 side offers no resource subscriptions (`resources: {}`, as the conformance
// reference everything-server's) but whose 2025-11-25 side does: a 2025-11-25 client of the federated path subscribes
// on that side, as a single-upstream endpoint would pass it through to it, and gets the member's updates.
t.test("a 2025-11-25 client subscribes to a dual-era member's resource that only its 2025-11-25 side offers", async (t) => {
  const dual = await startModernFixture({ mode: 'dual', dualRouting: 'meta' });
  t.teardown(() => dual.close());
  const legacy = await startLegacyFixture();
  t.teardown(() => legacy.close());
  const modern = await startModernFixture({ mode: 'modern' });
  t.teardown(() => modern.close());
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'everything', url: dual.url, path: '/mcp' },
        { name: 'a', url: legacy.url, path: '/mcp', expose: { namespace: 'a' } },
        { name: 'b', url: modern.url, path: '/mcp', expose: { namespace: 'b' } },
      ],
    },
    { t },
  );
  const c = await connectLegacy(gw.url);
  t.teardown(() => c.client.close());
  await c.getStreamOpen;
  const updated = new Promise<string>((resolve) => c.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
  t.same(await c.client.subscribeResource({ uri: 'test://watched-resource' }), {}, 'the subscription is granted');
  // The unprefixed tool is the dual member's (the others' are a_… and b_…).
  await c.client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
  const uri = await Promise.race([updated, new Promise((r) => setTimeout(() => r('no update within 5 s'), 5_000))]);
  t.equal(uri, 'test://watched-resource', "the dual member's update reaches the subscriber");
  t.same(await c.client.unsubscribeResource({ uri: 'test://watched-resource' }), {}, 'and it unsubscribes');
});
