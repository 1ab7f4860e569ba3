/**
 * Authentication modes per upstream (docs/security.md §Authentication): a real gateway on loopback port 0 in front of
 * the real legacy fixture server. JWT tokens and keys are made here with jose; the JWKS is served by a small
 * node:http server on loopback. Covers the modern face, the legacy face's pass-through (a 2025-11-25 `initialize`),
 * the principal's keyed hash (in the store and in an MRTR requestState), the header mode's trusted addresses and the
 * none mode's retention cap.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey } from 'jose';
import type { Gateway } from '../../src/app.js';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { Authenticator } from '../../src/proxy/index.js';
import type { Identity } from '../../src/proxy/auth.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import type { AuditEvent, AuditLog } from '../../src/tasks/index.js';
import type { AuditFields } from '../../src/tasks/audit.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { startRelay } from '../helpers/relay.js';
import { createTask, DECLARING, getTask } from '../helpers/task-helpers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'mcp-tasks-gateway';
const REALM = 'Bearer realm="mcp-tasks-gateway"';
/** Every request of these tests gives up after this long (a failure, never a pass). */
const BOUND = () => AbortSignal.timeout(10_000);

/** An audit trail that keeps what it is told. */
function recordingAudit(): AuditLog & { events: Array<[AuditEvent, AuditFields]> } {
  const events: Array<[AuditEvent, AuditFields]> = [];
  return { events, record: (e, f) => void events.push([e, f]) };
}

interface Started {
  url: string;
  gateway: Gateway;
  store: MemoryTaskStore;
  audit: ReturnType<typeof recordingAudit>;
  logs: string[];
}

/** A gateway in front of `upstreamUrl` (default: a fresh legacy fixture) with `auth` on its one upstream. */
async function gatewayWith(
  t: Teardown,
  auth: Record<string, unknown> | undefined,
  opts: { tools?: Record<string, unknown>; stateKey?: Uint8Array; env?: NodeJS.ProcessEnv; upstreamUrl?: string } = {},
): Promise<Started> {
  let url = opts.upstreamUrl;
  if (!url) {
    const fixture = await startLegacyFixture();
    t.teardown(() => fixture.close());
    url = fixture.url;
  }
  const cfg = { upstreams: [{ name: 'fixture', path: '/mcp', url, ...(auth ? { auth } : {}), ...(opts.tools ? { tools: opts.tools } : {}) }] };
  const store = new MemoryTaskStore({ maxTasks: 1000 });
  const audit = recordingAudit();
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const { url: gatewayUrl, gateway } = await startGateway(cfg, {
    deps: { logger: { level: 'warn', stream }, store, audit, stateKey: opts.stateKey ?? randomBytes(32), ...(opts.env ? { env: opts.env } : {}) },
  });
  t.teardown(async () => {
    await gateway.close();
    await store.close();
  });
  return { url: gatewayUrl, gateway, store, audit, logs };
}

/** A legacy (2025-11-25) initialize: this upstream speaks that era, so it passes through. */
function legacyInitialize(url: string, headers: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'init-1',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-legacy', version: '1' } },
    }),
    signal: BOUND(),
  });
}

/** Checks one 401: the challenge, and a JSON-RPC error body carrying the request's id. */
function isRefusal(t: Test, r: { status: number; body: any }, challenge: string | undefined, id: unknown, what: string): void {
  t.equal(r.status, 401, `${what}: 401`);
  t.equal(r.body?.jsonrpc, '2.0', `${what}: a JSON-RPC body`);
  t.equal(r.body?.id, id, `${what}: the request's id`);
  t.equal(r.body?.error?.code, -32600, `${what}: the catalog's code`);
  if (challenge !== undefined) t.equal((r as any).challenge, challenge, `${what}: WWW-Authenticate`);
}

/** A modern request whose reply keeps its WWW-Authenticate header. */
async function discoverRaw(url: string, authorization: string | undefined, id: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'server/discover',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'auth-test', version: '1' },
        },
      },
    }),
    signal: BOUND(),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, challenge: res.headers.get('www-authenticate') ?? undefined };
}

