/**
 * translate/modern-upstream: what the gateway sends to a 2026-07-28 upstream and reads back (2026-07-28
 * basic/transports Streamable HTTP §Request Metadata, §Custom Headers from Tool Parameters; basic/patterns/mrtr).
 */
import t from 'tap';
import {
  MRTR_METHODS,
  X_MCP_HEADER,
  headerParamsOf,
  identityFromDiscover,
  modernHeaders,
  refusedListingOurVersion,
  paramHeaders,
  readInputRequired,
  retryParams,
  screenToolsList,
  withEnvelope,
  withoutSubscriptionId,
} from '../../src/translate/modern-upstream.js';

const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });

t.test('headerParamsOf reads valid declarations', async (t) => {
  t.equal(X_MCP_HEADER, 'x-mcp-header');
  t.strictSame(headerParamsOf(undefined), { ok: true, params: [] }, 'no schema, no headers');
  t.strictSame(headerParamsOf(obj({ q: { type: 'string' } })), { ok: true, params: [] }, 'no declaration');
  t.strictSame(
    headerParamsOf(
      obj({
        region: { type: 'string', 'x-mcp-header': 'Region' },
        limit: { type: 'integer', 'x-mcp-header': 'Limit' },
        dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
        target: obj({ zone: { type: 'string', 'x-mcp-header': 'Zone' } }),
      }),
    ),
    {
      ok: true,
      params: [
        { path: ['region'], header: 'Region' },
        { path: ['limit'], header: 'Limit' },
        { path: ['dry'], header: 'Dry-Run' },
        { path: ['target', 'zone'], header: 'Zone' },
      ],
    },
    'string, integer, boolean, nested through properties',
  );
});

t.test('headerParamsOf rejects invalid declarations (the tool must be dropped)', async (t) => {
  const table: Array<[string, unknown, RegExp]> = [
    ['empty name', obj({ a: { type: 'string', 'x-mcp-header': '' } }), /non-empty/],
    ['not a string', obj({ a: { type: 'string', 'x-mcp-header': 7 } }), /non-empty string/],
    ['space in name', obj({ a: { type: 'string', 'x-mcp-header': 'My Region' } }), /token/],
    ['CRLF in name', obj({ a: { type: 'string', 'x-mcp-header': 'A\r\nB' } }), /token/],
    ['number type', obj({ a: { type: 'number', 'x-mcp-header': 'A' } }), /string, integer or boolean/],
    ['object type', obj({ a: { type: 'object', 'x-mcp-header': 'A' } }), /string, integer or boolean/],
    ['no type', obj({ a: { 'x-mcp-header': 'A' } }), /string, integer or boolean/],
    ['duplicate, other case', obj({ a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'REGION' } }), /unique/],
    ['under items', obj({ a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } }), /properties/],
    ['under anyOf', obj({ a: { anyOf: [{ type: 'string', 'x-mcp-header': 'A' }] } }), /properties/],
    ['under $defs', { ...obj({}), $defs: { d: { type: 'string', 'x-mcp-header': 'A' } } }, /properties/],
    ['under additionalProperties', obj({}, { additionalProperties: { type: 'string', 'x-mcp-header': 'A' } }), /properties/],
    ['on the root', { type: 'string', 'x-mcp-header': 'A' }, /properties/],
  ];
  for (const [name, schema, why] of table) {
    const r = headerParamsOf(schema);
    t.equal(r.ok, false, name);
    if (!r.ok) t.match(r.reason, why, `${name}: reason`);
  }
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 40; i++) deep = obj({ n: deep });
  t.equal(headerParamsOf(deep).ok, false, 'a schema nested beyond the bound is refused, not walked');
});

