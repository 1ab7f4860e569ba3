/**
 * The modern face in front of ordinary legacy servers, not only our fixture: SDK 1.32.2 `McpServer`s written the
 * way the SDK's docs show (`registerTool`, `registerResource` with a `ResourceTemplate`, a stateful
 * `StreamableHTTPServerTransport`, one `McpServer` per session), started on port 0; modern requests by raw fetch.
 * - A missing resource is -32602 with `data.uri` (2026-07-28 server/resources §Error Handling) whether the server
 *   answered -32602 without data (McpServer, URI matching no template) or -32603 (a handler that throws a plain
 *   Error).
 * - A tool that asks for input with `server.server.elicitInput/createMessage/listRoots` (sent on the session's GET
 *   stream, as those calls are) or with `relatedRequestId` (sent on the call's own stream) gives a client that did
 *   not declare the kind -32021 with HTTP 400 (basic/patterns/mrtr §Server Requirements), and a client that did an
 *   ordinary MRTR round.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { nextPushed, serveSdkSessions } from '../helpers/sdk-session-server.js';
import { pollToEnd, TASKS_EXT } from '../helpers/task-helpers.js';

/** What a tool learned from its input request: the answer, or the error the SDK threw. */
type Seen = { ok: true; value: unknown } | { ok: false; message: string };

interface SdkServer {
  url: string;
  /** Resolves with what the next input tool saw (its input request's answer, or the SDK's error). */
  nextSeen(): Promise<Seen>;
  close(): Promise<void>;
}

const NAME_SCHEMA = { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] };

/**
 * An SDK server as its docs write one. `missing`: how a read of a name the template knows nothing of fails:
 * 'template-only' lets McpServer answer a URI no template matches; 'plain-error' throws an Error from the template.
 */
async function startSdkServer(missing: 'template-only' | 'plain-error'): Promise<SdkServer> {
  const waiters: Array<(s: Seen) => void> = [];
  const record = async (ask: () => Promise<unknown>): Promise<string> => {
    try {
      const value = await ask();
      waiters.shift()?.({ ok: true, value });
      return JSON.stringify(value);
    } catch (e) {
      waiters.shift()?.({ ok: false, message: e instanceof Error ? e.message : String(e) });
      throw e;
    }
  };
  const newServer = () => {
    const server = new McpServer({ name: `sdk-${missing}`, version: '1.0.0' });
    const files: Record<string, string> = { readme: 'hello' };
    server.registerResource(
      'file',
      new ResourceTemplate(missing === 'template-only' ? 'file:///known/{name}' : 'file:///{name}', { list: undefined }),
      { title: 'Files', mimeType: 'text/plain' },
      async (uri, { name }) => {
        const text = typeof name === 'string' ? files[name] : undefined;
        if (text === undefined) throw new Error(`Resource ${uri.href} not found`);
        return { contents: [{ uri: uri.href, text }] };
      },
    );
    server.registerTool('ask_name', { description: 'Asks the user for a name (GET stream)' }, async () => {
      const text = await record(() => server.server.elicitInput({ message: 'Your name?', requestedSchema: NAME_SCHEMA }));
      return { content: [{ type: 'text', text }] };
    });
    server.registerTool('ask_name_related', { description: 'Asks the user for a name (on the call)' }, async (extra) => {
      const text = await record(() =>
        server.server.elicitInput({ message: 'Your name?', requestedSchema: NAME_SCHEMA }, { relatedRequestId: extra.requestId }),
      );
      return { content: [{ type: 'text', text }] };
    });
    server.registerTool('ask_name_task', { description: 'Asks the user for a name (the gateway wraps it in a task)' }, async (extra) => {
      const text = await record(() =>
        server.server.elicitInput({ message: 'Your name?', requestedSchema: NAME_SCHEMA }, { relatedRequestId: extra.requestId }),
      );
      return { content: [{ type: 'text', text }] };
    });
    server.registerTool('my_capabilities', { description: 'Says which client capabilities this request carried' }, async (extra) => ({
      content: [{ type: 'text', text: JSON.stringify(extra._meta?.['io.modelcontextprotocol/clientCapabilities'] ?? null) }],
    }));
    server.registerTool('summarize', { description: 'Asks the client’s model' }, async () => {
      const text = await record(() =>
        server.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Summarize: hello' } }], maxTokens: 50 }),
      );
      return { content: [{ type: 'text', text }] };
    });
    server.registerTool('list_roots', { description: 'Asks the client for its roots' }, async () => {
      const text = await record(() => server.server.listRoots());
      return { content: [{ type: 'text', text }] };
    });
    return server;
  };
  const served = await serveSdkSessions(newServer, 'sdk-400-json');
  return {
    url: served.url,
    nextSeen: () => nextPushed(waiters, 'the tool never learned the outcome of its input request'),
    close: served.close,
  };
}