interface Keys {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

async function es256(): Promise<Keys> {
  return generateKeyPair('ES256', { extractable: true });
}

/** A token with sensible claims; `change` adjusts the builder (expiry, issuer, …). */
function token(
  key: CryptoKey | Uint8Array,
  opts: { sub?: string; iss?: string; aud?: string; alg?: string; kid?: string; change?: (j: SignJWT) => SignJWT } = {},
): Promise<string> {
  let j = new SignJWT({ scope: 'mcp' })
    .setProtectedHeader({ alg: opts.alg ?? 'ES256', ...(opts.kid ? { kid: opts.kid } : {}) })
    .setIssuer(opts.iss ?? ISSUER)
    .setAudience(opts.aud ?? AUDIENCE)
    .setSubject(opts.sub ?? 'alice')
    .setIssuedAt()
    .setExpirationTime('5m');
  if (opts.change) j = opts.change(j);
  return j.sign(key);
}

const now = () => Math.floor(Date.now() / 1000);

t.test(
  'jwt with a static public key: a valid token is served; expired, not-yet-valid, wrong issuer, wrong audience, bad signature and alg none are refused',
  async (t) => {
    const keys = await es256();
    const other = await es256();
    const pem = await exportSPKI(keys.publicKey);
    const g = await gatewayWith(t, { mode: 'jwt', publicKey: pem, issuer: ISSUER, audience: AUDIENCE });

    const good = await token(keys.privateKey);
    const ok = await discoverRaw(g.url, `Bearer ${good}`, 'ok-1');
    t.equal(ok.status, 200, 'a valid token is served');
    t.ok(ok.body?.result, 'a discover result');
    const again = await discoverRaw(g.url, `Bearer ${good}`, 'ok-2');
    t.equal(again.status, 200, 'and again (the remembered verification)');

    const invalid = `${REALM}, error="invalid_token", error_description="invalid"`;
    const cases: Array<[string, string | undefined, string | undefined]> = [
      ['no token', undefined, REALM],
      ['not a bearer credential', `Basic ${Buffer.from('a:b').toString('base64')}`, REALM],
      [
        'expired',
        `Bearer ${await token(keys.privateKey, { change: (j) => j.setIssuedAt(now() - 3600).setExpirationTime(now() - 120) })}`,
        `${REALM}, error="invalid_token", error_description="expired"`,
      ],
      ['not yet valid', `Bearer ${await token(keys.privateKey, { change: (j) => j.setNotBefore(now() + 600) })}`, invalid],
      ['wrong issuer', `Bearer ${await token(keys.privateKey, { iss: 'https://evil.test' })}`, invalid],
      ['wrong audience', `Bearer ${await token(keys.privateKey, { aud: 'someone-else' })}`, invalid],
      ['bad signature (another key)', `Bearer ${await token(other.privateKey)}`, invalid],
      ['tampered payload', `Bearer ${tamper(good)}`, invalid],
      [
        'alg none',
        `Bearer ${new UnsecuredJWT({ scope: 'mcp' }).setIssuer(ISSUER).setAudience(AUDIENCE).setSubject('alice').setIssuedAt().setExpirationTime('5m').encode()}`,
        invalid,
      ],
      // RFC 8725 §2.1: an HMAC over the public key text must not verify against that public key.
      ['HS256 keyed with the public key (algorithm confusion)', `Bearer ${await token(new TextEncoder().encode(pem), { alg: 'HS256' })}`, invalid],
      [
        'no sub',
        `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('5m').sign(keys.privateKey)}`,
        invalid,
      ],
      ['garbage', 'Bearer not.a.jwt', invalid],
    ];
    for (const [what, authorization, challenge] of cases) {
      const r = await discoverRaw(g.url, authorization, `id-${what}`);
      isRefusal(t, r, challenge, `id-${what}`, what);
    }
    t.match((await discoverRaw(g.url, cases[2]?.[1], 'x')).body.error.message, /expired/, 'the message names the class (expired)');

    // The legacy face's pass-through is behind the same hook.
    const legacyRefused = await legacyInitialize(g.url, {});
    t.equal(legacyRefused.status, 401, 'a legacy initialize without a token: 401');
    t.equal(legacyRefused.headers.get('www-authenticate'), REALM);
    t.match(await legacyRefused.json(), { jsonrpc: '2.0', id: 'init-1', error: { code: -32600 } });
    const legacyOk = await legacyInitialize(g.url, { authorization: `Bearer ${good}` });
    t.equal(legacyOk.status, 200, 'a legacy initialize with a valid token passes through');
    t.ok(legacyOk.headers.get('mcp-session-id'), 'the upstream session');
    await legacyOk.text();

    const reasons = g.audit.events.filter(([e]) => e === 'auth.failed').map(([, f]) => f.reason);
    t.ok(reasons.includes('missing') && reasons.includes('expired') && reasons.includes('invalid'), 'auth failures are audited by class');
    t.ok(
      g.audit.events.every(([, f]) => f.upstream === 'fixture' && !JSON.stringify(f).includes(good)),
      'with the upstream, never the token',
    );
  },
);

/** The same token with one payload character changed. */
function tamper(jwt: string): string {
  const [h, p, s] = jwt.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  claims.sub = 'mallory';
  return `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
}

t.test('jwt against a JWKS URL: keys by kid; an unknown key is refused; an unreachable key set is 503, not 401', async (t) => {
  const keys = await es256();
  const stranger = await es256();
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  let fetched = 0;
  const jwks = http.createServer((_req, res) => {
    fetched++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => jwks.close(() => resolve())));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  const g = await gatewayWith(t, { mode: 'jwt', jwksUrl, issuer: [ISSUER, 'https://other.test'], audience: AUDIENCE, clockToleranceSec: 5 });

  const ok = await discoverRaw(g.url, `Bearer ${await token(keys.privateKey, { kid: 'k1' })}`, 'j1');
  t.equal(ok.status, 200, 'a token signed by the key set is served');
  t.ok(fetched >= 1, 'the key set was fetched');
  const second = await discoverRaw(g.url, `Bearer ${await token(keys.privateKey, { kid: 'k1', iss: 'https://other.test', sub: 'bob' })}`, 'j2');
  t.equal(second.status, 200, 'either configured issuer');
  const unknownKid = await discoverRaw(g.url, `Bearer ${await token(stranger.privateKey, { kid: 'k2' })}`, 'j3');
  isRefusal(t, unknownKid as any, `${REALM}, error="invalid_token", error_description="invalid"`, 'j3', 'unknown kid');
  const wrongKey = await discoverRaw(g.url, `Bearer ${await token(stranger.privateKey, { kid: 'k1' })}`, 'j4');
  isRefusal(t, wrongKey as any, `${REALM}, error="invalid_token", error_description="invalid"`, 'j4', 'right kid, wrong key');

  // The issuer's key set unreachable: the gateway cannot tell, so it does not blame the token.
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/jwks.json`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const dead = await gatewayWith(t, { mode: 'jwt', jwksUrl: deadUrl, issuer: ISSUER, audience: AUDIENCE });
  const r = await discoverRaw(dead.url, `Bearer ${await token(keys.privateKey, { kid: 'k1' })}`, 'd1');
  t.equal(r.status, 503, 'key set unreachable: 503');
  t.match(r.body, { jsonrpc: '2.0', id: 'd1', error: { code: -31003, data: { retryAfterMs: 5000 } } });
});

