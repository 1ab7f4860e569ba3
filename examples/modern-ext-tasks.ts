// A 2026-07-28 task client: the v2 client (@modelcontextprotocol/client) with the tasks extension
// (@modelcontextprotocol/ext-tasks) through the gateway. The gateway answers a slow wrapped tool with a task; the
// extension follows it with tasks/get at the interval the task suggests, to its result.
// Run: npx tsx examples/modern-ext-tasks.ts http://127.0.0.1:8080/mcp
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, DispatchError, type RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8080/mcp');
const clientInfo = { name: 'my-app', version: '1.0.0' };
const client = new Client(clientInfo, { versionNegotiation: { mode: 'auto' } });
await client.connect(new StreamableHTTPClientTransport(url));

// The v2 client refuses an answer of `resultType: "task"`, so the extension sends tools/call and tasks/* on a path
// the application gives it: one JSON-RPC POST per request, with the 2026-07-28 routing headers.
let lastId = 0;
const rawDispatch: RawClientDispatch = async (request, options) => {
  const { method, params } = request as { method: string; params: Record<string, unknown> };
  const id = ++lastId;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
  };
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  // On tasks/get, tasks/update and tasks/cancel the extension names the task (Mcp-Name) itself.
  for (const [name, value] of Object.entries(options?.context?.headers ?? {})) headers[name.toLowerCase()] = value;
  let res: Response;
  try {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    res = await fetch(url, { method: 'POST', headers, body, ...(options?.signal ? { signal: options.signal } : {}) });
  } catch (cause) {
    throw new DispatchError(`${method}: ${(cause as Error).message}`, true, { cause }); // retryable: nothing arrived
  }
  // The answer is JSON, or an SSE stream whose messages end with it (progress first); an error status carries one too.
  const text = await res.text();
  const messages = res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => JSON.parse(line.slice(5)))
    : [JSON.parse(text || 'null')];
  const reply = messages.find((m) => m?.id === id);
  if (!reply) throw new DispatchError(`${method}: no answer (HTTP ${res.status})`, res.status >= 500);
  return 'error' in reply ? { kind: 'error', error: reply.error } : { kind: 'result', result: reply.result };
};

const session = createTaskSessionFromClient(client, {
  endpointId: url.href,
  rawDispatch,
  // What the extension writes into each request's _meta (it adds the tasks extension to these capabilities).
  v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo, clientCapabilities: {} },
});

const execution = await session.callTool('slow_report', { seconds: 2 });
console.log('tools/call:', execution.kind, execution.handle?.taskId ?? '');
if (execution.kind === 'task') {
  // Each status the extension polls, until the outcome (settle() below waits for the same outcome without them).
  for await (const event of execution.updates()) {
    if (event.type === 'task') console.log('task:', event.task.status, `(next poll in ${event.task.suggestedPollIntervalMs ?? '?'} ms)`);
    else console.log('outcome:', event.outcome.status);
  }
}
const { outcome } = await execution.settle();
if (outcome.status === 'completed') {
  const { content } = outcome.result as { content: Array<{ type: string; text?: string }> };
  console.log('result:', content[0]?.text);
} else console.log('not completed:', outcome.status, outcome.status === 'failed' ? outcome.error.message : '');
await session.close();
await client.close();
