/**
 * SDK 1.32.2 servers over Streamable HTTP as the SDK's examples host them: one `McpServer` and one transport per
 * session. Not a test file. Tests pick how a request outside any session is refused, since real servers differ: the
 * SDK examples' 400 with a JSON-RPC "No valid session ID provided", or a bare status (400 for POST, 404 otherwise).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { SSE_BOUND_MS } from './sse-reader.js';

/** How a request without a known session is refused. */
export type LostSessionAnswer = 'sdk-400-json' | 'bare-status';

/** Serves a fresh server from `newServer()` per session on loopback; its URL and an idempotent close. */
export async function serveSdkSessions(newServer: () => McpServer, lostSession: LostSessionAnswer): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    let body: unknown;
    if (req.method === 'POST') {
      let raw = '';
      for await (const c of req) raw += c;
      body = JSON.parse(raw);
    }
    if (existing) return existing.handleRequest(req, res, body);
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      if (lostSession === 'bare-status') {
        res.writeHead(req.method === 'POST' ? 400 : 404).end();
      } else {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
      }
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await newServer().connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const addr = http.address();
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.close().catch(() => {})));
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

/** The next value pushed to `waiters`, or a rejection naming `what` after the SSE bound. */
export function nextPushed<T>(waiters: Array<(v: T) => void>, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(what)), SSE_BOUND_MS);
    timer.unref();
    waiters.push((v) => {
      clearTimeout(timer);
      resolve(v);
    });
  });
}