t.test('jwt with an HMAC secret from the environment; forward: false keeps the token from the upstream', async (t) => {
  const secret = randomBytes(32).toString('base64url');
  const relay = await startRelay(t);
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  relay.setTarget(fixture.url);
  const g = await gatewayWith(
    t,
    { mode: 'jwt', secretEnv: 'TEST_JWT_SECRET', issuer: ISSUER, audience: AUDIENCE, forward: false },
    { env: { TEST_JWT_SECRET: secret }, upstreamUrl: relay.url },
  );
  const hs = await token(new TextEncoder().encode(secret), { alg: 'HS256' });
  const r = await post(g.url, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } }, { headers: { authorization: `Bearer ${hs}` } });
  t.equal(r.status, 200, 'an HS256 token with the configured secret is served');
  t.equal(r.body?.result?.content?.[0]?.text, 'Hello, Ada!');
  const init = await legacyInitialize(g.url, { authorization: `Bearer ${hs}` });
  t.equal(init.status, 200, 'and passes through');
  await init.text();
  t.ok(relay.seen.length > 0, 'the upstream was reached');
  t.ok(
    relay.seen.every((s) => s.headers.authorization === undefined),
    'the upstream never saw the token (modern face and pass-through)',
  );
  const es = await es256();
  const asym = await discoverRaw(g.url, `Bearer ${await token(es.privateKey)}`, 'a1');
  t.equal(asym.status, 401, 'an asymmetric token is not on the HMAC allow-list');

  await t.rejects(
    gatewayWith(t, { mode: 'jwt', secretEnv: 'UNSET_JWT_SECRET', issuer: ISSUER, audience: AUDIENCE }, { env: {}, upstreamUrl: fixture.url }),
    ConfigError,
    'a missing secret is a configuration error at start',
  );
});

