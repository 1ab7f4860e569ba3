// OAuth through the gateway (docs/deployment.md §OAuth and other paths): the upstream's discovery documents and configured paths
// pass through unchanged, an upstream's 401/403 reaches clients of both eras with its WWW-Authenticate byte for byte
// on the pass-through and the translated paths, and a client completes the upstream's authorization through the
// gateway. Real parts only: the OAuth fixture (a real MCP fixture behind a bearer check), real gateways on loopback.
import { createServer, get as httpGet, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Gateway } from '../../src/app.js';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { startOAuthUpstream, MCP_SCOPE, OAUTH_CLIENT, type OAuthUpstream } from '../fixtures/oauth-upstream.js';
import { startGateway as startListening } from '../helpers/gateway.js';
import { freePort } from '../helpers/redis-server.js';
import { post } from '../helpers/modern.js';

interface Running {
  gateway: Gateway;
  origin: string;
  close(): Promise<void>;
}

async function startGateway(upstreams: Array<Record<string, unknown>>, server: Record<string, unknown> = {}, logs?: string[]): Promise<Running> {
  const stream = new Writable({
    write(chunk, _enc, done) {
      logs?.push(
        ...String(chunk)
          .split('\n')
          .filter((l) => l.trim() !== ''),
      );
      done();
    },
  });
  return startListening({ server, upstreams }, { deps: { logger: logs ? { level: 'debug', stream } : false } });
}

async function fixture(t: Test, inner: 'legacy' | 'modern', jsonRpcErrorBody = false): Promise<OAuthUpstream> {
  const f = await startOAuthUpstream({ inner, jsonRpcErrorBody });
  t.teardown(() => f.close());
  return f;
}

/** What a response is, as the client sees it: status, the headers that matter, and the body bytes. */
async function snapshot(
  res: Response,
): Promise<{ status: number; contentType: string | null; cacheControl: string | null; wwwAuthenticate: string | null; body: string }> {
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    cacheControl: res.headers.get('cache-control'),
    wwwAuthenticate: res.headers.get('www-authenticate'),
    body: await res.text(),
  };
}

/** GETs a JSON document. */
async function jsonOf(url: string): Promise<any> {
  return (await fetch(url)).json();
}

const LEGACY_INIT = {
  jsonrpc: '2.0',
  id: 7,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'oauth-test', version: '1.0.0' } },
};

/** A 2025-11-25 `initialize` POST, as a legacy client opens. */
function legacyInitialize(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(LEGACY_INIT),
  });
}

/** A 2026-07-28 `tools/call`, as a modern client sends it. */
function modernCall(url: string, headers: Record<string, string> = {}) {
  return post(url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { id: 'call-1', headers });
}

/** Connects an SDK 1.32.2 client sending `authorization` on every request. */
async function legacySdk(t: Test, url: string, authorization: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'oauth-legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(url), { requestInit: { headers: { authorization } } }));
  t.teardown(() => client.close());
  return client;
}

t.test('the discovery documents reach the client unchanged: status, content type, cache control, body', async (t) => {
  const up = await fixture(t, 'legacy');
  // Mounted at /a while the upstream's MCP path is /mcp: the path-suffixed documents map one onto the other.
  const gw = await startGateway([{ name: 'oauth', path: '/a', url: up.url }]);
  t.teardown(() => gw.close());
  const pairs: Array<[string, string]> = [
    ['/.well-known/oauth-protected-resource/a', '/.well-known/oauth-protected-resource/mcp'],
    // The only HTTP upstream takes the root documents.
    ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource'],
    ['/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server'],
    // Not served by the upstream: its own 404 (text/plain), not the gateway's.
    ['/.well-known/oauth-authorization-server/a', '/.well-known/oauth-authorization-server/mcp'],
    ['/.well-known/openid-configuration', '/.well-known/openid-configuration'],
    ['/.well-known/openid-configuration/a', '/.well-known/openid-configuration/mcp'],
    ['/a/.well-known/openid-configuration', '/mcp/.well-known/openid-configuration'],
  ];
  for (const [through, direct] of pairs) {
    const viaGateway = await snapshot(await fetch(gw.origin + through));
    const fromUpstream = await snapshot(await fetch(up.origin + direct));
    t.same(viaGateway, fromUpstream, `${through} is the upstream's ${direct}`);
  }
  const prm = await snapshot(await fetch(`${gw.origin}/.well-known/oauth-protected-resource/a`));
  t.equal(prm.status, 200);
  t.equal(prm.cacheControl, 'public, max-age=3600');
  const missing = await snapshot(await fetch(`${gw.origin}/.well-known/openid-configuration`));
  t.equal(missing.status, 404);
  t.equal(missing.body, 'Not found', "the upstream's 404 body");
  t.same(
    up.seen.filter((s) => s.path.startsWith('/.well-known/oauth-protected-resource/')).map((s) => s.path),
    // Two through the gateway, one straight.
    ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/mcp'],
    'the gateway asked the mapped path',
  );
});

