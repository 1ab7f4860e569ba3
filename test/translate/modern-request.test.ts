/**
 * translate/modern-request: validation of a modern (2026-07-28) request at the gateway edge
 * (H2 §Server Validation; B2 per-request `_meta`; V2 version negotiation; CH2 removals).
 */
import t, { type Test } from 'tap';
import { ErrorCode } from '../../src/translate/constants.js';
import { ERROR_CATALOG } from '../../src/translate/error-catalog.js';
import { methodPolicy } from '../../src/translate/methods.js';
import {
  REQUEST_FAILURE_KIND,
  REQUEST_FAILURE_STATUS,
  validateModernRequest,
  type ModernHeaders,
  type RequestFailureReason,
} from '../../src/translate/modern-request.js';
import { clone, K, LEGACY, MODERN, MODERN_WIRE, type Json } from '../fixtures/translate-wire.js';

const b64 = (s: string) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;

/** Expects a refusal and returns it. */
function refused(t: Test, headers: ModernHeaders, body: unknown, reason: RequestFailureReason, msg?: RegExp) {
  const r = validateModernRequest(headers, body);
  t.equal(r.ok, false, `refused (${reason})`);
  if (r.ok) return undefined;
  t.equal(r.failure.reason, reason, 'reason');
  if (msg) t.match(r.failure.message, msg, 'message');
  return r.failure;
}
/** Expects acceptance and returns the value. */
function accepted(t: Test, headers: ModernHeaders, body: unknown) {
  const r = validateModernRequest(headers, body);
  if (!r.ok) t.fail(`expected ok, got ${r.failure.reason}: ${r.failure.message}`);
  else t.pass('accepted');
  return r.ok ? r.value : undefined;
}

t.test('JSON-RPC shape → invalid-request', async (t) => {
  const ok = MODERN_WIRE.request('tools/list');
  const table: Array<[string, unknown, string | number | null]> = [
    ['batch array', [ok.body, ok.body], null],
    ['empty batch', [], null],
    ['result response', { jsonrpc: '2.0', id: 4, result: {} }, 4],
    ['error response', { jsonrpc: '2.0', id: 5, error: { code: -1, message: 'x' } }, 5],
    ['null body', null, null],
    ['string body', 'tools/list', null],
    ['number body', 42, null],
    ['jsonrpc missing', { id: 1, method: 'tools/list' }, 1],
    ['jsonrpc 1.0', { jsonrpc: '1.0', id: 1, method: 'tools/list' }, 1],
    ['method not a string', { jsonrpc: '2.0', id: 'a', method: 7 }, 'a'],
    ['id null', { ...ok.body, id: null }, null],
    ['id object', { ...ok.body, id: { x: 1 } }, null],
    ['id boolean', { ...ok.body, id: true }, null],
    ['params array', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: [1, 2] }, 9],
    ['params null', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: null }, 9],
    ['params string', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: 'x' }, 9],
  ];
  for (const [name, body, id] of table) {
    t.test(name, async (t) => {
      const f = refused(t, ok.headers, body, 'invalid-request', /Invalid Request/);
      t.equal(f?.id, id, 'id echoed when known');
    });
  }
});

