/**
 * Gateway overhead on loopback: the same tools/call (`greet` on the legacy fixture) sent
 *  (a) directly, as a 2025-11-25 client on one initialized session, and
 *  (b) through the gateway, as a stateless 2026-07-28 request.
 * Bounded: a fixed number of calls per run, at a fixed concurrency. Not part of `npm test`.
 *
 *   npx tsx bench/overhead.ts [--calls 2000] [--concurrency 16]
 */
import { parseArgs } from 'node:util';
import { buildGateway } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { startLegacyFixture } from '../test/fixtures/legacy-server.js';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000' }, concurrency: { type: 'string', default: '16' } } });
const CALLS = Math.min(Number(values.calls), 100_000);
const CONCURRENCY = Math.min(Number(values.concurrency), 256);

async function run(label: string, one: () => Promise<void>): Promise<void> {
  for (let i = 0; i < 50; i++) await one(); // warm-up
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CALLS) {
        next++;
        const t0 = performance.now();
        await one();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]?.toFixed(2);
  console.log(`${label.padEnd(34)} ${String(Math.round(CALLS / seconds)).padStart(6)} calls/s   p50 ${q(0.5)} ms   p99 ${q(0.99)} ms`);
}

async function main(): Promise<void> {
  const fixture = await startLegacyFixture();
  const gateway = await buildGateway(parseConfig({ server: { port: 0 }, upstreams: [{ name: 'fixture', url: fixture.url }] }));
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gateway.app.server.address();
  const gatewayUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`;

  // (a) direct legacy session
  const init = await fetch(fixture.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  const sid = init.headers.get('mcp-session-id') as string;
  await init.text();
  const legacyHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(fixture.url, { method: 'POST', headers: legacyHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  let id = 1;
  await run('direct, 2025-11-25 session', async () => {
    const r = await fetch(fixture.url, { method: 'POST', headers: legacyHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'greet', arguments: { name: 'b' } } }) });
    if (!(await r.text()).includes('Hello, b!')) throw new Error('unexpected answer');
  });

  // (b) through the gateway, stateless modern
  const modernHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greet' };
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  await run('gateway, 2026-07-28 → 2025-11-25', async () => {
    const r = await fetch(gatewayUrl, { method: 'POST', headers: modernHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'greet', arguments: { name: 'b' }, _meta: meta } }) });
    if (!(await r.text()).includes('Hello, b!')) throw new Error('unexpected answer');
  });

  await gateway.close();
  await fixture.close();
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