t.test('jwt forwards the token upstream by default, and the principal is iss + sub (tasks of one sub are unknown to another)', async (t) => {
  const keys = await es256();
  const relay = await startRelay(t);
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  relay.setTarget(fixture.url);
  const g = await gatewayWith(
    t,
    { mode: 'jwt', publicKey: JSON.stringify(await exportJWK(keys.publicKey)), issuer: ISSUER, audience: AUDIENCE },
    { upstreamUrl: relay.url, tools: { greet: { task: 'always' } } },
  );
  const alice = `Bearer ${await token(keys.privateKey, { sub: 'alice' })}`;
  const aliceAgain = `Bearer ${await token(keys.privateKey, { sub: 'alice', change: (j) => j.setJti('another') })}`;
  const bob = `Bearer ${await token(keys.privateKey, { sub: 'bob' })}`;
  const task = await createTask(g.url, 'greet', { name: 'Ada' }, { headers: { authorization: alice } });
  t.ok(
    relay.seen.some((s) => s.headers.authorization === alice),
    'the token reached the upstream',
  );
  const record = await g.store.get(task.taskId);
  t.match(record?.principal, /^j:[A-Za-z0-9_-]{43}$/, 'a jwt principal: j: + a keyed hash');
  const own = await getTask(g.url, task.taskId, { headers: { authorization: aliceAgain } });
  t.equal(own.body?.result?.taskId, task.taskId, 'another token of the same iss + sub is the same principal');
  const foreign = await getTask(g.url, task.taskId, { headers: { authorization: bob } });
  const random = await getTask(g.url, `gwt_${randomBytes(16).toString('base64url')}`, { headers: { authorization: bob } });
  t.equal(foreign.body?.error?.code, -32602, "another sub does not see alice's task");
  t.same(foreign.body.error, random.body.error, 'exactly as an unknown id');
});

t.test('header mode: honoured from a trusted address, refused from any other; a missing header is refused', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const trusted = await gatewayWith(
    t,
    { mode: 'header', header: 'X-Forwarded-User', trustedProxies: ['10.0.0.0/8', '127.0.0.0/8'] },
    { upstreamUrl: fixture.url, tools: { greet: { task: 'always' } } },
  );
  const untrusted = await gatewayWith(
    t,
    { mode: 'header', header: 'x-forwarded-user', trustedProxies: ['10.0.0.0/8', '192.168.1.7'] },
    { upstreamUrl: fixture.url },
  );

  const ok = await post(trusted.url, 'server/discover', {}, { headers: { 'x-forwarded-user': 'alice' } });
  t.equal(ok.status, 200, 'from 127.0.0.1 (in 127.0.0.0/8) with the header: served');
  const missing = await discoverRaw(trusted.url, undefined, 'm1');
  isRefusal(t, missing as any, REALM, 'm1', 'a trusted address without the header');
  const task = await createTask(trusted.url, 'greet', { name: 'Ada' }, { headers: { 'x-forwarded-user': 'alice' } });
  t.match((await trusted.store.get(task.taskId))?.principal, /^h:/, 'a header principal');
  t.equal((await getTask(trusted.url, task.taskId, { headers: { 'x-forwarded-user': 'alice' } })).body?.result?.taskId, task.taskId, "alice's own task");
  t.equal((await getTask(trusted.url, task.taskId, { headers: { 'x-forwarded-user': 'bob' } })).body?.error?.code, -32602, "bob does not see alice's task");
  t.equal(
    (await getTask(trusted.url, task.taskId, { headers: { 'x-forwarded-user': 'bob', authorization: 'Bearer whatever' } })).body?.error?.code,
    -32602,
    'an Authorization header does not change who the proxy says the caller is',
  );

  const spoofed = await post(untrusted.url, 'server/discover', {}, { id: 's1', headers: { 'x-forwarded-user': 'alice' } });
  t.equal(spoofed.status, 401, 'from an address outside trustedProxies: 401 even with the header');
  t.match(spoofed.body, { jsonrpc: '2.0', id: 's1', error: { code: -32600, message: /address/ } });
  const legacy = await legacyInitialize(untrusted.url, { 'x-forwarded-user': 'alice' });
  t.equal(legacy.status, 401, 'the pass-through too');
  await legacy.text();
  t.ok(
    untrusted.audit.events.some(([e, f]) => e === 'auth.failed' && f.reason === 'untrusted_source'),
    'audited',
  );
});

