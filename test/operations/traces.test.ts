// Trace context without an OpenTelemetry SDK (docs/operations.md §Traces): the API is a no-op, and a client's
// `traceparent` still reaches the upstream with the same trace id, carried on verbatim on every path (the modern face
// over a legacy upstream, the legacy face over a modern one, pass-through of either era); a malformed one is dropped.
// The SDK case (the gateway's own spans as parents) is test/operations/traces-sdk.test.ts: it registers a global.
import t from 'tap';
import { post } from '../helpers/modern.js';
import { legacySession, memoryLog, traceStack } from '../helpers/trace-stack.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const TP = `00-${TRACE_ID}-b7ad6b7169203331-01`;
const TP_META = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const MALFORMED = `00-${TRACE_ID.toUpperCase()}-b7ad6b7169203331-01`;

const isCall = (name: string) => (s: { rpcMethod: string | undefined; body: any }) => s.rpcMethod === 'tools/call' && s.body?.params?.name === name;

t.test('a modern client over a legacy upstream (modern face): the header context reaches the upstream in headers and _meta', async (t) => {
  const stack = await traceStack(t, 'legacy');
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { headers: { traceparent: TP, tracestate: 'congo=t61rcWkgMzE' } });
  t.equal(r.status, 200);
  t.equal(r.body.result.resultType, 'complete');
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, TP, 'no SDK: the same trace id and parent, verbatim');
  t.equal(up.headers.tracestate, 'congo=t61rcWkgMzE');
  t.equal(up.body.params._meta.traceparent, TP, 'and in params._meta');
  t.equal(up.body.params._meta.tracestate, 'congo=t61rcWkgMzE');
});

t.test('params._meta.traceparent is taken before the header, with its own tracestate', async (t) => {
  const stack = await traceStack(t, 'legacy');
  const r = await post(
    stack.url,
    'tools/call',
    {
      name: 'test_simple_text',
      arguments: {},
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        traceparent: TP_META,
      },
    },
    { headers: { traceparent: TP, tracestate: 'header=1' } },
  );
  t.equal(r.status, 200);
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, TP_META, 'the _meta context wins');
  t.equal(up.headers.tracestate, undefined, "the header's tracestate belongs to the header's parent");
  t.equal(up.body.params._meta.traceparent, TP_META);
});

t.test('a malformed traceparent is dropped, header or _meta, and the request is served', async (t) => {
  const stack = await traceStack(t, 'legacy');
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { headers: { traceparent: MALFORMED, tracestate: 'a=b' } });
  t.equal(r.status, 200);
  t.equal(r.body.result.resultType, 'complete', 'served');
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, undefined, 'not forwarded');
  t.equal(up.headers.tracestate, undefined, 'nor its tracestate');
  t.notOk('traceparent' in (up.body.params._meta ?? {}));

  const huge = await post(stack.url, 'tools/call', {
    name: 'test_simple_text',
    arguments: { n: 2 },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      traceparent: 'x'.repeat(50_000),
      tracestate: 'y',
    },
  });
  t.equal(huge.status, 200, 'a huge _meta value is no error either');
  const up2 = await stack.upstreamRequest((s) => isCall('test_simple_text')(s) && s.body.params.arguments?.n === 2);
  t.notOk('traceparent' in up2.body.params._meta, 'the client _meta value is not carried on');
  t.notOk('tracestate' in up2.body.params._meta);
  t.equal(up2.headers.traceparent, undefined);
});

t.test('a legacy client over a modern-only upstream (legacy face): the context reaches the modern upstream in headers and _meta', async (t) => {
  const stack = await traceStack(t, 'modern');
  const client = await legacySession(stack.url);
  const r = await client.request('tools/call', { name: 'greet', arguments: { name: 'Ada' } }, { traceparent: TP });
  t.equal(r.body.result.content[0].text, 'Hello, Ada!');
  const up = await stack.upstreamRequest(isCall('greet'));
  t.equal(up.headers['mcp-protocol-version'], '2026-07-28', 'translated to the modern era');
  t.equal(up.headers.traceparent, TP);
  t.equal(up.body.params._meta.traceparent, TP);
});