t.test('configured paths pass; unlisted ones are the gateway 404; the host check still applies', async (t) => {
  const up = await fixture(t, 'legacy');
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url, passthrough: { paths: ['/oauth/*'] } }]);
  t.teardown(() => gw.close());
  const info = await fetch(`${gw.origin}/oauth/info?x=1`);
  t.equal(info.status, 200);
  t.equal(info.headers.get('x-fixture'), 'oauth-info', "the upstream's headers");
  t.equal(await info.text(), 'oauth fixture info\n');
  // (Its MCP path sees the gateway's era probe at start as well, in the background.)
  t.equal(up.seen.filter((s) => s.path !== '/mcp').at(-1)?.path, '/oauth/info');

  for (const path of ['/other', '/oauthx', '/.well-known/jwks.json']) {
    const res = await fetch(gw.origin + path);
    t.equal(res.status, 404, `${path}: 404`);
    t.match(res.headers.get('content-type'), /application\/json/, `${path}: the gateway's own 404`);
    t.equal(((await res.json()) as any).error.message, 'Not found');
  }
  t.notOk(
    up.seen.some((s) => s.path === '/other' || s.path === '/oauthx'),
    'never reached the upstream',
  );

  // fetch will not set Host: node:http does.
  const asked = up.seen.filter((s) => s.path !== '/mcp').length;
  const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpGet(`${gw.origin}/.well-known/oauth-protected-resource/mcp`, { headers: { host: 'evil.example' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  t.equal(refused.status, 403, 'the host check comes first');
  t.equal(JSON.parse(refused.body).error.message, 'Forbidden: Host or Origin not allowed');
  t.equal(up.seen.filter((s) => s.path !== '/mcp').length, asked, 'the upstream was not asked');
});

t.test('a body over the limit is refused before the upstream sees it', async (t) => {
  const up = await fixture(t, 'legacy');
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url, passthrough: { paths: ['/oauth/*'] } }], { bodyLimitBytes: 1024 });
  t.teardown(() => gw.close());
  // Its non-MCP paths only: the MCP path sees the gateway's era probe at start, in the background.
  const before = up.seen.filter((s) => s.path !== '/mcp').length;
  // Streamed (chunked, no Content-Length): the limit holds while the body is read, not only on a declared length.
  const big = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(`grant_type=client_credentials&pad=${'x'.repeat(4096)}`));
      c.close();
    },
  });
  const res = await fetch(`${gw.origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: big,
    duplex: 'half',
  } as RequestInit);
  t.equal(res.status, 413);
  t.equal(((await res.json()) as any).error.message, 'Request body too large');
  t.equal(up.seen.filter((s) => s.path !== '/mcp').length, before, 'nothing reached the upstream');
});

t.test('a dead upstream gives the catalog error as JSON', async (t) => {
  const port = await freePort();
  const gw = await startGateway([{ name: 'gone', path: '/mcp', url: `http://127.0.0.1:${port}/mcp`, era: 'legacy', passthrough: { paths: ['/oauth/*'] } }]);
  t.teardown(() => gw.close());
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/oauth/token']) {
    const res = await fetch(gw.origin + path, {
      method: path === '/oauth/token' ? 'POST' : 'GET',
      ...(path === '/oauth/token' ? { body: 'grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}),
    });
    t.equal(res.status, 502, `${path}: 502`);
    t.match(res.headers.get('content-type'), /application\/json/);
    const body = (await res.json()) as any;
    t.equal(body.id, null);
    t.equal(body.error.code, -32603);
    t.equal(body.error.message, 'Upstream unavailable: upstream gone did not answer (ECONNREFUSED)');
    t.notMatch(body.error.message, String(port), 'the internal address is not told');
  }
});