t.test('bearer (default): the principal is an HMAC under the deployment secret, in the store and in a request state', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const secret = `token-${randomBytes(12).toString('hex')}`;
  const header = `Bearer ${secret}`;
  const keyA = randomBytes(32);
  const tools = { greet: { task: 'always' } };
  const a = await gatewayWith(t, undefined, { upstreamUrl: fixture.url, stateKey: keyA, tools });
  const a2 = await gatewayWith(t, { mode: 'bearer' }, { upstreamUrl: fixture.url, stateKey: keyA, tools });
  const b = await gatewayWith(t, undefined, { upstreamUrl: fixture.url, stateKey: randomBytes(32), tools });

  const principal = async (g: Started) =>
    (await g.store.get((await createTask(g.url, 'greet', { name: 'Ada' }, { headers: { authorization: header } })).taskId))?.principal as string;
  const pa = await principal(a);
  const pa2 = await principal(a2);
  const pb = await principal(b);
  t.match(pa, /^b:[A-Za-z0-9_-]{43}$/, 'b: + a keyed hash');
  t.equal(pa, pa2, 'the same secret, the same principal (instances of one deployment agree)');
  t.not(pa, pb, 'another secret, another principal for the same token');
  for (const p of [pa, pb]) {
    for (const leak of unkeyedForms(secret, header)) t.notOk(p.includes(leak), `the principal holds no unkeyed form of the token (${leak.slice(0, 8)}…)`);
  }

  // An MRTR request state names the principal: keyed, so a leaked state allows no offline guessing of the token.
  const first = await post(
    a.url,
    'tools/call',
    { name: 'test_input_required_result_elicitation', arguments: {} },
    { capabilities: { elicitation: {} }, headers: { authorization: header } },
  );
  t.equal(first.body?.result?.resultType, 'input_required');
  const state: string = first.body.result.requestState;
  const claims = JSON.parse(Buffer.from(state.split('.')[0] as string, 'base64url').toString());
  // The principal is bound by the state's MAC and not carried at all (docs/security.md §Principal binding).
  t.notOk('sub' in claims, 'the state carries no principal');
  t.notOk(
    Buffer.from(state.split('.')[0] as string, 'base64url')
      .toString()
      .includes(pa),
    "not even the caller's keyed one",
  );
  const decoded = Buffer.from(state.split('.')[0] as string, 'base64url').toString();
  for (const leak of unkeyedForms(secret, header))
    t.notOk(state.includes(leak) || decoded.includes(leak), `the state holds no unkeyed form of the token (${leak.slice(0, 8)}…)`);

  // Without credentials: one anonymous principal, as before.
  const anon = await createTask(a.url, 'greet', { name: 'Ada' });
  t.equal((await a.store.get(anon.taskId))?.principal, 'anonymous');
  // Tasks of token A are unknown to token B.
  const mine = await createTask(a.url, 'greet', { name: 'Ada' }, { headers: { authorization: header } });
  const other = await getTask(a.url, mine.taskId, { headers: { authorization: 'Bearer someone-else' } });
  const random = await getTask(a.url, `gwt_${randomBytes(16).toString('base64url')}`, { headers: { authorization: 'Bearer someone-else' } });
  t.equal(other.body?.error?.code, -32602, "token B does not see token A's task");
  t.same(other.body.error, random.body.error, 'exactly as an unknown id');
  t.equal((await getTask(a.url, mine.taskId, { capabilities: DECLARING })).body?.error?.code, -32602, 'nor does a caller without credentials');
});

/** The token and the header, plain and as unkeyed SHA-256 digests in the usual encodings. */
function unkeyedForms(token: string, header: string): string[] {
  const out = [token];
  for (const v of [token, header]) {
    const d = createHash('sha256').update(v).digest();
    out.push(d.toString('hex'), d.toString('base64'), d.toString('base64url'));
  }
  return out;
}