t.test('pass-through: a modern client to a modern upstream, a legacy client to a legacy upstream', async (t) => {
  const modern = await traceStack(t, 'modern');
  const r = await post(modern.url, 'tools/call', { name: 'greet', arguments: { name: 'Bo' } }, { headers: { traceparent: TP } });
  t.equal(r.body.result.content[0].text, 'Hello, Bo!');
  const up = await modern.upstreamRequest(isCall('greet'));
  t.equal(up.headers.traceparent, TP, 'the modern pass-through forwards it');

  const dropped = await post(
    modern.url,
    'tools/call',
    { name: 'greet', arguments: { name: 'Cy' } },
    { headers: { traceparent: MALFORMED, tracestate: 'a=b' } },
  );
  t.equal(dropped.body.result.content[0].text, 'Hello, Cy!', 'served');
  const up2 = await modern.upstreamRequest((s) => isCall('greet')(s) && s.body.params.arguments?.name === 'Cy');
  t.equal(up2.headers.traceparent, undefined, 'a malformed one is not passed through');
  t.equal(up2.headers.tracestate, undefined);

  const legacy = await traceStack(t, 'legacy');
  const client = await legacySession(legacy.url);
  const l = await client.request('tools/call', { name: 'test_simple_text', arguments: {} }, { traceparent: TP, tracestate: 'rojo=1' });
  t.ok(l.body.result, 'answered');
  const up3 = await legacy.upstreamRequest(isCall('test_simple_text'));
  t.equal(up3.headers['mcp-session-id'] !== undefined, true, "the client's own upstream session: passed through");
  t.equal(up3.headers.traceparent, TP);
  t.equal(up3.headers.tracestate, 'rojo=1');
});

t.test('a wrapped task: its background call carries the creating request context', async (t) => {
  const stack = await traceStack(t, 'legacy', {}, { tools: { test_simple_text: { task: 'always' } } });
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { capabilities: caps, headers: { traceparent: TP } });
  t.equal(r.body.result.resultType, 'task');
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, TP, 'the call the gateway runs for the task');
  const without = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: { n: 3 } }, { capabilities: caps });
  t.equal(without.body.result.resultType, 'task');
  const up2 = await stack.upstreamRequest((s) => isCall('test_simple_text')(s) && s.body.params.arguments?.n === 3);
  t.equal(up2.headers.traceparent, undefined, 'no context came, none goes');
  t.notOk('traceparent' in (up2.body.params._meta ?? {}));
});

t.test('the operator log line names the trace id, and nothing else of the trace context', async (t) => {
  const log = memoryLog();
  const stack = await traceStack(t, 'legacy', {}, {}, log.stream);
  await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { headers: { traceparent: TP, tracestate: 'congo=secretish' } });
  await post(stack.url, 'tools/list', {}, { headers: { traceparent: `00-${'e'.repeat(8_000)}` } });
  await post(stack.url, 'tools/list', {});
  const lines = log.lines.filter((l) => l.msg === 'mcp request');
  const traced = lines.find((l) => l.method === 'tools/call');
  t.equal(traced?.traceId, TRACE_ID, 'the trace id, for correlating');
  const others = lines.filter((l) => l.method === 'tools/list');
  t.equal(others.length, 2);
  t.same(
    lines.map((l) => l.outcome),
    ['complete', 'complete', 'complete'],
    "each line says how its request ended, in the log's words (the result's type)",
  );
  t.ok(
    others.every((l) => !('traceId' in l)),
    'no trace id when none (or a malformed one) came',
  );
  t.notOk(log.text().includes('congo='), 'the tracestate is never logged');
  t.notOk(log.text().includes('b7ad6b7169203331'), 'nor the parent span id');
  t.notOk(log.text().includes('eeeeeeeeee'), 'nor a malformed value');
});

t.test('a passed-through request writes one operator log line, whatever the era', async (t) => {
  const log = memoryLog();
  const modern = await traceStack(t, 'modern', {}, {}, log.stream);
  await post(modern.url, 'tools/call', { name: 'greet', arguments: { name: 'Bo' } });
  const legacyLog = memoryLog();
  const legacy = await traceStack(t, 'legacy', {}, {}, legacyLog.stream);
  const client = await legacySession(legacy.url);
  await client.request('tools/call', { name: 'test_simple_text', arguments: {} });
  for (const [era, l] of [
    ['modern', log],
    ['legacy', legacyLog],
  ] as const) {
    const perRequest = l.lines.filter((x) => x.req !== undefined || x.reqId !== undefined);
    const calls = perRequest.filter((x) => x.method === 'tools/call');
    t.equal(calls.length, 1, `${era}: one line for the call`);
    t.same(
      perRequest.filter((x) => x.msg === 'fetching from remote server' || x.msg === 'response received'),
      [],
      `${era}: no proxy library lines`,
    );
  }
});
