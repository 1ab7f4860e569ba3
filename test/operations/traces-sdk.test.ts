// Trace context with an OpenTelemetry SDK registered (docs/operations.md §Traces): the gateway's spans sit between the
// client and the upstream. A SERVER span per request, child of the client's context; a CLIENT span per upstream call,
// child of it, whose context the upstream receives (same trace id, the gateway's span as parent). Its own file: the
// SDK is registered globally for this process (tap runs each file in its own), and unregistered at the end.
import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import t from 'tap';
import { post } from '../helpers/modern.js';
import { legacySession, traceStack } from '../helpers/trace-stack.js';
import { within } from '../helpers/relay.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const TP = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** Keeps every ended span and wakes whoever waits for one (an in-memory exporter that can be awaited). */
class Recorder implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  private waiters: Array<() => void> = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
    for (const w of this.waiters.splice(0)) w();
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
  /** The first ended span `p` matches (bounded: fails after 5 s). */
  async span(p: (s: ReadableSpan) => boolean, what: string): Promise<ReadableSpan> {
    const found = async (): Promise<ReadableSpan> => {
      for (;;) {
        const hit = this.spans.find(p);
        if (hit) return hit;
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      }
    };
    const hit = await within(found(), 5_000);
    if (!hit) throw new Error(`no span: ${what}`);
    return hit;
  }
}

