/**
 * The bundled demo upstream: an ordinary MCP 2025-11-25 server (SDK 1.32.2, stateful Streamable HTTP) that the
 * gateway fronts when no upstream is configured. It knows nothing of 2026-07-28: every modern feature a client
 * sees comes from the gateway.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** A running demo upstream. */
export interface DemoUpstream {
  url: string;
  close(): Promise<void>;
}

const MAX_BODY = 1_048_576;

function buildServer(): McpServer {
  const server = new McpServer(
    { name: 'demo-legacy-server', version: '1.0.0' },
    { instructions: 'A 2025-11-25 demo server behind mcp-tasks-gateway.', capabilities: { logging: {} } },
  );
  server.registerTool('greet', { description: 'Greets someone by name', inputSchema: { name: z.string().describe('Who to greet') } }, async ({ name }) => ({
    content: [{ type: 'text', text: `Hello, ${name}!` }],
  }));
  server.registerTool(
    'countdown',
    { description: 'Counts down from n to 0, reporting progress each step', inputSchema: { n: z.number().int().min(1).max(20) } },
    async ({ n }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= n; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: n, message: `${n - i} to go` },
          });
        }
      }
      return { content: [{ type: 'text', text: 'Lift-off!' }] };
    },
  );
  server.registerTool(
    'book_table',
    { description: 'Books a table; asks the user to confirm (a 2025 server→client elicitation request)', inputSchema: { guests: z.number().int().min(1) } },
    async ({ guests }) => {
      // Written the way SDK examples do: server.elicitInput() names no request, so the SDK sends it on the
      // session's GET stream rather than on this call's stream. The gateway ties it to the call all the same.
      const answer = await server.server.elicitInput({
        mode: 'form',
        message: `Book a table for ${guests}?`,
        requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', title: 'Confirm the booking' } }, required: ['confirm'] },
      });
      const ok = answer.action === 'accept' && answer.content?.confirm === true;
      return { content: [{ type: 'text', text: ok ? `Booked a table for ${guests}.` : 'No booking made.' }] };
    },
  );
  server.registerTool(
    'slow_report',
    { description: 'Builds a report slowly (seconds); a candidate for task wrapping', inputSchema: { seconds: z.number().min(0).max(600) } },
    async ({ seconds }, extra) => {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, seconds * 1000);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(t);
          reject(new Error('cancelled'));
        });
      });
      return { content: [{ type: 'text', text: `Report ready after ${seconds}s.` }] };
    },
  );
  server.registerResource('readme', 'demo://readme', { mimeType: 'text/plain', description: 'About this demo' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This resource comes from a 2025-11-25 server.' }],
  }));
  server.registerPrompt('haiku', { description: 'Asks for a haiku', argsSchema: { topic: z.string() } }, ({ topic }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Write a haiku about ${topic}.` } }],
  }));
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** Starts the demo upstream on loopback (port 0 picks a free port). */
export async function startDemoUpstream(port = 0): Promise<DemoUpstream> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    try {
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      const sid = req.headers['mcp-session-id'];
      const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      if (existing) {
        await existing.handleRequest(req, res, body);
        return;
      }
      if (req.method === 'POST' && isInitializeRequest(body)) {
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id: string): void => {
            sessions.set(id, transport);
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
        await transport.handleRequest(req, res, body);
        return;
      }
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no valid session' } }));
    } catch {
      if (!res.headersSent) res.writeHead(400).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  const { port: actual } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