t.test('check order', async (t) => {
  const good = MODERN_WIRE.request('tools/call', { name: 'echo', arguments: {} });
  const noMeta = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
  const withMeta = (meta: Json) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', _meta: meta } });
  const h = (over: Partial<ModernHeaders>): ModernHeaders => ({ ...good.headers, ...over });
  const dropVersion = (): ModernHeaders => {
    const { 'mcp-protocol-version': _v, ...rest } = good.headers;
    return rest;
  };

  // [name, headers, body, reason, message pattern]
  const table: Array<[string, ModernHeaders, unknown, RequestFailureReason, RegExp]> = [
    ['version header missing → header-mismatch', dropVersion(), good.body, 'header-mismatch', /MCP-Protocol-Version header is absent/],
    ['version header missing, envelope missing too → header-mismatch first', dropVersion(), noMeta, 'header-mismatch', /absent/],
    ['version header empty → header-mismatch', h({ 'mcp-protocol-version': '' }), good.body, 'header-mismatch', /absent/],
    ['version header repeated → header-mismatch', h({ 'mcp-protocol-version': null }), good.body, 'header-mismatch', /repeated/],
    ['version header with invalid characters', h({ 'mcp-protocol-version': ' 2026-07-28' }), good.body, 'header-mismatch', /MCP-Protocol-Version: .*base64/],
    ['version header malformed sentinel', h({ 'mcp-protocol-version': '=?base64?YR==?=' }), good.body, 'header-mismatch', /malformed/],
    ['header present, no _meta → missing-envelope', good.headers, noMeta, 'missing-envelope', /protocolVersion, io\.modelcontextprotocol\/clientCapabilities/],
    ['_meta not an object → missing-envelope', good.headers, withMeta('x' as unknown as Json), 'missing-envelope', /protocolVersion/],
    [
      '_meta without protocolVersion → missing-envelope naming it',
      good.headers,
      withMeta({ [K.clientCapabilities]: {} }),
      'missing-envelope',
      /: io\.modelcontextprotocol\/protocolVersion$/,
    ],
    [
      '_meta without clientCapabilities → missing-envelope naming it',
      good.headers,
      withMeta({ [K.protocolVersion]: MODERN }),
      'missing-envelope',
      /: io\.modelcontextprotocol\/clientCapabilities$/,
    ],
    [
      'protocolVersion not a string → missing-envelope',
      good.headers,
      withMeta({ [K.protocolVersion]: 20260728, [K.clientCapabilities]: {} }),
      'missing-envelope',
      /protocolVersion/,
    ],
    [
      'clientCapabilities null → missing-envelope',
      good.headers,
      withMeta({ [K.protocolVersion]: MODERN, [K.clientCapabilities]: null }),
      'missing-envelope',
      /clientCapabilities/,
    ],
    [
      'clientCapabilities array → missing-envelope',
      good.headers,
      withMeta({ [K.protocolVersion]: MODERN, [K.clientCapabilities]: [] }),
      'missing-envelope',
      /clientCapabilities/,
    ],
    ['envelope missing beats unsupported version', h({ 'mcp-protocol-version': '2099-01-01' }), noMeta, 'missing-envelope', /envelope/],
    [
      'header ≠ body version → header-mismatch',
      h({ 'mcp-protocol-version': LEGACY }),
      good.body,
      'header-mismatch',
      /\(2025-11-25\) does not match _meta protocolVersion \(2026-07-28\)/,
    ],
    [
      'header ≠ body version, both unsupported → header-mismatch, not unsupported',
      h({ 'mcp-protocol-version': '2099-01-01' }),
      withMeta({ [K.protocolVersion]: '2098-01-01', [K.clientCapabilities]: {} }),
      'header-mismatch',
      /does not match/,
    ],
    [
      'version mismatch beats method mismatch',
      h({ 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' }),
      good.body,
      'header-mismatch',
      /protocolVersion/,
    ],
    [
      'unsupported version beats missing Mcp-Method',
      { 'mcp-protocol-version': '2099-01-01' },
      withMeta({ [K.protocolVersion]: '2099-01-01', [K.clientCapabilities]: {} }),
      'unsupported-version',
      /2099-01-01/,
    ],
    ['Mcp-Method missing', h({ 'mcp-method': undefined }), good.body, 'header-mismatch', /Mcp-Method header is absent/],
    ['Mcp-Method repeated', h({ 'mcp-method': null }), good.body, 'header-mismatch', /repeated/],
    ['Mcp-Method mismatch', h({ 'mcp-method': 'tools/list' }), good.body, 'header-mismatch', /"tools\/list" does not match body method "tools\/call"/],
    ['Mcp-Method case differs', h({ 'mcp-method': 'Tools/Call' }), good.body, 'header-mismatch', /does not match/],
    ['Mcp-Method malformed sentinel', h({ 'mcp-method': '=?base64?Y?=' }), good.body, 'header-mismatch', /Mcp-Method: malformed/],
    ['Mcp-Method mismatch beats Mcp-Name missing', { 'mcp-protocol-version': MODERN, 'mcp-method': 'x' }, good.body, 'header-mismatch', /Mcp-Method/],
    ['Mcp-Name missing', h({ 'mcp-name': undefined }), good.body, 'header-mismatch', /params\.name="echo" but the required Mcp-Name header is absent/],
    ['Mcp-Name repeated', h({ 'mcp-name': null }), good.body, 'header-mismatch', /Mcp-Name header must not be repeated/],
    ['Mcp-Name mismatch', h({ 'mcp-name': 'other' }), good.body, 'header-mismatch', /"other" does not match params\.name "echo"/],
    ['Mcp-Name malformed sentinel', h({ 'mcp-name': '=?base64?ZWNobx==?=' }), good.body, 'header-mismatch', /Mcp-Name: malformed/],
    ['Mcp-Name broken sentinel is refused as malformed', h({ 'mcp-name': '=?base64?ZWNobw?x?=' }), good.body, 'header-mismatch', /malformed/],
  ];
  for (const [name, headers, body, reason, msg] of table) {
    t.test(name, async (t) => {
      const f = refused(t, headers, body, reason, msg);
      t.equal(f?.id, 1, 'id echoed');
    });
  }
});

t.test('unsupported-version carries {supported, requested}', async (t) => {
  for (const v of ['2099-01-01', LEGACY, '2025-06-18']) {
    const req = MODERN_WIRE.request('tools/list', { _meta: { [K.protocolVersion]: v, [K.clientCapabilities]: {} } });
    const f = refused(t, { ...req.headers, 'mcp-protocol-version': v }, req.body, 'unsupported-version', /Unsupported protocol version/);
    t.strictSame(f?.data, { supported: [MODERN], requested: v }, v);
  }
  const ok = MODERN_WIRE.request('tools/list');
  const f = refused(t, { ...ok.headers, 'mcp-method': 'x' }, ok.body, 'header-mismatch');
  t.notOk(f && 'data' in f, 'other refusals carry no data key');
});

t.test('header values may be sentinel-encoded', async (t) => {
  const name = 'café ✓';
  const req = MODERN_WIRE.request('tools/call', { name, arguments: {} });
  t.test('plain non-ASCII is refused', async (t) => {
    refused(t, { ...req.headers, 'mcp-name': name }, req.body, 'header-mismatch', /base64/);
  });
  t.test('sentinel-encoded name matches', async (t) => {
    const v = accepted(t, { ...req.headers, 'mcp-name': b64(name) }, req.body);
    t.equal(v?.params.name, name);
  });
  t.test('every header may be encoded', async (t) => {
    accepted(t, { 'mcp-protocol-version': b64(MODERN), 'mcp-method': b64('tools/call'), 'mcp-name': b64(name) }, req.body);
  });
  t.test('sentinel of the wrong value mismatches', async (t) => {
    refused(t, { ...req.headers, 'mcp-name': b64('cafe') }, req.body, 'header-mismatch', /does not match/);
  });
  t.test('a name that looks like a sentinel must itself be encoded', async (t) => {
    const odd = '=?base64?YQ==?=';
    const r2 = MODERN_WIRE.request('tools/call', { name: odd });
    refused(t, { ...r2.headers, 'mcp-name': odd }, r2.body, 'header-mismatch', /"a" does not match/);
    accepted(t, { ...r2.headers, 'mcp-name': b64(odd) }, r2.body);
  });
});

t.test('Mcp-Name per method', async (t) => {
  // [method, params, header value that matches]
  const table: Array<[string, Json, string]> = [
    ['tools/call', { name: 'echo', arguments: { a: 1 } }, 'echo'],
    ['prompts/get', { name: 'greeting', arguments: {} }, 'greeting'],
    ['resources/read', { uri: 'file:///a/b.txt' }, 'file:///a/b.txt'],
    ['tasks/get', { taskId: 'tsk_abc' }, 'tsk_abc'],
    ['tasks/update', { taskId: 'tsk_abc', inputResponses: {} }, 'tsk_abc'],
    ['tasks/cancel', { taskId: 'tsk_abc' }, 'tsk_abc'],
  ];
  for (const [method, params, name] of table) {
    t.test(method, async (t) => {
      const req = MODERN_WIRE.request(method, params);
      t.equal(req.headers['mcp-name'], name, 'fixture mirrors the name');
      accepted(t, req.headers, req.body);
      refused(t, { ...req.headers, 'mcp-name': undefined }, req.body, 'header-mismatch', /Mcp-Name header is absent/);
      refused(t, { ...req.headers, 'mcp-name': `${name}x` }, req.body, 'header-mismatch', /does not match/);
      refused(t, { ...req.headers, 'mcp-name': null }, req.body, 'header-mismatch', /repeated/);
    });
  }
  t.test('prompts/get is judged by name, not uri', async (t) => {
    const req = MODERN_WIRE.request('prompts/get', { name: 'p', uri: 'file:///x' }, { name: 'file:///x' });
    refused(t, req.headers, req.body, 'header-mismatch', /params\.name "p"/);
  });
  t.test('resources/read is judged by uri, not name', async (t) => {
    const req = MODERN_WIRE.request('resources/read', { uri: 'file:///x', name: 'n' }, { name: 'n' });
    refused(t, req.headers, req.body, 'header-mismatch', /params\.uri "file:\/\/\/x"/);
  });
  t.test('methods without a name ignore Mcp-Name', async (t) => {
    const req = MODERN_WIRE.request('tools/list');
    accepted(t, { ...req.headers, 'mcp-name': 'whatever' }, req.body);
  });
  t.test('a repeated Mcp-Name is refused even where no name is routed', async (t) => {
    const req = MODERN_WIRE.request('tools/list');
    refused(t, { ...req.headers, 'mcp-name': null }, req.body, 'header-mismatch', /repeated/);
  });
});

t.test('removed methods → method-removed (after header checks)', async (t) => {
  const removed = ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'tasks/result', 'tasks/list'];
  for (const method of removed) {
    t.test(method, async (t) => {
      const params: Json =
        method === 'resources/subscribe' || method === 'resources/unsubscribe' ? { uri: 'file:///a' } : method === 'tasks/result' ? { taskId: 't1' } : {};
      const req = MODERN_WIRE.request(method, params, { id: 'rm-1' });
      const f = refused(t, req.headers, req.body, 'method-removed', new RegExp(`Method not found: ${method.replace('/', '\\/')}`));
      t.equal(f?.id, 'rm-1');
      t.equal(REQUEST_FAILURE_STATUS['method-removed'].status, 404);
      refused(t, { ...req.headers, 'mcp-method': 'tools/list' }, req.body, 'header-mismatch');
    });
  }
  t.test('legacy-shaped initialize with modern markers', async (t) => {
    const req = MODERN_WIRE.request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'x', version: '1' } });
    refused(t, req.headers, req.body, 'method-removed');
  });
});

