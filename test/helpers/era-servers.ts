/**
 * Small real MCP servers for the era tests (not a test file): `@modelcontextprotocol/server` 2.4.0
 * `createMcpHandler` behind `@modelcontextprotocol/node` `toNodeHandler`, in its two shapes: dual-era
 * (`legacy: 'stateless'`: 2026-07-28 per request, and 2025-11-25 stateless on the same URL) and modern-only
 * (`legacy: 'reject'`). Their `server/discover` lists 2026-07-28 alone, as the reference servers' does.
 * Every request is recorded as it arrived, so a test can see what the gateway sent (translated or not).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';
import { sdkRequest } from './sdk-request.js';

/** One request as the server received it. */
export interface SeenRequest {
  httpMethod: string;
  /** JSON-RPC method of the body, if any. */
  rpcMethod: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A running era server. */
export interface EraServer {
  url: string;
  port: number;
  seen: SeenRequest[];
  /** Resolves with the first request (already seen or still to come) that matches. */
  waitFor(match: (s: SeenRequest) => boolean): Promise<SeenRequest>;
  close(): Promise<void>;
}

/** Builds the server every request gets: a `greet` tool. */
function factory(): McpServer {
  const server = new McpServer({ name: 'era-test-server', version: '2.4.0' }, { capabilities: { tools: {} } });
  server.registerTool('greet', { description: 'Greets someone', inputSchema: z.object({ name: z.string() }) }, async ({ name }) => ({
    content: [{ type: 'text', text: `Hello, ${name}!` }],
  }));
  return server;
}

/** Starts a dual-era (`stateless`) or modern-only (`reject`) server on loopback (`port` 0 picks one). */
export async function startEraServer(legacy: 'stateless' | 'reject', port = 0): Promise<EraServer> {
  const handler = createMcpHandler(factory, { legacy });
  const node = toNodeHandler(handler);
  const seen: SeenRequest[] = [];
  const waiters: Array<{ match: (s: SeenRequest) => boolean; resolve: (s: SeenRequest) => void }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const s: SeenRequest = {
        httpMethod: req.method ?? '',
        rpcMethod: typeof body?.method === 'string' ? body.method : undefined,
        headers: req.headers,
        body,
      };
      seen.push(s);
      for (const w of [...waiters]) {
        if (w.match(s)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(s);
        }
      }
      void node(sdkRequest(req), res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    seen,
    waitFor(match) {
      const hit = seen.find(match);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await handler.close();
    },
  };
}

/**
 * Sends `send()` again while the answer is not `done` (by default: while the gateway answers 503, an upstream
 * it knows to be down). For the moment between the upstream answering the gateway's background probe and the
 * gateway having read that answer, which nothing outside the gateway can await: each try is a full loopback
 * exchange, no timer is involved, and the loop gives up after `boundMs` (a failed test, never a pass).
 */
export async function untilServed<T extends { status: number }>(
  send: () => Promise<T>,
  done: (r: T) => boolean = (r) => r.status !== 503,
  boundMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + boundMs;
  let last = await send();
  while (!done(last) && Date.now() < deadline) last = await send();
  return last;
}
