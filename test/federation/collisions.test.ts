/**
 * Collisions between the members of a federated endpoint (docs/federation.md §Collisions), against real servers on
 * loopback: a name two members both show is refused at start naming both; a reload cannot bring one in (the keys that
 * shape names wait for a restart, and the running names stay); a name a member starts to show after start, which an
 * earlier member already shows, is hidden behind the earlier member's with one warning and one count on /metrics.
 *
 * The configuration-level refusals (two members of one path with one namespace, two renames to one name, each naming
 * both) are test/config/federation.test.ts's: 'two members of one path with one namespace are refused, naming both'
 * and 'two renames of one member to the same name are refused, naming both'; and its 'a reload applies no federation
 * key live' shows planReload's side on parsed configurations alone.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import t from 'tap';
import { z } from 'zod';
import { buildGateway, ConfigError, parseConfig } from '../../src/app.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LogLines } from '../helpers/log-lines.js';
import { post } from '../helpers/modern.js';
import { serveSdkSessions } from '../helpers/sdk-session-server.js';
import { openListen } from '../helpers/sse-reader.js';

/** Both fixtures also list the same conformance prompts: the second member shows none of its own. */
const NO_PROMPTS = { exclude: ['*'] };

t.test('a tool name two members both show is refused at start, naming both upstreams and the name', async (t) => {
  // Both fixtures list `greet` (and the conformance tools): without namespaces their names meet.
  const legacy = await startLegacyFixture({});
  t.teardown(() => legacy.close());
  const modern = await startModernFixture({ mode: 'modern' });
  t.teardown(() => modern.close());
  const config = parseConfig({
    server: { port: 0 },
    upstreams: [
      { name: 'first', url: legacy.url, path: '/mcp', expose: { tools: { include: ['greet', 'test_simple_text'] } } },
      { name: 'second', url: modern.url, path: '/mcp', expose: { tools: { include: ['greet', 'test_header_param'] }, prompts: NO_PROMPTS } },
    ],
  });
  const refused = await buildGateway(config).then(
    (g) => g.close().then(() => undefined),
    (e: unknown) => e,
  );
  t.ok(refused instanceof ConfigError, `a ConfigError: ${String(refused)}`);
  t.strictSame((refused as ConfigError).problems, [
    "upstreams.second: tool greet at /mcp is also upstreams.first's; give one a namespace or a rename (expose)",
  ]);

  // The same two members, one renaming its greet: no collision, the gateway starts and shows both.
  const renamed = await startGateway(
    {
      upstreams: [
        { name: 'first', url: legacy.url, path: '/mcp', expose: { tools: { include: ['greet', 'test_simple_text'] } } },
        {
          name: 'second',
          url: modern.url,
          path: '/mcp',
          expose: { tools: { include: ['greet', 'test_header_param'], rename: { greet: 'greet2' } }, prompts: NO_PROMPTS },
        },
      ],
    },
    { t },
  );
  const list = await post(renamed.url, 'tools/list');
  t.strictSame(
    (list.body.result.tools as Array<{ name: string }>).map((x) => x.name),
    ['test_simple_text', 'greet', 'greet2', 'test_header_param'],
    'both greets, each under its own name, in configuration order',
  );
});

