/**
 * Access rules of a federated endpoint (docs/federation.md §Access), with real fixtures and both eras' clients on
 * loopback: two principals named by a trusted proxy's identity header (`auth.mode: header`) alternate 100 rounds each
 * of lists and calls. Each sees and calls only the tools its rules give it; a call of a tool it may not use is answered
 * exactly as a call of a name no member has (byte for byte, against a gateway where those names do not exist); no list
 * crosses principals, whether the members' lists are cached per principal or shared by every caller.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SignJWT } from 'jose';
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { envelope, MODERN, post } from '../helpers/modern.js';

const ROUNDS = Number(process.env.FED_ROUNDS ?? 100);
const IDENTITY = 'x-forwarded-user';
const AUTH = { mode: 'header', header: IDENTITY, trustedProxies: ['127.0.0.1/32'] };

const legacy = await startLegacyFixture({});
t.teardown(() => legacy.close());
const modern = await startModernFixture({ mode: 'modern' });
t.teardown(() => modern.close());

/**
 * Member `one` (2025-11-25): alice may use all it shows, nobody else anything. Member `two` (2026-07-28): bob may use
 * two of its three tools, nobody else anything. `tools`: what each member shows at all (the control gateway shows
 * fewer, so that the names denied here are names no member has there).
 */
function configOf(listCache: 'principal' | 'shared', tools: { one: string[]; two: string[] }) {
  return {
    upstreams: [
      {
        name: 'one',
        url: legacy.url,
        path: '/mcp',
        auth: AUTH,
        expose: { namespace: 'one', tools: { include: tools.one }, prompts: { exclude: ['*'] }, listCache },
        access: [{ when: { subjects: ['alice'] } }, { when: {}, deny: ['*'] }],
      },
      {
        name: 'two',
        url: modern.url,
        path: '/mcp',
        auth: AUTH,
        expose: { namespace: 'two', tools: { include: tools.two }, prompts: { exclude: ['*'] }, listCache },
        access: [
          { when: { subjects: ['bob'] }, allow: ['two_greet', 'two_test_simple_text'] },
          { when: {}, deny: ['*'] },
        ],
      },
    ],
  };
}

/** A raw 2026-07-28 request as `who`: the HTTP status, content type and body exactly as sent. */
async function raw(url: string, who: string, id: string, method: string, params: Record<string, unknown>) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    [IDENTITY]: who,
  };
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope() } }) });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The one JSON-RPC message of a JSON or SSE answer. */
function messageOf(r: { contentType: string; text: string }): any {
  if (!r.contentType.includes('text/event-stream')) return JSON.parse(r.text);
  return r.text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)))
    .at(-1);
}

/** An SDK 1.32.2 client (2025-11-25) whose every request carries the identity header. */
async function legacyClientAs(t: { teardown(fn: () => unknown): void }, url: string, who: string): Promise<Client> {
  const client = new Client({ name: `legacy-${who}`, version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { [IDENTITY]: who } } }));
  t.teardown(() => client.close());
  return client;
}

const PRINCIPALS = {
  alice: { sees: ['one_test_simple_text', 'one_greet'], calls: 'one_greet', denied: ['two_greet', 'two_test_simple_text'] },
  bob: { sees: ['two_test_simple_text', 'two_greet'], calls: 'two_greet', denied: ['one_greet', 'two_test_header_param'] },
} as const;

