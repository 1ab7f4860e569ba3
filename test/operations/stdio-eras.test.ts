/**
 * An stdio upstream's era setting decides the handshake that opens its process (src/upstream/stdio/host.ts `opening`).
 * A dual-era server that fixes its era by the first message and cannot elicit on its 2026-07-28 side
 * (test/fixtures/stdio-first-message-server.ts, behaving like the Python SDK 2.x server): pinned `era: legacy`, it is
 * opened with `initialize`, clients of both eras list and call, and elicitation works for both (a 2026-07-28 client
 * gets it as an MRTR round). Left on `auto`, its 2026-07-28 side is what a 2026-07-28 client reaches, and elicitation
 * fails there. A pinned era whose handshake is refused makes `/readyz` 503 naming the upstream and the reason. The same
 * recipe against the real Python server (test/fixtures/python-dual-era-server.py) when the Python SDK is installed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { bounded, legacyClient } from '../helpers/era-clients.js';
import { LogLines } from '../helpers/log-lines.js';
import { askNameOverMrtr, post } from '../helpers/modern.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const FIRST_MESSAGE = [process.execPath, '--import', 'tsx', fixture('stdio-first-message-server.ts')];
const CAPS = { elicitation: {} };

const text = (result: any): string => String(result?.content?.[0]?.text);

/** A gateway with one stdio upstream at /mcp, listening on loopback port 0; closed at teardown. */
async function gatewayWith(t: Test, upstream: Record<string, unknown>): Promise<{ url: string; base: string; log: LogLines }> {
  const log = new LogLines();
  const config = { upstreams: [{ name: 'dual', path: '/mcp', cwd: ROOT, ...upstream }] };
  const { url, origin } = await startGateway(config, { t, deps: { logger: { level: 'info', stream: log.stream } as never } });
  return { url, base: origin, log };
}

/** The recipe, against one dual-era server command: both client eras list and call, elicitation included; ready. */
async function pinnedLegacyServes(t: Test, command: string[], tools: string[]): Promise<void> {
  const { url, base } = await gatewayWith(t, { command, era: 'legacy' });
  const listed = await post(url, 'tools/list', {}, { capabilities: CAPS });
  t.same(listed.body.result?.tools?.map((x: any) => x.name).sort(), tools, 'a 2026-07-28 client lists');
  t.equal(text((await post(url, 'tools/call', { name: 'echo', arguments: { text: 'modern' } }, { capabilities: CAPS })).body.result), 'modern');
  await askNameOverMrtr(t, url, CAPS);

  const legacy = await legacyClient(url);
  t.teardown(() => legacy.close());
  t.same((await bounded(legacy.sdk.listTools(), 'legacy tools/list')).tools.map((x) => x.name).sort(), tools, 'a 2025-11-25 client lists');
  t.equal(text(await bounded(legacy.sdk.callTool({ name: 'echo', arguments: { text: 'old' } }), 'legacy echo')), 'old');
  t.equal(text(await bounded(legacy.sdk.callTool({ name: 'ask_name', arguments: {} }), 'legacy ask_name')), 'Hello, Ada');
  t.same(
    legacy.asked.map((a) => a.message),
    ['What is your name?'],
    'the 2025-11-25 client was asked',
  );

  const ready = await fetch(`${base}/readyz`);
  t.equal(ready.status, 200, 'ready');
}

t.test('pinned era: legacy, a first-message dual-era server serves clients of both eras, elicitation included', (t) =>
  pinnedLegacyServes(t, FIRST_MESSAGE, ['ask_name', 'echo']),
);

t.test("left on auto, the same server's 2026-07-28 side is what a 2026-07-28 client reaches: it cannot elicit", async (t) => {
  const { url } = await gatewayWith(t, { command: FIRST_MESSAGE });
  const called = await post(url, 'tools/call', { name: 'ask_name', arguments: {} }, { capabilities: CAPS });
  t.notOk(called.body.result?.resultType === 'input_required', 'no MRTR round: the call went through to the 2026-07-28 side');
  t.match(JSON.stringify(called.body), /no back-channel/, "the server's own failure");
});

t.test('a pinned era whose handshake is refused: /readyz 503 naming the upstream and the reason; calls 503', async (t) => {
  // A 2026-07-28-only server (it refuses every 2025-era opening) pinned to 2025-11-25: no session can be opened.
  const { url, base, log } = await gatewayWith(t, {
    command: [process.execPath, '--import', 'tsx', fixture('stdio-modern-server.ts'), '--legacy', 'reject'],
    era: 'legacy',
  });
  const refused = await log.waitFor((l) => l.upstream === 'dual' && l.msg === 'upstream is down', 'the upstream found down');
  t.match(refused.reason, /^initialize refused \(-?\d+: .+\)$/, 'the log names the refused handshake');
  const ready = await fetch(`${base}/readyz`);
  const report = (await ready.json()) as any;
  t.equal(ready.status, 503);
  t.same(report.failed, ['upstream:dual']);
  t.equal(report.checks.upstreams[0]?.state, 'down');
  t.equal(report.checks.upstreams[0]?.reason, refused.reason, 'the reason, as the log says it');
  const health = (await (await fetch(`${base}/healthz`)).json()) as any;
  t.equal(health.upstreams[0]?.reason, refused.reason, '/healthz says the same');
  const call = await post(url, 'tools/list', {}, { capabilities: CAPS });
  t.equal(call.status, 503, 'a call is refused at once, not sent to a process that cannot serve it');
  t.match(call.body.error?.message, /dual is down/);
});

/**
 * The real Python SDK 2.x server. Run by `$MCP_PYTHON` (a Python with `mcp` 2.x installed; `.ci/run` sets it when it
 * could make one), else `python3`; skipped, saying why, when neither imports `mcp.server.mcpserver`.
 */
const python = (() => {
  const candidates = [process.env.MCP_PYTHON, 'python3'].filter((p): p is string => !!p);
  for (const p of candidates) {
    if (p.includes('/') && !existsSync(p)) continue;
    const r = spawnSync(p, ['-c', 'import mcp.server.mcpserver'], { stdio: 'ignore' });
    if (r.status === 0) return { python: p };
  }
  return { skip: `no Python with the mcp SDK 2.x (tried ${candidates.join(', ')}; set MCP_PYTHON to one)` };
})();

t.test(
  'pinned era: legacy, the real Python SDK 2.x server serves clients of both eras, elicitation included',
  python.skip === undefined ? {} : { skip: python.skip },
  (t) => pinnedLegacyServes(t, [python.python as string, fixture('python-dual-era-server.py')], ['ask_name', 'echo']),
);