t.test('an upstream that does not answer within its timeoutMs gives the catalog timeout as JSON', async (t) => {
  const held: ServerResponse[] = [];
  const silent = createServer((_req, res) => void held.push(res));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    silent.closeAllConnections();
    return new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`;
  const gw = await startGateway([{ name: 'silent', path: '/mcp', url, era: 'legacy', timeoutMs: 300, passthrough: { paths: ['/oauth/*'] } }]);
  t.teardown(() => gw.close());
  const res = await fetch(`${gw.origin}/.well-known/oauth-protected-resource/mcp`, { signal: AbortSignal.timeout(10_000) });
  t.equal(res.status, 504);
  t.match(res.headers.get('content-type'), /application\/json/);
  t.same(await res.json(), { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Upstream timed out' } });
  t.equal(held.length, 1, 'the upstream was asked once');
});

t.test('an upstream 401 reaches clients of both eras with its WWW-Authenticate unchanged', async (t) => {
  for (const inner of ['legacy', 'modern'] as const) {
    t.test(`${inner} upstream`, async (t) => {
      const up = await fixture(t, inner);
      // A modern-only upstream refuses the era probe too (401): its era is pinned (docs/deployment.md §OAuth and other paths).
      const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url, ...(inner === 'modern' ? { era: 'modern' } : {}) }]);
      t.teardown(() => gw.close());
      const url = `${gw.origin}/mcp`;
      const expected = up.challenge();

      // Legacy client: passed through to a legacy upstream; the legacy face (translated) before a modern one.
      const direct = await snapshot(await legacyInitialize(up.url));
      const legacy = await snapshot(await legacyInitialize(url));
      t.equal(legacy.status, 401, 'legacy client: 401');
      t.equal(legacy.wwwAuthenticate, expected, "legacy client: the upstream's challenge, byte for byte");
      if (inner === 'legacy') t.same(legacy, direct, 'pass-through: the whole answer is the upstream one');
      else {
        const body = JSON.parse(legacy.body);
        t.equal(body.id, 7, 'translated: a JSON-RPC error for the request');
        t.equal(body.error.code, -32600);
        t.same(body.error.data, { status: 401, wwwAuthenticate: expected }, 'translated: data carries the challenge');
      }

      // Modern client: translated over legacy sessions to a legacy upstream; passed through to a modern one.
      const modern = await modernCall(url);
      t.equal(modern.status, 401, 'modern client: 401');
      const modernHeader = (
        await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': 'test_simple_text',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 'call-2',
            method: 'tools/call',
            params: {
              name: 'test_simple_text',
              arguments: {},
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientCapabilities': {},
                'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
              },
            },
          }),
        })
      ).headers.get('www-authenticate');
      t.equal(modernHeader, expected, "modern client: the upstream's challenge, byte for byte");
      if (inner === 'legacy') {
        t.equal(modern.body.id, 'call-1', 'translated: the request id');
        t.same(modern.body.error.data, { status: 401, wwwAuthenticate: expected });
      } else {
        t.same(modern.body, { error: 'invalid_request', error_description: 'Authorization required' }, "pass-through: the upstream's body");
      }
    });
  }
});

t.test('invalid_token and insufficient_scope reach translated clients as 401 and 403 with the challenge', async (t) => {
  // A rule that wraps tools sends a legacy client through the legacy face even before a legacy upstream.
  const wrapped = { tools: { '*': { task: 'auto', afterMs: 60_000 } } };
  const cases = [
    ['legacy', 'modern', 'modern client over legacy sessions', {}],
    ['modern', 'legacy', 'legacy client through the legacy face', { era: 'modern' }],
    ['legacy', 'legacy', 'legacy client through the legacy face over legacy sessions (wrapped tools)', wrapped],
  ] as const;
  for (const [inner, client, what, extra] of cases) {
    t.test(what, async (t) => {
      // A JSON-RPC error in the 401/403 body does not hide the status.
      const up = await fixture(t, inner, true);
      const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url, ...extra }]);
      t.teardown(() => gw.close());
      const url = `${gw.origin}/mcp`;
      const send = async (authorization: string) => {
        if (client === 'modern') {
          const r = await fetch(url, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json',
              'mcp-protocol-version': '2026-07-28',
              'mcp-method': 'tools/call',
              'mcp-name': 'test_simple_text',
              authorization,
            },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 9,
              method: 'tools/call',
              params: {
                name: 'test_simple_text',
                arguments: {},
                _meta: {
                  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                  'io.modelcontextprotocol/clientCapabilities': {},
                  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
                },
              },
            }),
          });
          return { status: r.status, header: r.headers.get('www-authenticate'), body: (await r.json()) as any };
        }
        const r = await legacyInitialize(url, { authorization });
        return { status: r.status, header: r.headers.get('www-authenticate'), body: (await r.json()) as any };
      };
      const directInvalid = (await legacyInitialize(up.url, { authorization: 'Bearer nope' })).headers.get('www-authenticate');
      const invalid = await send('Bearer nope');
      t.equal(invalid.status, 401);
      t.equal(invalid.header, directInvalid, 'invalid_token challenge unchanged');
      t.match(invalid.header, /error="invalid_token"/);
      t.equal(invalid.body.id, client === 'modern' ? 9 : 7);

      const weak = `Bearer ${up.issue('profile')}`;
      const directWeak = (await legacyInitialize(up.url, { authorization: weak })).headers.get('www-authenticate');
      const scoped = await send(weak);
      t.equal(scoped.status, 403);
      t.equal(scoped.header, directWeak, 'insufficient_scope challenge unchanged');
      t.match(scoped.header, /error="insufficient_scope"/);
      t.equal(scoped.body.error.message, 'Forbidden: the upstream refused these credentials');
      t.same(scoped.body.error.data, { status: 403, wwwAuthenticate: directWeak });
    });
  }
});

t.test('a client completes the upstream authorization through the gateway, then calls a tool', async (t) => {
  for (const inner of ['legacy', 'modern'] as const) {
    t.test(`${inner} upstream`, async (t) => {
      const up = await fixture(t, inner);
      const gw = await startGateway([
        { name: 'oauth', path: '/a', url: up.url, passthrough: { paths: ['/oauth/*'] }, ...(inner === 'modern' ? { era: 'modern' } : {}) },
      ]);
      t.teardown(() => gw.close());
      // Deployed behind the gateway, the upstream names the gateway's address in its documents and challenges.
      up.advertise(gw.origin, '/a');
      const url = `${gw.origin}/a`;

      // 1. The MCP request without a token: 401 naming the protected-resource metadata.
      const first = await legacyInitialize(url);
      t.equal(first.status, 401);
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(first.headers.get('www-authenticate') ?? '')?.[1];
      t.equal(metadataUrl, `${gw.origin}/.well-known/oauth-protected-resource/a`);
      // 2. The metadata names the resource and its authorization server (both the gateway's addresses).
      const prm = await jsonOf(metadataUrl as string);
      t.equal(prm.resource, url);
      const issuer = prm.authorization_servers[0];
      // 3. RFC 8414 metadata of the authorization server (issuer without a path: the root document).
      const asm = await jsonOf(`${issuer}/.well-known/oauth-authorization-server`);
      t.equal(asm.issuer, gw.origin);
      // 4. The token endpoint, a configured path, with client_credentials (client_secret_basic).
      const tokenRes = await fetch(asm.token_endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${OAUTH_CLIENT.id}:${OAUTH_CLIENT.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: MCP_SCOPE, resource: prm.resource }).toString(),
      });
      t.equal(tokenRes.status, 200);
      t.equal(tokenRes.headers.get('cache-control'), 'no-store');
      const { access_token: accessToken } = (await tokenRes.json()) as { access_token: string };
      t.equal(up.seen.find((s) => s.path === '/oauth/token')?.authorization?.startsWith('Basic '), true, "the client's Authorization went through");

      // 5. Both eras call a tool with the token.
      const authorization = `Bearer ${accessToken}`;
      const modern = await modernCall(url, { authorization });
      t.equal(modern.status, 200, 'modern client: 200');
      t.match(modern.body.result.content, [{ type: 'text' }], 'modern client: the tool answered');
      const client = await legacySdk(t, url, authorization);
      const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
      t.match(result.content, [{ type: 'text' }], 'legacy client: the tool answered');
      t.ok(
        up.seen.filter((s) => s.path === '/mcp').every((s) => s.authorization === undefined || s.authorization === authorization),
        'the upstream saw only the client token',
      );
    });
  }
});

t.test('passthrough config is checked: syntax, overlaps, the root documents', async (t) => {
  const bad = (upstreams: Array<Record<string, unknown>>, pattern: RegExp, what: string) => {
    t.throws(() => parseConfig({ upstreams }), ConfigError, what);
    try {
      parseConfig({ upstreams });
    } catch (e) {
      t.match(String((e as Error).message), pattern, what);
    }
  };
  const u = (name: string, path: string, passthrough: Record<string, unknown> = {}) => ({ name, path, url: `http://127.0.0.1:1${path}`, passthrough });
  bad([u('a', '/mcp', { paths: ['/oauth*'] })], /passthrough\.paths\.0/, 'a star that is not a final /*');
  bad([u('a', '/mcp', { paths: ['/oauth/../mcp'] })], /no "\." or "\.\." segments/, 'dot segments');
  bad([u('a', '/mcp', { paths: ['oauth'] })], /passthrough\.paths\.0/, 'not absolute');
  bad([u('a', '/mcp', { paths: ['/mcp'] })], /overlaps the MCP endpoint of upstreams\.0/, 'the MCP path');
  bad([u('a', '/mcp', { paths: ['/*'] })], /overlaps/, 'everything');
  bad([u('a', '/x/mcp', { paths: ['/x/*'] })], /overlaps the MCP endpoint/, 'a prefix over the MCP path');
  bad([u('a', '/mcp', { paths: ['/healthz'] })], /overlaps the gateway's \/healthz/, '/healthz');
  bad([u('a', '/mcp', { paths: ['/metrics'] })], /overlaps the gateway's \/metrics/, '/metrics');
  bad([u('a', '/mcp', { paths: ['/readyz/*'] })], /overlaps the gateway's \/readyz/, '/readyz');
  t.throws(
    () => parseConfig({ server: { metrics: { path: '/stats' } }, upstreams: [u('a', '/mcp', { paths: ['/stats'] })] }),
    /overlaps the gateway's \/stats/,
    'a configured metrics path',
  );
  bad([u('a', '/mcp', { paths: ['/.well-known/*'] })], /OAuth discovery documents/, 'the well-known documents');
  bad([u('a', '/mcp', { paths: ['/.well-known/oauth-protected-resource/x'] })], /OAuth discovery documents/, 'a well-known document');
  bad(
    [u('a', '/a', { paths: ['/oauth/*'] }), u('b', '/b', { paths: ['/oauth/token'] })],
    /overlaps upstreams\.0\.passthrough\.paths\.0/,
    'two upstreams on one path',
  );
  bad([u('a', '/a', { wellKnownRoot: true }), u('b', '/b', { wellKnownRoot: true })], /already upstreams\.0's/, 'two upstreams take the root documents');
  bad([u('a', '/', {}), u('b', '/b', { wellKnownRoot: true })], /already upstreams\.0's/, 'one mounted at / takes them already');

  const ok = parseConfig({ upstreams: [u('a', '/a', { paths: ['/oauth/token', '/.well-known/jwks.json', '/authorize/*'] }), u('b', '/b')] });
  t.same(ok.upstreams[0]?.passthrough.paths, ['/oauth/token', '/.well-known/jwks.json', '/authorize/*']);
  t.same(ok.upstreams[1]?.passthrough, { paths: [] }, 'default: no extra paths');
});

t.test("with two upstreams the root documents are nobody's unless one claims them", async (t) => {
  const one = await fixture(t, 'legacy');
  const two = await fixture(t, 'legacy');
  const gw = await startGateway([
    { name: 'one', path: '/one', url: one.url },
    { name: 'two', path: '/two', url: two.url },
  ]);
  t.teardown(() => gw.close());
  const root = await fetch(`${gw.origin}/.well-known/oauth-protected-resource`);
  t.equal(root.status, 404);
  t.match(root.headers.get('content-type'), /application\/json/, "the gateway's 404");
  await root.text();
  two.advertise('http://two.example');
  one.advertise('http://one.example');
  t.equal((await jsonOf(`${gw.origin}/.well-known/oauth-protected-resource/one`)).resource, 'http://one.example/mcp');
  t.equal((await jsonOf(`${gw.origin}/.well-known/oauth-protected-resource/two`)).resource, 'http://two.example/mcp');

  const claimed = await startGateway([
    { name: 'one', path: '/one', url: one.url },
    { name: 'two', path: '/two', url: two.url, passthrough: { wellKnownRoot: true } },
  ]);
  t.teardown(() => claimed.close());
  t.equal((await jsonOf(`${claimed.origin}/.well-known/oauth-protected-resource`)).resource, 'http://two.example', 'the claimant answers');
});

t.test('an upstream that refuses the era probe is no warning; tokens are never logged', async (t) => {
  const up = await fixture(t, 'modern');
  const logs: string[] = [];
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url }], {}, logs);
  t.teardown(() => gw.close());
  const token = `Bearer ${up.issue('profile')}`;
  const res = await legacyInitialize(`${gw.origin}/mcp`, { authorization: token });
  t.equal(res.status, 403, "the upstream's refusal");
  await res.text();
  const lines = logs.map((l) => JSON.parse(l));
  t.notOk(
    lines.some((l) => l.level >= 40 && /era probe/.test(String(l.msg))),
    'no warning: the refusal is an expected state',
  );
  t.ok(
    lines.some((l) => String(l.msg).startsWith('the upstream refused the era probe for want of credentials')),
    'said at debug',
  );
  const passed = await fetch(`${gw.origin}/.well-known/oauth-protected-resource/mcp?code=secret-code`);
  t.equal(passed.status, 200);
  await passed.text();
  const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'passed-through request');
  t.match(line, { method: 'GET', route: '/.well-known/oauth-protected-resource/mcp', upstream: 'oauth', status: 200 }, 'one operator line per passed request');
  t.notOk(
    logs.some((l) => l.includes(token.slice(7)) || l.includes('secret-code')),
    'neither the token nor the query is in any log line',
  );
});

/** A 2026-07-28 `tools/call` as a raw Response (its headers are what the test reads). */
function modernFetch(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'test_simple_text',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'call-3',
      method: 'tools/call',
      params: {
        name: 'test_simple_text',
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
        },
      },
    }),
  });
}

