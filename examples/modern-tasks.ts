// A 2026-07-28 request that declares the tasks extension (io.modelcontextprotocol/tasks), in plain fetch: the
// gateway answers a slow wrapped tool with a task, and tasks/get carries its result once it is done.
// Run: npx tsx examples/modern-tasks.ts http://127.0.0.1:8080/mcp
const url = process.argv[2] ?? 'http://127.0.0.1:8080/mcp';
const VERSION = '2026-07-28';
let id = 0;

async function rpc(method: string, params: Record<string, unknown>, name: string): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': VERSION,
      'mcp-method': method,
      'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': VERSION,
          'io.modelcontextprotocol/clientInfo': { name: 'my-app', version: '1.0.0' },
          // Declaring the extension on the request is what lets the gateway answer with a task.
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
      },
    }),
  });
  const text = await res.text();
  // An answer may come as SSE (progress first); the response is the last data line.
  const body = res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .at(-1)!
        .slice(5)
    : text;
  return JSON.parse(body);
}

const created = (await rpc('tools/call', { name: 'slow_report', arguments: { seconds: 2 } }, 'slow_report')).result;
console.log('tools/call:', created.resultType, created.status ?? '');
let task = created;
// A task is polled with tasks/get at the interval it suggests (one that asks for input says input_required and is
// answered with tasks/update); the terminal answer carries the tool's result.
while (task.status === 'working') {
  await new Promise((resolve) => setTimeout(resolve, task.pollIntervalMs ?? 1000));
  task = (await rpc('tasks/get', { taskId: created.taskId }, created.taskId)).result;
  console.log('tasks/get:', task.status);
}
const result = created.resultType === 'task' ? task.result : created;
console.log('result:', result?.content?.[0]?.text);
