// A 2026-07-28 client (@modelcontextprotocol/client, the v2 SDK) through the gateway.
// Run: npx tsx examples/modern-client.ts http://127.0.0.1:8080/mcp
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8080/mcp');
// The v2 client speaks 2025-11-25 unless told to negotiate: 'auto' asks server/discover first.
const client = new Client({ name: 'my-app', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
// A legacy server's elicitation/create reaches this client as an MRTR round; the SDK answers it with this handler.
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
await client.connect(new StreamableHTTPClientTransport(url));
console.log('era:', client.getProtocolEra(), 'server:', client.getServerVersion()?.name);

const greet = await client.callTool({ name: 'greet', arguments: { name: 'World' } });
console.log('greet:', greet.content[0]?.type === 'text' ? greet.content[0].text : greet.content);
const booked = await client.callTool({ name: 'book_table', arguments: { guests: 2 } });
console.log('book_table:', booked.content[0]?.type === 'text' ? booked.content[0].text : booked.content);
await client.close();
