/**
 * The cost of the stdio host's loopback hop (src/upstream/stdio/host.ts): `tools/call` of a small tool on the same
 * kind of stdio server, one at a time, written straight to a child's stdin versus POSTed to the host's private
 * Streamable HTTP endpoint (as the gateway's sessions reach it: undici, one keep-alive connection, an SSE answer).
 * Alternating rounds; medians of each round's p50, and the difference within a round.
 *
 *   npx tsx bench/stdio-hop.ts [--calls 2000] [--rounds 5]
 */
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { StdioHost } from '../src/upstream/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = resolve(ROOT, 'test/fixtures/stdio-legacy-server.ts');
const COMMAND = [process.execPath, '--import', 'tsx', FIXTURE];
const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '5' } } });
const CALLS = Number(args.calls);
const ROUNDS = Number(args.rounds);
const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } };
const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } });

/** The child over its pipe, one request at a time. */
async function direct(): Promise<{ ask(id: number): Promise<void>; close(): void }> {
  const child = spawn(COMMAND[0] as string, COMMAND.slice(1), { cwd: ROOT, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = '';
  let waiting: (() => void) | undefined;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      buf = buf.slice(nl + 1);
      waiting?.();
    }
  });
  const ask = (m: unknown) =>
    new Promise<void>((resolve) => {
      waiting = resolve;
      child.stdin.write(`${JSON.stringify(m)}\n`);
    });
  await ask({ jsonrpc: '2.0', id: 0, method: 'initialize', params: INIT });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return { ask: (id) => ask(call(id)), close: () => child.kill() };
}

/** The same server through the host. */
async function hosted(): Promise<{ ask(id: number): Promise<void>; close(): Promise<void> }> {
  const host = await StdioHost.start({
    name: 'bench',
    command: COMMAND,
    cwd: ROOT,
    restart: { initialDelayMs: 100, maxDelayMs: 1000, resetAfterMs: 60_000 },
    log: { debug() {}, warn() {}, error() {} },
  });
  const url = new URL(host.url);
  const pool = new Pool(url.origin, { connections: 1 });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const init = await pool.request({
    path: url.pathname,
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: INIT }),
  });
  const sid = String(init.headers['mcp-session-id']);
  await init.body.text();
  const withSession = { ...headers, 'mcp-session-id': sid };
  return {
    async ask(id) {
      const res = await pool.request({ path: url.pathname, method: 'POST', headers: withSession, body: JSON.stringify(call(id)) });
      await res.body.text();
    },
    async close() {
      await pool.close();
      await host.close();
    },
  };
}

async function p50(ask: (id: number) => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 1; i <= CALLS; i++) {
    const t0 = process.hrtime.bigint();
    await ask(i);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const d = await direct();
const h = await hosted();
await p50(d.ask); // warm-up of both paths (JIT), unreported
await p50(h.ask);
const rows: Array<{ direct: number; hosted: number }> = [];
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which path goes first.
  const first = r % 2 === 0 ? await p50(d.ask) : await p50(h.ask);
  const second = r % 2 === 0 ? await p50(h.ask) : await p50(d.ask);
  rows.push(r % 2 === 0 ? { direct: first, hosted: second } : { direct: second, hosted: first });
}
d.close();
await h.close();
const fmt = (x: number) => x.toFixed(3);
console.log(`tools/call echo, ${CALLS} sequential calls per leg, ${ROUNDS} rounds (medians of per-round p50)`);
console.log(`direct over the pipe : ${fmt(median(rows.map((r) => r.direct)))} ms`);
console.log(`through the host     : ${fmt(median(rows.map((r) => r.hosted)))} ms`);
console.log(
  `added by the hop     : ${fmt(median(rows.map((r) => r.hosted - r.direct)))} ms (range ${fmt(Math.min(...rows.map((r) => r.hosted - r.direct)))}–${fmt(Math.max(...rows.map((r) => r.hosted - r.direct)))})`,
);