interface Stacked {
  docs: SdkServer;
  plain: SdkServer;
  /** Gateway endpoints in front of each. */
  docsUrl: string;
  plainUrl: string;
}

async function stack(t: { teardown(fn: () => unknown): void }): Promise<Stacked> {
  const docs = await startSdkServer('template-only');
  const plain = await startSdkServer('plain-error');
  const { gateway, origin: base } = await startGateway({
    upstreams: [
      { name: 'docs', path: '/docs', url: docs.url, tools: { ask_name_task: { task: 'always' } } },
      { name: 'plain', path: '/plain', url: plain.url },
    ],
  });
  t.teardown(async () => {
    await gateway.close();
    await docs.close();
    await plain.close();
  });
  return { docs, plain, docsUrl: `${base}/docs`, plainUrl: `${base}/plain` };
}

t.test('a missing resource is -32602 with data.uri, whatever code the server used', async (t) => {
  const s = await stack(t);

  const found = await post(s.docsUrl, 'resources/read', { uri: 'file:///known/readme' });
  t.equal(found.body.result?.contents?.[0]?.text, 'hello', 'a resource the template knows reads as usual');

  // McpServer: a URI that matches no template → -32602 "Resource … not found", no data.
  const uri = 'file:///elsewhere/nothing';
  const r = await post(s.docsUrl, 'resources/read', { uri });
  t.equal(r.status, 200);
  t.equal(r.body.error?.code, -32602);
  t.match(r.body.error?.message, /not found/);
  t.equal(r.body.error?.data?.uri, uri, 'data.uri added');
  t.notOk('upstreamCode' in (r.body.error?.data ?? {}), 'the code did not change, so none is kept');

  // A template handler that throws a plain Error → -32603 "…not found" upstream.
  const uri2 = 'file:///nothing';
  const p = await post(s.plainUrl, 'resources/read', { uri: uri2 });
  t.equal(p.status, 200);
  t.equal(p.body.error?.code, -32602, '-32603 "not found" becomes -32602');
  t.equal(p.body.error?.data?.uri, uri2, 'data.uri added');
  t.equal(p.body.error?.data?.upstreamCode, -32603, 'the server’s own code is kept');
  t.match(p.body.error?.message, /not found/, 'and its message');

  const other = await post(s.plainUrl, 'resources/read', { uri: 'file:///readme' });
  t.equal(other.body.result?.contents?.[0]?.text, 'hello');
});