t.test('paramHeaders converts and encodes values, omitting null and absent ones', async (t) => {
  const params = [
    { path: ['region'], header: 'Region' },
    { path: ['limit'], header: 'Limit' },
    { path: ['dry'], header: 'Dry-Run' },
    { path: ['target', 'zone'], header: 'Zone' },
    { path: ['note'], header: 'Note' },
    { path: ['gone'], header: 'Gone' },
  ];
  t.strictSame(paramHeaders(params, { region: 'us-west1', limit: -7, dry: false, target: { zone: 'Hello, 世界' }, note: null }), {
    'mcp-param-region': 'us-west1',
    'mcp-param-limit': '-7',
    'mcp-param-dry-run': 'false',
    'mcp-param-zone': '=?base64?SGVsbG8sIOS4lueVjA==?=',
  });
  // The spec's own encoding examples (§Value Encoding).
  const one = (v: unknown) => paramHeaders([{ path: ['v'], header: 'V' }], { v })['mcp-param-v'];
  t.equal(one(' padded '), '=?base64?IHBhZGRlZCA=?=', 'leading/trailing spaces');
  t.equal(one('line1\nline2'), '=?base64?bGluZTEKbGluZTI=?=', 'newline');
  t.equal(one('=?base64?literal?='), '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=', 'a value that looks like the sentinel');
  t.equal(one(true), 'true');
  t.equal(one(42), '42');
  t.equal(one(2 ** 60), undefined, 'an integer beyond the safe range gets no header');
  t.equal(one({ a: 1 }), undefined, 'a non-primitive value gets no header');
  t.strictSame(paramHeaders(params, undefined), {}, 'no arguments, no headers');
});

t.test('modernHeaders mirrors method and name', async (t) => {
  t.strictSame(modernHeaders('tools/list', undefined), { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
  t.strictSame(modernHeaders('tools/call', { name: 'écho' }), {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': `=?base64?${Buffer.from('écho').toString('base64')}?=`,
  });
  t.equal(modernHeaders('prompts/get', { name: 'p' })['mcp-name'], 'p');
  t.equal(modernHeaders('resources/read', { uri: 'file:///a b' })['mcp-name'], 'file:///a b');
  for (const m of ['tasks/get', 'tasks/update', 'tasks/cancel']) t.equal(modernHeaders(m, { taskId: 't-1' })['mcp-name'], 't-1', m);
  t.equal(modernHeaders('completion/complete', { name: 'x' })['mcp-name'], undefined, 'no Mcp-Name for other methods');
});

t.test('withEnvelope adds the envelope and keeps the caller’s other _meta keys', async (t) => {
  const out = withEnvelope(
    { name: 'x', _meta: { progressToken: 7, 'io.modelcontextprotocol/logLevel': 'debug', 'io.modelcontextprotocol/protocolVersion': '1999' } },
    { capabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' } },
  );
  t.strictSame(
    out,
    {
      name: 'x',
      _meta: {
        progressToken: 7,
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
      },
    },
    'a stale log level in params is not forwarded; the reserved keys are the gateway’s',
  );
  t.equal(
    (withEnvelope(undefined, { capabilities: {}, clientInfo: { name: 'g', version: '0' }, logLevel: 'info' })._meta as any)['io.modelcontextprotocol/logLevel'],
    'info',
  );
});

t.test('readInputRequired', async (t) => {
  t.strictSame(MRTR_METHODS, ['tools/call', 'prompts/get', 'resources/read']);
  t.equal(readInputRequired({ resultType: 'complete', content: [] }), undefined, 'a final result');
  t.equal(readInputRequired({ content: [] }), undefined, 'no resultType');
  t.strictSame(
    readInputRequired({
      resultType: 'input_required',
      inputRequests: { ask: { method: 'elicitation/create', params: { message: 'm' } }, roots: { method: 'roots/list' } },
      requestState: 's1',
    }),
    {
      ok: true,
      value: { inputRequests: { ask: { method: 'elicitation/create', params: { message: 'm' } }, roots: { method: 'roots/list' } }, requestState: 's1' },
    },
  );
  t.strictSame(
    readInputRequired({ resultType: 'input_required', requestState: 's' }),
    { ok: true, value: { inputRequests: {}, requestState: 's' } },
    'state only',
  );
  const bad: Array<[string, unknown]> = [
    ['neither field', { resultType: 'input_required' }],
    ['inputRequests not an object', { resultType: 'input_required', inputRequests: [] }],
    ['requestState not a string', { resultType: 'input_required', requestState: 5 }],
    ['entry without method', { resultType: 'input_required', inputRequests: { a: { params: {} } } }],
    ['entry with bad params', { resultType: 'input_required', inputRequests: { a: { method: 'roots/list', params: 3 } } }],
  ];
  for (const [name, r] of bad) t.equal(readInputRequired(r)?.ok, false, name);
});

t.test('retryParams echoes the state only if sent', async (t) => {
  const original = { name: 'x', arguments: { a: 1 }, _meta: { progressToken: 1 } };
  t.strictSame(retryParams(original, { ask: { action: 'accept' } }, 'st'), { ...original, inputResponses: { ask: { action: 'accept' } }, requestState: 'st' });
  t.strictSame(retryParams(original, {}, undefined), original, 'a state-only round without state: the original params');
  t.strictSame(
    retryParams({ ...original, inputResponses: { old: {} }, requestState: 'old' }, { n: {} }, undefined),
    { ...original, inputResponses: { n: {} } },
    'an earlier round’s material is replaced, never carried over',
  );
});

t.test('identityFromDiscover', async (t) => {
  const fallback = { name: 'up', version: 'unknown' };
  t.strictSame(
    identityFromDiscover(
      {
        resultType: 'complete',
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: { listChanged: true } },
        instructions: 'be nice',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'srv', version: '2' } },
      },
      fallback,
    ),
    { protocolVersion: '2026-07-28', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'srv', version: '2' }, instructions: 'be nice' },
  );
  t.strictSame(identityFromDiscover({ supportedVersions: ['2026-07-28'] }, fallback), {
    protocolVersion: '2026-07-28',
    capabilities: {},
    serverInfo: fallback,
  });
  t.equal(identityFromDiscover({ supportedVersions: ['2025-11-25'] }, fallback), undefined, 'not a modern server');
  t.equal(identityFromDiscover(undefined, fallback), undefined);
});

