/**
 * `subscriptions/listen` hears the caller's own upstream session. A legacy server that keeps one server
 * instance per session (the SDK's McpServer, as its examples run it) notifies only the session whose call made
 * a change; the listen must therefore ride on the pooled session the caller's calls use, not on a session of its
 * own. The upstream here is such a server (SDK 1.32.2, one McpServer per session), started on port 0.
 * Resource subscriptions on that shared session are counted: one subscribe for several listens, one unsubscribe
 * when the last of them ends.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { serveSdkSessions, nextPushed } from '../helpers/sdk-session-server.js';
import { openListen } from '../helpers/sse-reader.js';

const SUB_ID = 'io.modelcontextprotocol/subscriptionId';

interface PerSessionServer {
  url: string;
  subscribes: string[];
  /** Resolves with the URI of the next resources/unsubscribe. */
  nextUnsubscribe(): Promise<string>;
  close(): Promise<void>;
}

/** A legacy server with one McpServer per session: a tool it adds is announced to that session only. */
async function startPerSessionServer(): Promise<PerSessionServer> {
  const subscribes: string[] = [];
  const unsubscribeWaiters: Array<(uri: string) => void> = [];
  const newServer = () => {
    const server = new McpServer({ name: 'per-session', version: '1.0.0' }, { capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } });
    let added = 0;
    server.registerTool('add_tool', { description: 'Adds a tool to this session (its server announces the change)' }, async () => {
      server.registerTool(`added_${++added}`, { description: 'added at run time' }, async () => ({ content: [] }));
      return { content: [{ type: 'text', text: 'added' }] };
    });
    server.registerResource('watched', 'test://watched', {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'x' }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, async (r) => {
      subscribes.push(r.params.uri);
      return {};
    });
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (r) => {
      unsubscribeWaiters.shift()?.(r.params.uri);
      return {};
    });
    return server;
  };
  const served = await serveSdkSessions(newServer, 'bare-status');
  return {
    url: served.url,
    subscribes,
    nextUnsubscribe: () => nextPushed(unsubscribeWaiters, 'no resources/unsubscribe arrived'),
    close: served.close,
  };
}

async function stack(t: { teardown(fn: () => unknown): void }): Promise<{ upstream: PerSessionServer; url: string }> {
  const upstream = await startPerSessionServer();
  // The clients here are anonymous: they share one upstream session only because the operator opted in (by default
  // each anonymous request gets a session of its own, whose changes no other request's listen hears).
  const gateway = await startGateway({ upstreams: [{ name: 'per-session', path: '/mcp', url: upstream.url, sessions: { anonymousScope: 'shared' } }] });
  t.teardown(async () => {
    await gateway.close();
    await upstream.close();
  });
  return { upstream, url: gateway.url };
}

t.test('a tools/list_changed caused by the caller’s own call reaches its listen stream', async (t) => {
  const { url } = await stack(t);
  const l = await openListen(t, url, 'own', { toolsListChanged: true });
  t.equal(l.response.status, 200);
  const ack = await l.stream.next();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  t.same(ack.params.notifications, { toolsListChanged: true });

  const r = await post(url, 'tools/call', { name: 'add_tool', arguments: {} });
  t.equal(r.body.result?.content?.[0]?.text, 'added');
  const changed = await l.stream.next();
  t.equal(changed?.method, 'notifications/tools/list_changed', 'the change made on the caller’s session is heard');
  t.equal(changed?.params?._meta?.[SUB_ID], 'own');

  const list = await post(url, 'tools/list', {});
  t.ok(
    list.body.result.tools.some((tool: { name: string }) => tool.name === 'added_1'),
    'and the caller’s tools/list shows it',
  );
});

t.test('resource subscriptions on the shared session: one subscribe, one unsubscribe after the last listen', async (t) => {
  const { upstream, url } = await stack(t);
  const a = await openListen(t, url, 'a', { resourceSubscriptions: ['test://watched'] });
  t.same((await a.stream.next()).params.notifications, { resourceSubscriptions: ['test://watched'] });
  const b = await openListen(t, url, 'b', { resourceSubscriptions: ['test://watched'] });
  t.same((await b.stream.next()).params.notifications, { resourceSubscriptions: ['test://watched'] });
  t.same(upstream.subscribes, ['test://watched'], 'the second listen shares the first one’s subscription');

  const unsubscribed = upstream.nextUnsubscribe();
  a.abort();
  await a.stream.cancel();
  b.abort();
  await b.stream.cancel();
  t.equal(await unsubscribed, 'test://watched', 'unsubscribed once both listens ended');
  t.same(upstream.subscribes, ['test://watched'], 'never subscribed twice');

  // Undone, not merely forgotten: a later listen subscribes afresh.
  const c = await openListen(t, url, 'c', { resourceSubscriptions: ['test://watched'] });
  t.same((await c.stream.next()).params.notifications, { resourceSubscriptions: ['test://watched'] });
  t.same(upstream.subscribes, ['test://watched', 'test://watched']);
});