/** Each input tool, the capability it needs and an answer to it. */
const INPUT_TOOLS: Array<{ tool: string; needs: Record<string, unknown>; answer: Record<string, unknown>; method: string }> = [
  { tool: 'ask_name', needs: { elicitation: {} }, method: 'elicitation/create', answer: { action: 'accept', content: { name: 'Ada' } } },
  { tool: 'ask_name_related', needs: { elicitation: {} }, method: 'elicitation/create', answer: { action: 'accept', content: { name: 'Ada' } } },
  {
    tool: 'summarize',
    needs: { sampling: {} },
    method: 'sampling/createMessage',
    answer: { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' },
  },
  { tool: 'list_roots', needs: { roots: {} }, method: 'roots/list', answer: { roots: [{ uri: 'file:///work' }] } },
];

t.test('an input kind the request did not declare: never asked; the server meets a client without it, as directly', async (t) => {
  const s = await stack(t);
  for (const { tool, method } of INPUT_TOOLS) {
    const seenUpstream = s.docs.nextSeen();
    // Declares the other kinds, not this one: its session declares them only.
    const declared = Object.fromEntries(INPUT_TOOLS.filter((x) => x.method !== method).map((x) => Object.entries(x.needs)[0] as [string, unknown]));
    const r = await post(s.docsUrl, 'tools/call', { name: tool, arguments: {} }, { capabilities: declared });
    t.not(r.body.result?.resultType, 'input_required', `${tool}: no round: the client is never asked`);
    t.not(r.body.error?.code, -32021, `${tool}: no -32021 of the gateway's own`);
    t.comment(`${tool}: HTTP ${r.status} ${JSON.stringify(r.body.error ?? r.body.result).slice(0, 160)}`);
    // The server refused itself (an SDK server checks what the session declared) or asked and got a client's refusal.
    const seen = await seenUpstream;
    t.match(seen, { ok: false, message: /does not support/ }, `${tool}: the tool saw a client without ${method}`);
  }
});

t.test('the same tools with the capability declared: an ordinary MRTR round', async (t) => {
  const s = await stack(t);
  const all = { elicitation: {}, sampling: {}, roots: {} };
  for (const { tool, method, answer } of INPUT_TOOLS) {
    const first = await post(s.docsUrl, 'tools/call', { name: tool, arguments: {} }, { capabilities: all });
    t.equal(first.status, 200, `${tool}: 200`);
    t.equal(first.body.result?.resultType, 'input_required', `${tool}: input required`);
    const requests = Object.entries(first.body.result?.inputRequests ?? {}) as Array<[string, { method: string }]>;
    t.equal(requests.length, 1, `${tool}: one input request`);
    const [key, request] = requests[0] ?? ['', { method: '' }];
    t.equal(request.method, method, `${tool}: asks ${method}`);
    const done = await post(
      s.docsUrl,
      'tools/call',
      { name: tool, arguments: {}, inputResponses: { [key]: answer }, requestState: first.body.result.requestState },
      { capabilities: all },
    );
    t.equal(done.body.result?.resultType, 'complete', `${tool}: complete`);
    t.notOk(done.body.result?.isError, `${tool}: not a tool error`);
    t.same(JSON.parse(done.body.result?.content?.[0]?.text ?? 'null'), answer, `${tool}: the tool got the client’s answer`);
  }
});

t.test('requests that declare other input kinds get sessions of their own, each declaring what its caller did', async (t) => {
  const s = await stack(t);
  const without = await post(s.docsUrl, 'tools/call', { name: 'list_roots', arguments: {} }, { capabilities: {} });
  t.match(without.body.result?.content?.[0]?.text, /does not support roots\/list/, 'a session without roots: the server meets a client without them');
  const first = await post(s.docsUrl, 'tools/call', { name: 'list_roots', arguments: {} }, { capabilities: { roots: {} } });
  t.equal(first.body.result?.resultType, 'input_required', 'a session with roots: the caller is asked');
});

t.test('each request carries its own capabilities upstream in _meta too', async (t) => {
  const s = await stack(t);
  for (const caps of [{ sampling: {} }, {}, { elicitation: { form: {} }, roots: {} }]) {
    const r = await post(s.docsUrl, 'tools/call', { name: 'my_capabilities', arguments: {} }, { capabilities: caps });
    t.same(JSON.parse(r.body.result?.content?.[0]?.text ?? '"none"'), caps, `${JSON.stringify(caps)} reached the server as declared`);
  }
});

t.test('a gateway-owned task whose tool asks for an undeclared kind: never asked, the task ends', async (t) => {
  const s = await stack(t);
  const seenUpstream = s.docs.nextSeen();
  // Declares tasks, not elicitation: its session declares no elicitation either, so the server refuses itself.
  const r = await post(s.docsUrl, 'tools/call', { name: 'ask_name_task', arguments: {} }, { capabilities: { extensions: { [TASKS_EXT]: {} } } });
  t.equal(r.status, 200);
  t.equal(r.body.result?.resultType, 'task', 'a task, as the rule says');
  t.match(await seenUpstream, { ok: false, message: /does not support/ }, 'the tool met a client without elicitation, not a hang');
  const polls = await pollToEnd(s.docsUrl, r.body.result.taskId, { capabilities: { extensions: { [TASKS_EXT]: {} } } });
  const last = polls.at(-1);
  t.equal(last?.status, 'completed');
});