/** The one upstream's entry of /healthz. */
async function healthOf(origin: string): Promise<any> {
  return ((await jsonOf(`${origin}/healthz`)) as any).upstreams[0];
}

t.test('era auto before a 2026-07-28 OAuth upstream: the eras are learned with the first token, modern clients pass through', async (t) => {
  const up = await fixture(t, 'modern');
  const logs: string[] = [];
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url }], {}, logs);
  t.teardown(() => gw.close());
  const url = `${gw.origin}/mcp`;
  const expected = up.challenge();

  // Without a token: the upstream's own 401 and challenge, for both eras; the eras stay unknown.
  const anonymousModern = await modernFetch(url);
  t.equal(anonymousModern.status, 401, 'modern client without a token: 401');
  t.equal(anonymousModern.headers.get('www-authenticate'), expected, "modern client: the upstream's challenge unchanged");
  await anonymousModern.text();
  const direct = await snapshot(await legacyInitialize(up.url));
  t.same(await snapshot(await legacyInitialize(url)), direct, "legacy client without a token: the upstream's whole 401");
  const before = await healthOf(gw.origin);
  t.equal(before.state, 'up', 'refused is reachable');
  t.equal(before.eras, 'refused', '/healthz says the eras are not known');
  t.notOk('modern' in before || 'legacy' in before, '/healthz does not guess the eras');
  const ready = (await jsonOf(`${gw.origin}/readyz`)) as any;
  t.same(ready.checks.upstreams, [{ name: 'oauth', state: 'up' }], 'readiness: it answered');

  // The first caller with a token: the probe is asked with it, and the answer holds for everyone.
  const token = up.issue(MCP_SCOPE);
  const authorization = `Bearer ${token}`;
  const mark = up.seen.length;
  const first = await modernCall(url, { authorization });
  t.equal(first.status, 200, 'modern client with a token: 200');
  t.match(first.body.result.content, [{ type: 'text' }], 'the tool answered');
  const afterFirst = up.seen.slice(mark).filter((s) => s.path === '/mcp');
  t.same(
    afterFirst.filter((s) => s.rpc === 'server/discover').map((s) => s.authorization),
    [authorization],
    'one probe, with the caller token',
  );
  // The legacy client without a token above needed the 2025-11-25 side: the credentialed probe asks it once, marked.
  t.same(
    afterFirst.filter((s) => s.rpc === 'initialize').map((s) => s.authorization),
    [authorization],
    "one initialize, the probe's, for the 2025-11-25 client that came before",
  );
  t.same(
    afterFirst.filter((s) => s.rpc === 'tools/call').map((s) => s.authorization),
    [authorization],
    'the call passed through',
  );
  const health = await healthOf(gw.origin);
  t.match(health, { state: 'up', modern: true, legacy: false }, '/healthz: modern after the first credentialed call, its 2025-11-25 side refused');
  t.notOk('eras' in (await healthOf(gw.origin)), 'no longer refused');

  // Learned once: the next modern call (another token) goes straight through, without a probe.
  const other = `Bearer ${up.issue(MCP_SCOPE)}`;
  const mark2 = up.seen.length;
  t.equal((await modernCall(url, { authorization: other })).status, 200);
  t.same(
    up.seen
      .slice(mark2)
      .filter((s) => s.path === '/mcp')
      .map((s) => s.rpc),
    ['tools/call'],
    'passed through, nothing else asked',
  );

  // A legacy client with a token: through the legacy face over the modern client.
  const client = await legacySdk(t, url, authorization);
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'legacy client: the tool answered');
  // A modern client without a token, now that the eras are known: passed through, the upstream's whole 401.
  t.same(await snapshot(await modernFetch(url)), await snapshot(await modernFetch(up.url)), "the upstream's 401 and challenge, unchanged");
  t.notOk(
    logs.some((l) => l.includes(token) || l.includes(other.slice(7))),
    'no token in any log line',
  );
});