t.test('accepted request: envelope, params and MRTR material', async (t) => {
  const caps = { elicitation: { form: {} }, extensions: { [K.tasksExtension]: {} } };
  const params: Json = {
    name: 'deploy',
    arguments: { env: 'prod' },
    inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
    requestState: 'state-blob',
    _meta: {
      ...MODERN_WIRE.envelope(caps, { [K.logLevel]: 'debug' }),
      progressToken: 'p-1',
      traceparent: '00-abc-def-01',
      'com.example/custom': { x: 1 },
    },
  };
  const req = MODERN_WIRE.request('tools/call', params, { id: 'req-7' });
  const before = clone(req.body);
  const v = accepted(t, req.headers, req.body);
  t.strictSame(req.body, before, 'body not mutated');
  t.equal(v?.id, 'req-7');
  t.equal(v?.method, 'tools/call');
  t.strictSame(v?.policy, methodPolicy('tools/call'));
  t.strictSame(v?.envelope, {
    protocolVersion: MODERN,
    clientCapabilities: caps,
    clientInfo: MODERN_WIRE.clientInfo,
    logLevel: 'debug',
  });
  t.strictSame(
    v?.params,
    {
      name: 'deploy',
      arguments: { env: 'prod' },
      _meta: { progressToken: 'p-1', traceparent: '00-abc-def-01', 'com.example/custom': { x: 1 } },
    },
    'reserved keys and MRTR material removed, other _meta kept',
  );
  t.strictSame(v?.inputResponses, { confirm: { action: 'accept', content: { ok: true } } });
  t.equal(v?.requestState, 'state-blob');
});