t.test('none mode: one anonymous principal, retention capped at auth.maxTtlMs, a warning at start', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const g = await gatewayWith(t, { mode: 'none', maxTtlMs: 60_000 }, { upstreamUrl: fixture.url, tools: { greet: { task: 'always', ttlMs: 3_600_000 } } });
  const warning = g.logs.map((l) => JSON.parse(l)).find((l) => /auth\.mode is none/.test(l.msg));
  t.ok(warning, 'a warning is logged at start');
  t.equal(warning?.level, 40, 'at warn level');
  t.equal(warning?.upstream, 'fixture');

  const task = await createTask(g.url, 'greet', { name: 'Ada' }, { headers: { authorization: 'Bearer alice' } });
  const record = await g.store.get(task.taskId);
  t.equal(record?.principal, 'anonymous', 'credentials do not make a principal');
  t.ok(record && record.ttlMs !== null && record.ttlMs <= 60_000, `the rule's 1 h ttl is capped at 60 s (got ${record?.ttlMs})`);
  t.ok(typeof task.ttlMs === 'number' && task.ttlMs <= 60_000, 'and the client is told so');
  const seen = await getTask(g.url, task.taskId, { headers: { authorization: 'Bearer bob' } });
  t.equal(seen.body?.result?.taskId, task.taskId, 'the task id is the only secret: anyone holding it reads it');
});

t.test("none mode caps an upstream's own task too (a proxied task)", async (t) => {
  const fixture = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => fixture.close());
  const g = await gatewayWith(t, { mode: 'none', maxTtlMs: 45_000 }, { upstreamUrl: fixture.url });
  const task = await createTask(g.url, 'slow_compute', { seconds: 0 });
  const record = await g.store.get(task.taskId);
  t.equal(record?.kind, 'proxied', "the upstream's task");
  t.ok(record && record.ttlMs !== null && record.ttlMs <= 45_000, `retention capped at 45 s (got ${record?.ttlMs})`);
});