t.test('era auto before a 2025-11-25 OAuth upstream: both eras work with a token', async (t) => {
  const up = await fixture(t, 'legacy');
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url }]);
  t.teardown(() => gw.close());
  const url = `${gw.origin}/mcp`;
  const authorization = `Bearer ${up.issue(MCP_SCOPE)}`;
  const modern = await modernCall(url, { authorization });
  t.equal(modern.status, 200, 'modern client: 200 (over legacy sessions)');
  t.match(modern.body.result.content, [{ type: 'text' }]);
  t.match(await healthOf(gw.origin), { state: 'up', modern: false, legacy: true }, 'learned: 2025-11-25');
  const client = await legacySdk(t, url, authorization);
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'legacy client: the tool answered');
  const anonymous = await modernFetch(url);
  t.equal(anonymous.status, 401);
  t.equal(anonymous.headers.get('www-authenticate'), up.challenge(), "without a token: the upstream's challenge");
  await anonymous.text();
});

t.test('a bad token is refused with the challenge and does not turn into a probe flood', async (t) => {
  const up = await fixture(t, 'modern');
  const gw = await startGateway([{ name: 'oauth', path: '/mcp', url: up.url }]);
  t.teardown(() => gw.close());
  const url = `${gw.origin}/mcp`;
  // The anonymous probe first (refused), so that every bad-token request meets the refused state.
  await (await legacyInitialize(url)).text();
  const bad = 'Bearer not-a-token';
  const send = async () => {
    const r = await legacyInitialize(url, { authorization: bad });
    await r.text();
    return { status: r.status, header: r.headers.get('www-authenticate') };
  };
  const answers = [...(await Promise.all(Array.from({ length: 10 }, send)))];
  for (let i = 0; i < 10; i++) answers.push(await send());
  t.ok(
    answers.every((a) => a.status === 401 && /error="invalid_token"/.test(a.header ?? '')),
    "every caller: the upstream's 401 with its invalid_token challenge",
  );
  const probes = up.seen.filter((s) => s.rpc === 'server/discover' && s.authorization === bad).length;
  t.ok(probes >= 1, 'the bad token was tried once');
  t.ok(probes < 10, `20 requests, ${probes} probe(s): joined and spaced, not one per request`);
  t.equal((await healthOf(gw.origin)).eras, 'refused', 'the eras stay unknown');
});
