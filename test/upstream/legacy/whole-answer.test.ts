/**
 * A legacy session reads a plain JSON answer of declared length whole before it hands the call out
 * (src/upstream/legacy/session.ts `settle`): the call comes back finished with its response, and since nobody can
 * cancel a call not handed out yet, a body that stalls is dropped at the session's timeout (GW_UPSTREAM_TIMEOUT) and
 * one cut off is the stream broken (GW_UPSTREAM_UNAVAILABLE). The upstream is a raw node:http server written for these
 * failures, which no real server produces on demand (a body that stops halfway, a connection cut mid-body).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { LegacySession } from '../../../src/upstream/legacy/session.js';
import { UpstreamTimeoutError, UpstreamUnavailableError } from '../../../src/upstream/index.js';

/** How long the session waits for headers, and then for a body (ms). */
const TIMEOUT_MS = 300;

/** A 2025-11-25 server whose `tools/call` answers as its tool's name says: `ok`, `stall` (half a body) or `cut`. */
async function server(): Promise<{ url: string; close(): Promise<void>; server: Server }> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const msg = JSON.parse(body) as { id?: number; method: string; params?: { name?: string } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const answer = (result: object) => JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
      if (msg.method === 'initialize') {
        const text = answer({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'mcp-session-id': 's1' });
        return void res.end(text);
      }
      const text = answer({ content: [{ type: 'text', text: 'done' }] });
      const name = msg.params?.name;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      if (name === 'ok') return void res.end(text);
      res.write(text.slice(0, 10));
      if (name === 'cut') setTimeout(() => res.socket?.destroy(), 20);
      // `stall`: the rest never comes (the socket closes with the server).
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/mcp`,
    server: s,
    close: () =>
      new Promise<void>((resolve) => {
        s.closeAllConnections();
        s.close(() => resolve());
      }),
  };
}

async function session(t: { teardown(fn: () => unknown): void }): Promise<LegacySession> {
  const up = await server();
  const s = new LegacySession({ url: up.url, headers: {}, capabilities: {}, clientInfo: { name: 'whole', version: '1' }, timeoutMs: TIMEOUT_MS });
  t.teardown(async () => {
    await s.close();
    await up.close();
  });
  await s.initialize();
  return s;
}

t.test('a plain JSON answer comes back finished, its response the one event queued', async (t) => {
  const s = await session(t);
  const call = await s.request('tools/call', { name: 'ok', arguments: {} });
  t.equal(call.finished, true, 'finished when handed out');
  t.equal(call.pending, 1);
  const e = await call.next();
  t.equal(e.kind, 'response');
  t.same(e.kind === 'response' && 'result' in e.message && e.message.result, { content: [{ type: 'text', text: 'done' }] });
  t.match(e.kind === 'response' && e.raw, /^\{"jsonrpc":"2\.0","id":\d+,"result":/, "the upstream's own text goes along");
});

t.test('a body that stops halfway is dropped at the timeout: the call fails GW_UPSTREAM_TIMEOUT', async (t) => {
  const s = await session(t);
  const call = await s.request('tools/call', { name: 'stall', arguments: {} });
  const e = await call.next();
  t.equal(e.kind, 'failure');
  t.ok(e.kind === 'failure' && e.error instanceof UpstreamTimeoutError, 'a timeout, not a broken stream');
  t.equal(e.kind === 'failure' && (e.error as UpstreamTimeoutError).kind, 'GW_UPSTREAM_TIMEOUT');
});

t.test('a connection cut mid-body fails the call as a broken stream, at once', async (t) => {
  const s = await session(t);
  const call = await s.request('tools/call', { name: 'cut', arguments: {} });
  const e = await call.next();
  t.equal(e.kind, 'failure');
  t.ok(e.kind === 'failure' && e.error instanceof UpstreamUnavailableError, 'the stream broke');
});
