// A 2025-11-25 client (@modelcontextprotocol/sdk 1.x) through the gateway, with a task for a slow tool.
// Run: npx tsx examples/legacy-client.ts http://127.0.0.1:8080/mcp
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8080/mcp');
const client = new Client({ name: 'my-app', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(url));
console.log('server:', client.getServerVersion()?.name, 'tasks:', client.getServerCapabilities()?.tasks !== undefined);

// `task` asks for a 2025-11-25 task: the tool is wrapped by a gateway rule, so the gateway runs it as one.
const stream = client.experimental.tasks.callToolStream({ name: 'slow_report', arguments: { seconds: 2 } }, CallToolResultSchema, { task: { ttl: 60_000 } });
for await (const message of stream) {
  if (message.type === 'taskCreated') console.log('task created:', message.task.status);
  else if (message.type === 'taskStatus') console.log('task status:', message.task.status);
  else if (message.type === 'result') console.log('result:', message.result.content[0]?.type === 'text' ? message.result.content[0].text : message.result);
  else if (message.type === 'error') console.log('error:', message.error.message);
}
await client.close();