const recorder = new Recorder();
const provider = new BasicTracerProvider({ spanProcessors: [recorder] });
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
t.teardown(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const isCall = (name: string) => (s: { rpcMethod: string | undefined; body: any }) => s.rpcMethod === 'tools/call' && s.body?.params?.name === name;
const server = (name: string) => (s: ReadableSpan) => s.kind === SpanKind.SERVER && s.name === name;
const childOf = (parent: ReadableSpan, kind: SpanKind) => (s: ReadableSpan) => s.kind === kind && s.parentSpanContext?.spanId === parent.spanContext().spanId;
const traceparentOf = (s: ReadableSpan) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`;

t.test('modern face over a legacy upstream: client → SERVER span → CLIENT span → upstream, one trace', async (t) => {
  const stack = await traceStack(t, 'legacy');
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { headers: { traceparent: TP, tracestate: 'congo=t61rcWkgMzE' } });
  t.equal(r.body.result.resultType, 'complete');
  const srv = await recorder.span(server('tools/call test_simple_text'), 'the request span');
  t.equal(srv.spanContext().traceId, TRACE_ID, 'the client trace');
  t.equal(srv.parentSpanContext?.spanId, CLIENT_SPAN, "child of the client's span");
  t.match(srv.attributes, {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'test_simple_text',
    'mcp_tasks_gateway.path': 'modern-face',
    'mcp_tasks_gateway.client.era': 'modern',
    'mcp_tasks_gateway.upstream': 'fixture',
  });
  const cli = await recorder.span(childOf(srv, SpanKind.CLIENT), 'the upstream call span');
  t.equal(cli.name, 'tools/call test_simple_text');
  t.equal(cli.spanContext().traceId, TRACE_ID);
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, traceparentOf(cli), "the upstream's parent is the gateway's CLIENT span");
  t.not(up.headers.traceparent, TP, 'a new span id');
  t.equal(up.headers.tracestate, 'congo=t61rcWkgMzE', 'the tracestate goes along');
  t.equal(up.body.params._meta.traceparent, traceparentOf(cli), 'the same in params._meta');
});

t.test('a wrapped task: its id on the creating and the addressing request spans; its background call a child of the creating one', async (t) => {
  const stack = await traceStack(t, 'legacy', {}, { tools: { test_simple_text: { task: 'always' } } });
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { capabilities: TASKS, headers: { traceparent: TP } });
  t.equal(r.body.result.resultType, 'task');
  const taskId = r.body.result.taskId as string;
  const created = await recorder.span(
    (s) => server('tools/call test_simple_text')(s) && s.attributes['mcp_tasks_gateway.task.id'] === taskId,
    'the creating request span',
  );
  t.equal(created.spanContext().traceId, TRACE_ID);
  const background = await recorder.span(childOf(created, SpanKind.CLIENT), 'the background call span');
  const up = await stack.upstreamRequest(isCall('test_simple_text'));
  t.equal(up.headers.traceparent, traceparentOf(background), 'the background call carries its own span, in the same trace');

  const got = await post(stack.url, 'tasks/get', { taskId }, { capabilities: TASKS, headers: { traceparent: TP } });
  t.equal(got.status, 200);
  const addressed = await recorder.span(server('tasks/get'), 'the tasks/get span');
  t.equal(addressed.attributes['mcp_tasks_gateway.task.id'], taskId, 'the task addressed');
});

t.test('pass-through: the forwarded exchange has its CLIENT span, and the upstream gets its context', async (t) => {
  const stack = await traceStack(t, 'modern');
  const r = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } }, { headers: { traceparent: TP } });
  t.equal(r.body.result.content[0].text, 'Hello, Ada!');
  const srv = await recorder.span(
    (s) => server('tools/call greet')(s) && s.attributes['mcp_tasks_gateway.path'] === 'pass-through',
    'the pass-through request span',
  );
  t.equal(srv.parentSpanContext?.spanId, CLIENT_SPAN);
  t.equal(srv.attributes['http.response.status_code'], 200);
  const cli = await recorder.span(childOf(srv, SpanKind.CLIENT), 'the forwarded exchange span');
  const up = await stack.upstreamRequest(isCall('greet'));
  t.equal(up.headers.traceparent, traceparentOf(cli));
});

t.test('legacy face over a modern upstream; and without an incoming context the gateway starts the trace', async (t) => {
  const stack = await traceStack(t, 'modern');
  const client = await legacySession(stack.url);
  const r = await client.request('tools/call', { name: 'greet', arguments: { name: 'Bo' } }, { traceparent: TP });
  t.equal(r.body.result.content[0].text, 'Hello, Bo!');
  const srv = await recorder.span(
    (s) => server('tools/call greet')(s) && s.attributes['mcp_tasks_gateway.path'] === 'legacy-face',
    'the legacy face request span',
  );
  t.equal(srv.spanContext().traceId, TRACE_ID);
  t.equal(srv.attributes['error.type'], undefined, 'a served request: no error on its span');
  const cli = await recorder.span(childOf(srv, SpanKind.CLIENT), 'the modern upstream call span');
  const up = await stack.upstreamRequest((s) => isCall('greet')(s) && s.body.params.arguments.name === 'Bo');
  t.equal(up.headers.traceparent, traceparentOf(cli));
  t.equal(up.body.params._meta.traceparent, traceparentOf(cli));

  const fresh = await client.request('tools/call', { name: 'greet', arguments: { name: 'Cy' } });
  t.equal(fresh.body.result.content[0].text, 'Hello, Cy!');
  const up2 = await stack.upstreamRequest((s) => isCall('greet')(s) && s.body.params.arguments.name === 'Cy');
  const tp = String(up2.headers.traceparent);
  t.match(tp, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, "the gateway's own trace goes upstream");
  const root = await recorder.span((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === tp.slice(3, 35), 'the root request span');
  t.equal(root.parentSpanContext, undefined, 'a root span: nothing came in');
});

t.test('a request the legacy face refuses: its span carries the JSON-RPC code the client got', async (t) => {
  const stack = await traceStack(t, 'modern');
  const client = await legacySession(stack.url);
  const r = await client.request('logging/setLevel', { level: 'loudest' }, { traceparent: TP });
  t.equal(r.body.error?.code, -32602, 'refused in-band');
  const srv = await recorder.span(
    (s) => s.kind === SpanKind.SERVER && s.attributes['mcp.method.name'] === 'logging/setLevel' && s.spanContext().traceId === TRACE_ID,
    'the refused request span',
  );
  t.match(srv.attributes, { 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
});

t.test("an upstream's own task: its id on the creating call's span, its polls in the same trace", async (t) => {
  const stack = await traceStack(t, 'legacy-native');
  const r = await post(
    stack.url,
    'tools/call',
    { name: 'slow_compute', arguments: { seconds: 0.2, label: 'pi' } },
    { capabilities: TASKS, headers: { traceparent: TP } },
  );
  t.equal(r.body.result.resultType, 'task', 'the client gets a task');
  const srv = await recorder.span((s) => server('tools/call slow_compute')(s) && s.spanContext().traceId === TRACE_ID, 'the creating request span');
  t.equal(srv.attributes['mcp_tasks_gateway.task.id'], r.body.result.taskId);
  const creating = await recorder.span((s) => childOf(srv, SpanKind.CLIENT)(s) && s.name === 'tools/call slow_compute', 'the creating call span');
  const upstreamTaskId = creating.attributes['mcp_tasks_gateway.upstream.task.id'];
  t.type(upstreamTaskId, 'string', "the upstream's task id");
  const poll = await stack.upstreamRequest((s) => (s.rpcMethod === 'tasks/get' || s.rpcMethod === 'tasks/result') && s.body?.params?.taskId === upstreamTaskId);
  t.equal(String(poll.headers.traceparent).slice(3, 35), TRACE_ID, 'following the task stays in the trace');
});