t.test('withoutSubscriptionId', async (t) => {
  const sid = 'io.modelcontextprotocol/subscriptionId';
  t.strictSame(withoutSubscriptionId({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [sid]: 3 } } }), {
    jsonrpc: '2.0',
    method: 'notifications/tools/list_changed',
    params: {},
  });
  t.strictSame(withoutSubscriptionId({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'a', _meta: { [sid]: 3, other: 1 } } }), {
    jsonrpc: '2.0',
    method: 'notifications/resources/updated',
    params: { uri: 'a', _meta: { other: 1 } },
  });
  const plain = { jsonrpc: '2.0' as const, method: 'x' };
  t.equal(withoutSubscriptionId(plain), plain, 'nothing to remove');
});

t.test('screenToolsList drops tools with invalid declarations and learns the others', async (t) => {
  const good = { name: 'sql', inputSchema: obj({ region: { type: 'string', 'x-mcp-header': 'Region' } }) };
  const plain = { name: 'echo', inputSchema: obj({ text: { type: 'string' } }) };
  const bad = { name: 'broken', inputSchema: obj({ n: { type: 'number', 'x-mcp-header': 'N' } }) };
  const s = screenToolsList({ tools: [good, bad, plain], nextCursor: 'c', resultType: 'complete' });
  t.strictSame(s.result, { tools: [good, plain], nextCursor: 'c', resultType: 'complete' });
  t.strictSame(
    [...s.headers],
    [
      ['sql', [{ path: ['region'], header: 'Region' }]],
      ['echo', []],
    ],
  );
  t.equal(s.rejected.length, 1);
  t.equal(s.rejected[0]?.name, 'broken');
  const untouched = { tools: [plain] };
  t.equal(screenToolsList(untouched).result, untouched, 'nothing rejected: the same object');
  t.strictSame(screenToolsList({ other: 1 }).result, { other: 1 }, 'not a tools list');
});

t.test('refusedListingOurVersion: -32022 whose data.supported lists 2026-07-28, nothing else', async (t) => {
  t.equal(refusedListingOurVersion({ code: -32022, data: { supported: ['2026-07-28'], requested: 'x' } }), true);
  t.equal(refusedListingOurVersion({ code: -32022, data: { supported: ['2027-01-01'] } }), false, 'our version not listed');
  t.equal(refusedListingOurVersion({ code: -32022 }), false, 'no data');
  t.equal(refusedListingOurVersion({ code: -32022, data: { supported: '2026-07-28' } }), false, 'not a list');
  t.equal(refusedListingOurVersion({ code: -32020, data: { supported: ['2026-07-28'] } }), false, 'another code');
});