for (const listCache of ['principal', 'shared'] as const) {
  t.test(`listCache ${listCache}: ${ROUNDS} alternating rounds each; own tools only, denied = unknown byte for byte, no list crosses`, async (t) => {
    const gw = await startGateway(configOf(listCache, { one: ['greet', 'test_simple_text'], two: ['greet', 'test_simple_text', 'test_header_param'] }), { t });
    // The control: the same endpoint without greet and test_header_param anywhere, so the names denied above are
    // names no member has.
    const control = await startGateway(configOf(listCache, { one: ['test_simple_text'], two: ['test_simple_text'] }), { t });
    const clients = { alice: await legacyClientAs(t, gw.url, 'alice'), bob: await legacyClientAs(t, gw.url, 'bob') };

    const problems: string[] = [];
    const expect = (ok: boolean, what: string) => {
      if (!ok) problems.push(what);
    };
    let calls = 0;
    let denials = 0;
    const round = async (who: 'alice' | 'bob', i: number) => {
      const p = PRINCIPALS[who];
      const modernList = messageOf(await raw(gw.url, who, `${who}-list-${i}`, 'tools/list', {}));
      const modernNames = (modernList.result?.tools as Array<{ name: string }> | undefined)?.map((x) => x.name);
      expect(JSON.stringify(modernNames) === JSON.stringify(p.sees), `${who} #${i} modern tools/list: ${JSON.stringify(modernNames)}`);
      const legacyNames = (await clients[who].listTools()).tools.map((x) => x.name);
      expect(JSON.stringify(legacyNames) === JSON.stringify(p.sees), `${who} #${i} 2025-11-25 tools/list: ${JSON.stringify(legacyNames)}`);

      const call = await raw(gw.url, who, `${who}-call-${i}`, 'tools/call', { name: p.calls, arguments: { name: `${who}-${i}` } });
      const answer = messageOf(call);
      const called = call.status === 200 && JSON.stringify(answer.result?.content ?? null).includes(`Hello, ${who}-${i}!`);
      expect(called, `${who} #${i} call of ${p.calls}: ${call.status} ${call.text.slice(0, 300)}`);
      const legacyCall = await clients[who]
        .callTool({ name: p.calls, arguments: { name: `${who}-legacy-${i}` } })
        .catch((e: Error) => ({ content: e.message }));
      const legacyCalled = JSON.stringify(legacyCall.content).includes(`Hello, ${who}-legacy-${i}!`);
      expect(legacyCalled, `${who} #${i} 2025-11-25 call: ${JSON.stringify(legacyCall)}`);
      calls += Number(called) + Number(legacyCalled);

      for (const name of p.denied) {
        const id = `${who}-denied-${name}-${i}`;
        const params = { name, arguments: { name: who } };
        const [denied, unknown] = await Promise.all([raw(gw.url, who, id, 'tools/call', params), raw(control.url, who, id, 'tools/call', params)]);
        expect(
          denied.status === unknown.status && denied.contentType === unknown.contentType && denied.text === unknown.text,
          `${who} #${i} ${name}: denied ${denied.status} ${denied.contentType} ${denied.text} ≠ unknown ${unknown.status} ${unknown.contentType} ${unknown.text}`,
        );
        expect(
          denied.text === JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: `Unknown tool: ${name}` } }),
          `${who} #${i} ${name}: ${denied.text}`,
        );
        const legacyDenied = await clients[who].callTool({ name, arguments: {} }).then(
          (r) => JSON.stringify(r),
          (e: { code?: number; message?: string }) => `${e.code} ${e.message}`,
        );
        expect(legacyDenied === `-32602 MCP error -32602: Unknown tool: ${name}`, `${who} #${i} 2025-11-25 call of ${name}: ${legacyDenied}`);
        denials++;
      }
    };
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating, and the two principals' rounds interleaved with each other.
      await Promise.all([round('alice', i), round('bob', i)]);
    }
    t.strictSame(problems.slice(0, 20), [], `no round went otherwise (${problems.length} did)`);
    t.equal(calls, ROUNDS * 2 * 2, 'every allowed call succeeded, in both eras');
    t.equal(denials, ROUNDS * 2 * 2, 'every denied call was checked');
  });
}

t.test('two tokens of one JWT subject with other scopes: each its own list and calls (no list cached for the other)', async (t) => {
  const secret = 'a-jwt-secret-of-at-least-thirty-two-characters';
  const jwtAuth = { mode: 'jwt', secretEnv: 'FED_JWT_SECRET', issuer: 'https://issuer.test', audience: 'gateway' };
  const gw = await startGateway(
    {
      upstreams: [
        {
          name: 'one',
          url: legacy.url,
          path: '/mcp',
          auth: jwtAuth,
          expose: { namespace: 'one', tools: { include: ['greet', 'test_simple_text'] }, prompts: { exclude: ['*'] }, listCache: 'shared' },
          access: [{ when: { scopes: ['admin'] } }, { when: {}, deny: ['one_greet'] }],
        },
        {
          name: 'two',
          url: modern.url,
          path: '/mcp',
          auth: jwtAuth,
          expose: { namespace: 'two', tools: { include: ['test_simple_text'] }, prompts: { exclude: ['*'] } },
        },
      ],
    },
    { t, deps: { env: { FED_JWT_SECRET: secret } } },
  );
  const token = (scope: string) =>
    new SignJWT({ scope })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('carol')
      .setIssuer('https://issuer.test')
      .setAudience('gateway')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
  const admin = { authorization: `Bearer ${await token('mcp admin')}` };
  const plain = { authorization: `Bearer ${await token('mcp')}` };
  const names = async (headers: Record<string, string>) =>
    ((await post(gw.url, 'tools/list', {}, { headers })).body.result.tools as Array<{ name: string }>).map((x) => x.name);
  const greet = async (headers: Record<string, string>, id: string) =>
    (await post(gw.url, 'tools/call', { name: 'one_greet', arguments: { name: 'carol' } }, { headers, id })).body;

  t.strictSame(await names(admin), ['one_test_simple_text', 'one_greet', 'two_test_simple_text'], 'the admin token sees greet');
  t.match(JSON.stringify((await greet(admin, 'a1')).result?.content), /Hello, carol!/, 'and calls it');
  t.strictSame(await names(plain), ['one_test_simple_text', 'two_test_simple_text'], 'the same subject without the scope, right after: no greet');
  t.strictSame(await greet(plain, 'p1'), { jsonrpc: '2.0', id: 'p1', error: { code: -32602, message: 'Unknown tool: one_greet' } }, 'nor may it call it');
  t.match(JSON.stringify((await greet(admin, 'a2')).result?.content), /Hello, carol!/, 'the admin token still may');
  t.strictSame(await greet(plain, 'p2'), { jsonrpc: '2.0', id: 'p2', error: { code: -32602, message: 'Unknown tool: one_greet' } });
});