t.test('configuration: the auth schema refuses what would be unsafe', async (t) => {
  const up = (auth: unknown) => ({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1/mcp', auth }] });
  t.same(parseConfig(up(undefined)).upstreams[0]?.auth, { mode: 'bearer' }, 'default: bearer');
  t.same(parseConfig(up({ mode: 'none' })).upstreams[0]?.auth, { mode: 'none', maxTtlMs: 600_000 }, 'none: a 10 minute cap by default');
  const jwt = { mode: 'jwt', jwksUrl: 'https://issuer.test/jwks', issuer: ISSUER, audience: AUDIENCE };
  t.match(parseConfig(up(jwt)).upstreams[0]?.auth, { clockToleranceSec: 30, forward: true });
  const bad: Array<[string, unknown]> = [
    ['alg none', { ...jwt, algorithms: ['none'] }],
    ['HS256 with a JWKS (algorithm confusion)', { ...jwt, algorithms: ['HS256'] }],
    ['two key sources', { ...jwt, secretEnv: 'X' }],
    ['no key source', { mode: 'jwt', issuer: ISSUER, audience: AUDIENCE }],
    ['no audience', { mode: 'jwt', jwksUrl: 'https://issuer.test/jwks', issuer: ISSUER }],
    ['RS256 with a secret', { mode: 'jwt', secretEnv: 'X', issuer: ISSUER, audience: AUDIENCE, algorithms: ['RS256'] }],
    ['header without trusted proxies', { mode: 'header', header: 'x-forwarded-user', trustedProxies: [] }],
    ['a bad CIDR', { mode: 'header', header: 'x-forwarded-user', trustedProxies: ['10.0.0.0/33'] }],
    ['not an address', { mode: 'header', header: 'x-forwarded-user', trustedProxies: ['proxy.internal'] }],
    ['an unknown mode', { mode: 'basic' }],
    ['an unknown key', { mode: 'bearer', secret: 'x' }],
  ];
  for (const [what, auth] of bad) t.throws(() => parseConfig(up(auth)), ConfigError, what);
  t.same(
    parseConfig(up({ mode: 'header', header: 'X-Forwarded-User', trustedProxies: ['::1', 'fd00::/8', '10.1.2.3'] })).upstreams[0]?.auth,
    { mode: 'header', header: 'x-forwarded-user', trustedProxies: ['::1', 'fd00::/8', '10.1.2.3'] },
    'IPv6, CIDR blocks and addresses; the header name lower-cased',
  );
});

t.test('modes are per upstream: one gateway, a jwt upstream and a bearer one side by side', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const keys = await es256();
  const cfg = {
    upstreams: [
      {
        name: 'guarded',
        path: '/guarded',
        url: fixture.url,
        auth: { mode: 'jwt', publicKey: await exportSPKI(keys.publicKey), issuer: ISSUER, audience: AUDIENCE },
      },
      { name: 'open', path: '/open', url: fixture.url },
    ],
  };
  const base = (await startGateway(cfg, { t, deps: { stateKey: randomBytes(32) } })).origin;
  t.equal((await discoverRaw(`${base}/guarded`, undefined, 'g1')).status, 401, 'the jwt upstream refuses a request without a token');
  t.equal((await discoverRaw(`${base}/guarded`, `Bearer ${await token(keys.privateKey)}`, 'g2')).status, 200, 'and serves a valid one');
  t.equal((await discoverRaw(`${base}/open`, undefined, 'o1')).status, 200, 'the bearer upstream serves an anonymous caller');
  t.equal((await discoverRaw(`${base}/open`, 'Bearer not-a-jwt', 'o2')).status, 200, 'and leaves judging tokens to its upstream');
  const health = await fetch(`${base}/healthz`, { signal: BOUND() });
  t.equal(health.status, 200, 'paths outside the endpoints are not behind the hook');
  await health.text();
});

t.test('Authenticator: prefixes keep modes apart; a remembered token expires with its exp; failures are audited without the credential', async (t) => {
  const key = randomBytes(32);
  const bearer = new Authenticator({ mode: 'bearer' }, { key, upstream: 'u' });
  const header = new Authenticator({ mode: 'header', header: 'x-user', trustedProxies: ['::1', '127.0.0.1'] }, { key, upstream: 'u' });
  const b = bearer.authenticate({ headers: { authorization: 'alice' }, remoteAddress: '127.0.0.1' }) as Identity;
  const h = header.authenticate({ headers: { 'x-user': 'alice' }, remoteAddress: '::ffff:127.0.0.1' }) as Identity;
  t.match(b.principal, /^b:/);
  t.match(h.principal, /^h:/, 'an IPv4-mapped IPv6 peer matches an IPv4 entry');
  t.not(b.principal.slice(2), h.principal.slice(2), 'the same string under two modes: two principals');
  t.equal((header.authenticate({ headers: { 'x-user': 'alice' }, remoteAddress: '::1' }) as Identity).principal, h.principal, 'IPv6 loopback entry');
  t.throws(
    () => header.authenticate({ headers: { 'x-user': ['alice', 'bob'] }, remoteAddress: '::1' }),
    /credentials required/,
    'a repeated identity header names no one',
  );

  const keys = await es256();
  let clock = Date.now();
  const audit = recordingAudit();
  const jwt = new Authenticator(
    { mode: 'jwt', publicKey: await exportSPKI(keys.publicKey), issuer: ISSUER, audience: AUDIENCE, clockToleranceSec: 0, forward: false },
    { key, upstream: 'u', now: () => clock, audit },
  );
  const exp = Math.floor(clock / 1000) + 60;
  const tok = await token(keys.privateKey, { change: (j) => j.setExpirationTime(exp) });
  const first = await jwt.authenticate({ headers: { authorization: `Bearer ${tok}` }, remoteAddress: '127.0.0.1' });
  t.match(first, { authorization: undefined }, 'forward: false: nothing to forward');
  t.match(first.principal, /^j:/);
  const cached = jwt.authenticate({ headers: { authorization: `Bearer ${tok}` }, remoteAddress: '127.0.0.1' });
  t.notOk(cached instanceof Promise, 'a verified token is remembered (no second verification)');
  clock = exp * 1000 + 1;
  const late = await Promise.resolve()
    .then(() => jwt.authenticate({ headers: { authorization: `Bearer ${tok}` }, remoteAddress: '127.0.0.1' }))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.match(
    late,
    { kind: 'GW_INVALID_TOKEN', reason: 'expired', challenge: `${REALM}, error="invalid_token", error_description="expired"` },
    'past its exp the remembered token is verified again, and refused',
  );
  t.same(audit.events, [['auth.failed', { upstream: 'u', reason: 'expired' }]], 'one audit line: the class, not the token');
});