t.test('accepted request: minimal shapes', async (t) => {
  t.test('only reserved _meta keys → no _meta in params, no optional envelope fields', async (t) => {
    const req = MODERN_WIRE.request('tools/list', { cursor: 'c1', _meta: { [K.protocolVersion]: MODERN, [K.clientCapabilities]: {} } }, { id: 0 });
    const v = accepted(t, req.headers, req.body);
    t.strictSame(v?.params, { cursor: 'c1' });
    t.strictSame(v?.envelope, { protocolVersion: MODERN, clientCapabilities: {} });
    t.equal(v?.id, 0, 'id 0 kept');
    t.notOk(v && 'inputResponses' in v, 'no inputResponses');
    t.notOk(v && 'requestState' in v, 'no requestState');
  });
  t.test('_meta values of the wrong type are refused (-32602), never read as absent nor passed upstream', async (t) => {
    const cases: Array<[string, Json, RegExp]> = [
      ['clientInfo a string', { [K.clientInfo]: 'x' }, /clientInfo"\] must be an object/],
      ['clientInfo null', { [K.clientInfo]: null }, /clientInfo"\] must be an object/],
      ['clientInfo.name a number', { [K.clientInfo]: { name: 1, version: '1' } }, /clientInfo"\]\.name must be a string/],
      ['logLevel a number', { [K.logLevel]: 3 }, /logLevel"\] must be one of debug, info/],
      ['logLevel unknown', { [K.logLevel]: 'verbose' }, /logLevel"\] must be one of/],
      ['progressToken an object', { progressToken: { a: 1 } }, /progressToken"\] must be a string or a number/],
      ['progressToken null', { progressToken: null }, /progressToken"\] must be a string or a number/],
      ['progressToken a boolean', { progressToken: true }, /progressToken/],
      ['capabilities.elicitation a string', { [K.clientCapabilities]: { elicitation: 'yes' } }, /clientCapabilities"\]\.elicitation must be an object/],
      ['capabilities.sampling an array', { [K.clientCapabilities]: { sampling: [] } }, /\.sampling must be an object/],
      ['capabilities.roots null', { [K.clientCapabilities]: { roots: null } }, /\.roots must be an object/],
      ['capabilities.extensions a number', { [K.clientCapabilities]: { extensions: 1 } }, /\.extensions must be an object/],
    ];
    for (const [name, extra, msg] of cases) {
      const req = MODERN_WIRE.request('tools/list', { _meta: { [K.protocolVersion]: MODERN, [K.clientCapabilities]: {}, ...(extra as Record<string, Json>) } });
      const f = refused(t, req.headers, req.body, 'invalid-meta', msg);
      t.equal(f && REQUEST_FAILURE_STATUS[f.reason].code, -32602, `${name}: -32602`);
      t.equal(f && REQUEST_FAILURE_STATUS[f.reason].status, 400, `${name}: 400`);
    }
    const ok = MODERN_WIRE.request('tools/list', {
      _meta: {
        [K.protocolVersion]: MODERN,
        [K.clientCapabilities]: { elicitation: {} },
        [K.clientInfo]: { name: 'c', version: '1' },
        [K.logLevel]: 'debug',
        progressToken: 7,
      },
    });
    const v = accepted(t, ok.headers, ok.body);
    t.equal(v?.envelope.logLevel, 'debug', 'a known level is kept');
  });
  t.test('inputResponses that are not an object are refused (-32602), never dropped so that the retry runs unanswered', async (t) => {
    for (const inputResponses of [['x'], 'x', 1, null, true]) {
      const req = MODERN_WIRE.request('tools/call', { name: 'a', inputResponses, requestState: 'state' });
      const f = refused(t, req.headers, req.body, 'invalid-meta', /^Invalid params: params\.inputResponses must be an object$/);
      t.equal(f && REQUEST_FAILURE_STATUS[f.reason].code, -32602, `${JSON.stringify(inputResponses)}: -32602`);
    }
    const ok = MODERN_WIRE.request('tools/call', { name: 'a', inputResponses: { k: { action: 'cancel' } }, requestState: 'state' });
    const v = accepted(t, ok.headers, ok.body);
    t.strictSame(v?.params, { name: 'a' }, 'lifted out of params');
    t.strictSame(v?.inputResponses, { k: { action: 'cancel' } });
  });
  t.test('a requestState that is not a string is an invalid state (never a new call without it)', async (t) => {
    for (const requestState of [5, {}, null, [], true, ['s']]) {
      const req = MODERN_WIRE.request('tools/call', { name: 'a', requestState }, { id: 7 });
      const f = refused(t, req.headers, req.body, 'invalid-request-state', /^Invalid requestState$/);
      t.equal(f?.id, 7, `${JSON.stringify(requestState)}: the request id`);
    }
    const other = MODERN_WIRE.request('prompts/get', { name: 'p', requestState: 0 });
    refused(t, other.headers, other.body, 'invalid-request-state');
  });
  t.test('params absent entirely → missing-envelope', async (t) => {
    refused(t, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' }, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'missing-envelope');
  });
  t.test('unknown methods are accepted with the unknown policy', async (t) => {
    const req = MODERN_WIRE.request('vendor/thing', { a: 1 });
    const v = accepted(t, req.headers, req.body);
    t.equal(v?.policy.kind, 'forward');
    t.strictSame(v?.params, { a: 1 });
  });
  t.test('a name-routed method without a string name is not header-checked', async (t) => {
    const req = MODERN_WIRE.request('tools/call', { arguments: {} });
    t.notOk('mcp-name' in req.headers);
    accepted(t, req.headers, req.body);
  });
});

t.test('notifications (no id)', async (t) => {
  const req = MODERN_WIRE.request('notifications/progress', { progressToken: 'p', progress: 1 }, { id: null });
  t.notOk('id' in req.body, 'fixture has no id');
  const v = accepted(t, req.headers, req.body);
  t.notOk(v && 'id' in v, 'no id on the value');
  t.equal(v?.method, 'notifications/progress');
  const f = refused(t, { ...req.headers, 'mcp-method': undefined }, req.body, 'header-mismatch');
  t.equal(f?.id, null, 'failure id is null for a notification');
  const f2 = refused(t, req.headers, { ...req.body, params: { progressToken: 'p' } }, 'missing-envelope');
  t.equal(f2?.id, null);
});

t.test('REQUEST_FAILURE_STATUS', async (t) => {
  const table: Array<[RequestFailureReason, number, number]> = [
    ['invalid-request', 400, -32600],
    ['header-mismatch', 400, -32020],
    ['unsupported-version', 400, -32022],
    ['missing-envelope', 400, -32602],
    ['invalid-meta', 400, -32602],
    ['method-removed', 404, -32601],
    ['invalid-request-state', 400, -32602],
  ];
  for (const [reason, status, code] of table) t.strictSame(REQUEST_FAILURE_STATUS[reason], { status, code }, reason);
  t.same(Object.keys(REQUEST_FAILURE_STATUS).sort(), table.map(([r]) => r).sort(), 'one row per reason');
  t.equal(REQUEST_FAILURE_STATUS['header-mismatch'].code, ErrorCode.HeaderMismatch);
});

t.test('REQUEST_FAILURE_KIND: every reason names a catalog entry, and REQUEST_FAILURE_STATUS is that entry', async (t) => {
  for (const [reason, kind] of Object.entries(REQUEST_FAILURE_KIND)) {
    const spec = ERROR_CATALOG[kind];
    t.ok(spec, `${reason} → ${kind}`);
    t.strictSame(REQUEST_FAILURE_STATUS[reason as keyof typeof REQUEST_FAILURE_KIND], { status: spec.status, code: spec.rpc }, reason);
  }
});
