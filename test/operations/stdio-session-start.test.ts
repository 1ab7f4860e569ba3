/**
 * Session-start traffic of an stdio upstream: `@modelcontextprotocol/server-everything` (its stdio entry, run with
 * `node` directly) asks `roots/list` as soon as its session is initialized, a request tied to no call. The stdio host
 * answers it as the HTTP session pool does (src/upstream/legacy/pool.ts §Session-start traffic): no roots, at debug;
 * the gateway starts with no warn line, and the server got its answer.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { bounded, legacyClient } from '../helpers/era-clients.js';
import { LogLines } from '../helpers/log-lines.js';

const require = createRequire(import.meta.url);
const EVERYTHING = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js');

t.test('stdio server-everything: its session-start roots/list is answered (no roots), and nothing is logged at warn', async (t) => {
  const log = new LogLines();
  const config = { upstreams: [{ name: 'everything', path: '/mcp', command: [process.execPath, EVERYTHING, 'stdio'] }] };
  const { url } = await startGateway(config, { t, deps: { logger: { level: 'debug', stream: log.stream } as never } });

  // The era probe at start opens the one session (initialize, then notifications/initialized); the server then asks.
  const answered = await log.waitFor(
    (l) => l.upstream === 'everything' && l.method === 'roots/list' && /answered for the absent user/.test(String(l.msg)),
    "the server's session-start roots/list answered",
  );
  t.equal(answered.level, 20, 'at debug');

  // The server took the answer: its own tool reports the roots it holds (none), with no error from asking.
  const c = await legacyClient(url);
  t.teardown(() => c.close());
  const roots = await bounded(c.sdk.callTool({ name: 'get-roots-list', arguments: {} }), 'get-roots-list');
  t.notMatch(JSON.stringify(roots), /error|failed/i, 'the server holds an answer, not an error');

  t.same(
    log.lines.filter((l) => l.level >= 40).map((l) => ({ msg: l.msg, stderr: l.stderr, method: l.method })),
    [],
    'no warn line',
  );
});
