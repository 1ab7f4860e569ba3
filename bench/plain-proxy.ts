/**
 * The baseline hop: a stock reverse proxy as a Node user would write it, `fastify` + `@fastify/http-proxy` with
 * their defaults (no logger), forwarding every request and header (mcp-session-id included) to one upstream. What
 * the gateway costs is read against this: a gateway leg at 1.0× it costs what any Node proxy costs.
 *
 *   node --import tsx bench/plain-proxy.ts UPSTREAM_MCP_URL [port]   → prints `listening <url>`
 */
import fastify from 'fastify';
import httpProxy from '@fastify/http-proxy';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: plain-proxy.ts UPSTREAM_MCP_URL [port]\n');
  process.exit(2);
}
const upstream = new URL(target);
const app = fastify();
// Same path as upstream's: the proxy maps /mcp → /mcp.
await app.register(httpProxy, { upstream: upstream.origin, prefix: upstream.pathname, rewritePrefix: upstream.pathname });
const address = await app.listen({ host: '127.0.0.1', port: Number(process.argv[3] ?? 0) });
process.stdout.write(`listening ${address}${upstream.pathname}\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)));