t.test('a reload that would make two members collide applies nothing of it: it waits for a restart, the names stay', async (t) => {
  const legacy = await startLegacyFixture({});
  t.teardown(() => legacy.close());
  const modern = await startModernFixture({ mode: 'modern' });
  t.teardown(() => modern.close());
  const file = (second: Record<string, unknown>) => ({
    server: { port: 0 },
    upstreams: [
      { name: 'first', url: legacy.url, path: '/mcp', expose: { namespace: 'a', tools: { include: ['greet'] } } },
      { name: 'second', url: modern.url, path: '/mcp', expose: { tools: { include: ['greet'] }, prompts: NO_PROMPTS, ...second } },
    ],
  });
  const gw = await startGateway(file({ namespace: 'b' }), { t });
  const names = async () => ((await post(gw.url, 'tools/list')).body.result.tools as Array<{ name: string }>).map((x) => x.name);
  t.strictSame(await names(), ['a_greet', 'b_greet']);

  // The namespace of the second member dropped: its greet would be shown as `greet`, and with the first's namespace
  // dropped as well, both would show `greet`.
  const [first, second] = file({}).upstreams as unknown as [Record<string, any>, Record<string, any>];
  const colliding = parseConfig({ ...file({}), upstreams: [{ ...first, expose: { tools: first.expose.tools } }, second] });
  const outcome = gw.gateway.reload(colliding);
  t.strictSame(outcome.applied, [], 'nothing applied live');
  t.strictSame(outcome.needsRestart.sort(), ['upstreams.first.expose.namespace', 'upstreams.second.expose.namespace'], 'named as waiting for a restart');
  t.equal(gw.gateway.config.upstreams[0]?.expose.namespace, 'a', 'the running configuration keeps its namespaces');
  t.equal(gw.gateway.config.upstreams[1]?.expose.namespace, 'b');
  t.strictSame(await names(), ['a_greet', 'b_greet'], 'the names shown stay as they were');
  const call = await post(gw.url, 'tools/call', { name: 'b_greet', arguments: { name: 'Ada' } });
  t.match(JSON.stringify(call.body.result?.content), /Ada/, 'and each still reaches its member');

  // And that configuration, started, is refused naming both (the restart the reload pointed to).
  const refused = await buildGateway(colliding).then(
    (g) => g.close().then(() => undefined),
    (e: unknown) => e,
  );
  t.ok(refused instanceof ConfigError);
  t.strictSame((refused as ConfigError).problems, [
    "upstreams.second: tool greet at /mcp is also upstreams.first's; give one a namespace or a rename (expose)",
  ]);
});

t.test("a name a member starts to show after start, already an earlier member's, is hidden with one warning and one count", async (t) => {
  const legacy = await startLegacyFixture({});
  t.teardown(() => legacy.close());
  // An SDK 1.32.2 server (one McpServer per session) that registers `greet` on every session when told to.
  const servers = new Set<McpServer>();
  let late = false;
  const addGreet = (s: McpServer) =>
    s.registerTool('greet', { description: 'the late greet', inputSchema: { name: z.string() } }, async ({ name }) => ({
      content: [{ type: 'text', text: `late greet for ${name}` }],
    }));
  const member = await serveSdkSessions(() => {
    const s = new McpServer({ name: 'late-member', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    s.registerTool('own_tool', { description: 'always there' }, async () => ({ content: [{ type: 'text', text: 'own' }] }));
    if (late) addGreet(s);
    servers.add(s);
    return s;
  }, 'sdk-400-json');
  t.teardown(() => member.close());

  const log = new LogLines();
  const gw = await startGateway(
    {
      server: { metrics: { enabled: true } },
      upstreams: [
        { name: 'early', url: legacy.url, path: '/mcp', expose: { tools: { include: ['greet'] } } },
        { name: 'late', url: member.url, path: '/mcp' },
      ],
    },
    { t, deps: { logger: { level: 'info', stream: log.stream } as never } },
  );
  const names = async () => ((await post(gw.url, 'tools/list')).body.result.tools as Array<{ name: string }>).map((x) => x.name);
  t.strictSame(await names(), ['greet', 'own_tool'], 'no collision at start');

  // A listen on the federated endpoint listens to the members: the late member's list change reaches the gateway.
  const listen = await openListen(t, gw.url, 'listen-1', { toolsListChanged: true });
  t.equal(listen.response.status, 200);
  await listen.stream.until((m) => m.method === 'notifications/subscriptions/acknowledged');
  late = true;
  for (const s of servers) addGreet(s);
  await listen.stream.until((m) => m.method === 'notifications/tools/list_changed');

  t.strictSame(await names(), ['greet', 'own_tool'], "greet is listed once: the earlier member's");
  t.strictSame(await names(), ['greet', 'own_tool'], 'and again');
  const call = await post(gw.url, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } });
  t.match(JSON.stringify(call.body.result?.content), /Hello, Ada!/, "a call of greet reaches the earlier member's");
  t.notMatch(JSON.stringify(call.body), /late greet/);

  const warned = log.lines.filter((l) => l.msg === 'federated name collision: the later member is hidden');
  t.equal(warned.length, 1, 'the collision is logged once, however often the lists are merged');
  t.match(warned[0], { level: 40, endpoint: '/mcp', kind: 'tool', name: 'greet', kept: 'early', hidden: 'late' });

  const metrics = await (await fetch(`${gw.origin}/metrics`)).text();
  const lines = metrics.split('\n').filter((l) => l.startsWith('mcp_gateway_federation_collisions_total'));
  t.strictSame(lines, ['mcp_gateway_federation_collisions_total{endpoint="/mcp",kept="early",hidden="late"} 1']);
});
