/** translate/results-to-modern: legacy (2025-11-25) results and errors → modern (2026-07-28) ones (translation.md §4.1–4.3, §4.11). */
import t from 'tap';
import { ErrorCode, MODERN_VERSION } from '../../src/translate/constants.js';
import type { JsonRpcErrorObject } from '../../src/translate/jsonrpc.js';
import {
  asErrorObject,
  discoverResult,
  identityFromInitialize,
  modernCapabilities,
  modernError,
  saysResourceNotFound,
  modernResult,
  type CacheHints,
  type UpstreamIdentity,
} from '../../src/translate/results-to-modern.js';
import { clone, K, LEGACY, LEGACY_WIRE, MODERN_WIRE, type Json } from '../fixtures/translate-wire.js';

const cache: CacheHints = { ttlMs: 0, scope: 'private' };

t.test('identityFromInitialize', async (t) => {
  const id = identityFromInitialize(clone(LEGACY_WIRE.initializeResult));
  t.strictSame(id, {
    protocolVersion: LEGACY,
    capabilities: LEGACY_WIRE.initializeResult.capabilities,
    serverInfo: LEGACY_WIRE.serverInfo,
    instructions: LEGACY_WIRE.initializeResult.instructions,
  });

  t.strictSame(
    identityFromInitialize({ protocolVersion: LEGACY, serverInfo: { name: 's', version: '1' } }),
    {
      protocolVersion: LEGACY,
      capabilities: {},
      serverInfo: { name: 's', version: '1' },
    },
    'capabilities default to {}, no instructions key',
  );
  t.strictSame(
    identityFromInitialize({ protocolVersion: LEGACY, serverInfo: {}, capabilities: [1], instructions: 7 }),
    {
      protocolVersion: LEGACY,
      capabilities: {},
      serverInfo: {},
    },
    'capabilities array → {}, non-string instructions dropped',
  );

  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['string', 'ok'],
    ['array', [LEGACY_WIRE.initializeResult]],
    ['empty object', {}],
    ['no protocolVersion', { serverInfo: LEGACY_WIRE.serverInfo, capabilities: {} }],
    ['numeric protocolVersion', { protocolVersion: 20251125, serverInfo: LEGACY_WIRE.serverInfo }],
    ['no serverInfo', { protocolVersion: LEGACY, capabilities: {} }],
    ['serverInfo string', { protocolVersion: LEGACY, serverInfo: 'legacy-fixture' }],
    ['serverInfo null', { protocolVersion: LEGACY, serverInfo: null }],
    ['an error response', { code: -32600, message: 'bad' }],
  ];
  for (const [name, v] of rejects) t.equal(identityFromInitialize(v), undefined, `rejects ${name}`);
});

t.test('modernCapabilities', async (t) => {
  const legacy = clone(LEGACY_WIRE.initializeResult.capabilities) as Json;
  const before = clone(legacy);
  const withExt = modernCapabilities(legacy, { tasksExtension: true });
  t.strictSame(withExt, MODERN_WIRE.discoverResult.capabilities, 'legacy tasks slot dropped, extension added');
  t.strictSame(legacy, before, 'input not mutated');

  const table: Array<[string, Json, boolean, Json]> = [
    ['no tasks slot even without the extension', { tools: {}, tasks: { list: {} } }, false, { tools: {} }],
    ['extension only when asked', { tools: {} }, true, { tools: {}, extensions: { [K.tasksExtension]: {} } }],
    ['empty caps, no extension', {}, false, {}],
    ['empty caps, extension', {}, true, { extensions: { [K.tasksExtension]: {} } }],
    [
      'existing extensions kept and merged',
      { extensions: { 'com.example/x': { v: 1 } } },
      true,
      { extensions: { 'com.example/x': { v: 1 }, [K.tasksExtension]: {} } },
    ],
    ['existing extensions kept without tasks', { extensions: { 'com.example/x': {} } }, false, { extensions: { 'com.example/x': {} } }],
    ['empty extensions object removed', { tools: {}, extensions: {} }, false, { tools: {} }],
    ['junk extensions removed', { extensions: 'x' }, false, {}],
    ['experimental and unknown keys pass through', { experimental: { a: {} }, 'x-vendor': 1 }, false, { experimental: { a: {} }, 'x-vendor': 1 }],
  ];
  for (const [name, caps, ext, want] of table) {
    const got = modernCapabilities(caps, { tasksExtension: ext });
    t.strictSame(got, want, name);
    t.notOk('tasks' in got, `${name}: no tasks slot`);
  }
  const ext = { extensions: { a: {} } } as Json;
  modernCapabilities(ext, { tasksExtension: true });
  t.strictSame(ext, { extensions: { a: {} } }, 'nested extensions object not mutated');
});

t.test('discoverResult', async (t) => {
  const identity = identityFromInitialize(clone(LEGACY_WIRE.initializeResult)) as UpstreamIdentity;
  const got = discoverResult(identity, { tasksExtension: true, cache: { ttlMs: 60_000, scope: 'public' } });
  t.strictSame(got, MODERN_WIRE.discoverResult, 'modern DiscoverResult fixture');
  t.strictSame(got.supportedVersions, [MODERN_VERSION]);

  const bare: UpstreamIdentity = {
    protocolVersion: LEGACY,
    capabilities: { tasks: { requests: { tools: { call: {} } } } },
    serverInfo: { name: 'b', version: '0' },
  };
  const b = discoverResult(bare, { tasksExtension: false, cache });
  t.strictSame(
    b,
    {
      resultType: 'complete',
      supportedVersions: [MODERN_VERSION],
      capabilities: {},
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { [K.serverInfo]: { name: 'b', version: '0' } },
    },
    'no instructions key, no tasks slot, no extension when not asked',
  );
  t.strictSame(bare.capabilities, { tasks: { requests: { tools: { call: {} } } } }, 'identity not mutated');
});

t.test('modernResult', async (t) => {
  t.test('tools/list fixture: execution removed, cache hints, serverInfo', async (t) => {
    const legacy = clone(LEGACY_WIRE.toolsListResult) as Json;
    const before = clone(legacy);
    const got = modernResult('tools/list', legacy, { serverInfo: clone(LEGACY_WIRE.serverInfo), cache });
    t.strictSame(got, MODERN_WIRE.toolsListResult);
    t.strictSame(legacy, before, 'input (and its tools) not mutated');
  });
  t.test('tools/call fixture: related-task stripped, no cache hints', async (t) => {
    const got = modernResult('tools/call', clone(LEGACY_WIRE.toolsCallResult) as Json, {
      serverInfo: clone(LEGACY_WIRE.serverInfo),
      cache: { ttlMs: 5, scope: 'public' },
    });
    t.strictSame(got, MODERN_WIRE.toolsCallResult);
  });

  const si = { name: 'up', version: '1' };
  // [name, method, legacy result, opts, expected]
  const table: Array<[string, string, Json, { serverInfo?: Json; cache: CacheHints }, Json]> = [
    [
      'cacheable: hints added',
      'prompts/list',
      { prompts: [] },
      { cache: { ttlMs: 1000, scope: 'public' } },
      { prompts: [], resultType: 'complete', ttlMs: 1000, cacheScope: 'public' },
    ],
    ['cacheable: resources/read', 'resources/read', { contents: [] }, { cache }, { contents: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' }],
    ['cacheable: resources/list', 'resources/list', { resources: [] }, { cache }, { resources: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' }],
    [
      'cacheable: resources/templates/list',
      'resources/templates/list',
      { resourceTemplates: [] },
      { cache },
      { resourceTemplates: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' },
    ],
    [
      'cacheable: upstream hints kept',
      'tools/list',
      { tools: [], ttlMs: 30, cacheScope: 'public' },
      { cache },
      { tools: [], ttlMs: 30, cacheScope: 'public', resultType: 'complete' },
    ],
    [
      'cacheable: invalid upstream hints replaced',
      'tools/list',
      { tools: [], ttlMs: '30', cacheScope: 'shared' },
      { cache },
      { tools: [], ttlMs: 0, cacheScope: 'private', resultType: 'complete' },
    ],
    ['not cacheable: prompts/get', 'prompts/get', { messages: [] }, { cache }, { messages: [], resultType: 'complete' }],
    [
      'not cacheable: completion/complete',
      'completion/complete',
      { completion: { values: [] } },
      { cache },
      { completion: { values: [] }, resultType: 'complete' },
    ],
    ['not cacheable: unknown method', 'vendor/x', { a: 1 }, { cache }, { a: 1, resultType: 'complete' }],
    ['resultType overwritten', 'tools/call', { content: [], resultType: 'weird' }, { cache }, { content: [], resultType: 'complete' }],
    ['serverInfo added', 'tools/call', { content: [] }, { serverInfo: si, cache }, { content: [], resultType: 'complete', _meta: { [K.serverInfo]: si } }],
    [
      'serverInfo not overwritten',
      'tools/call',
      { content: [], _meta: { [K.serverInfo]: { name: 'own' } } },
      { serverInfo: si, cache },
      { content: [], resultType: 'complete', _meta: { [K.serverInfo]: { name: 'own' } } },
    ],
    [
      'only related-task meta → no _meta',
      'tools/call',
      { content: [], _meta: { [K.relatedTask]: { taskId: 'x' } } },
      { cache },
      { content: [], resultType: 'complete' },
    ],
    [
      'related-task stripped, others kept',
      'tools/call',
      { content: [], _meta: { [K.relatedTask]: { taskId: 'x' }, progressToken: 1 } },
      { cache },
      { content: [], resultType: 'complete', _meta: { progressToken: 1 } },
    ],
    ['empty _meta removed', 'tools/call', { content: [], _meta: {} }, { cache }, { content: [], resultType: 'complete' }],
    ['junk _meta removed', 'tools/call', { content: [], _meta: 'x' }, { cache }, { content: [], resultType: 'complete' }],
    [
      'execution kept outside tools/list',
      'tools/call',
      { content: [], execution: { x: 1 } },
      { cache },
      { content: [], execution: { x: 1 }, resultType: 'complete' },
    ],
    [
      'tools/list: non-object tools entries kept',
      'tools/list',
      { tools: ['odd', null, { name: 'a', execution: {} }] },
      { cache },
      { tools: ['odd', null, { name: 'a' }], resultType: 'complete', ttlMs: 0, cacheScope: 'private' },
    ],
    ['tools/list: tools not an array', 'tools/list', { tools: 'x' }, { cache }, { tools: 'x', resultType: 'complete', ttlMs: 0, cacheScope: 'private' }],
  ];
  for (const [name, method, legacy, opts, want] of table) {
    t.test(name, async (t) => {
      const before = clone(legacy);
      t.strictSame(modernResult(method, legacy, opts), want);
      t.strictSame(legacy, before, 'input not mutated');
    });
  }
});

t.test('modernError', async (t) => {
  const nf = LEGACY_WIRE.resourceNotFound;
  // [name, error, request, expected]
  const table: Array<[string, JsonRpcErrorObject, { uri?: string } | undefined, JsonRpcErrorObject]> = [
    [
      '-32002 → -32602, data.uri kept when present',
      clone(nf),
      { uri: 'file:///other' },
      { code: -32602, message: nf.message, data: { uri: 'file:///missing.txt' } },
    ],
    [
      '-32002 → -32602, data.uri from request when absent',
      { code: -32002, message: 'nf' },
      { uri: 'file:///req' },
      { code: -32602, message: 'nf', data: { uri: 'file:///req' } },
    ],
    [
      '-32002, other data kept and uri added',
      { code: -32002, message: 'nf', data: { reason: 'gone' } },
      { uri: 'file:///req' },
      { code: -32602, message: 'nf', data: { reason: 'gone', uri: 'file:///req' } },
    ],
    [
      '-32002, non-string data.uri replaced by the request uri',
      { code: -32002, message: 'nf', data: { uri: 5 } },
      { uri: 'file:///req' },
      { code: -32602, message: 'nf', data: { uri: 'file:///req' } },
    ],
    ['-32002, no uri anywhere → no data', { code: -32002, message: 'nf' }, undefined, { code: -32602, message: 'nf' }],
    ['-32002, empty request → no data', { code: -32002, message: 'nf' }, {}, { code: -32602, message: 'nf' }],
    [
      '-32002, scalar data kept when nothing to add',
      { code: -32002, message: 'nf', data: 'file:///x' },
      undefined,
      { code: -32602, message: 'nf', data: 'file:///x' },
    ],
    [
      '-32042 → -32603 with the upstream code and data',
      clone(LEGACY_WIRE.urlElicitationRequired),
      { uri: 'file:///x' },
      {
        code: -32603,
        message: LEGACY_WIRE.urlElicitationRequired.message,
        data: { upstreamCode: -32042, upstreamData: LEGACY_WIRE.urlElicitationRequired.data },
      },
    ],
    ['-32042 without data', { code: -32042, message: 'm' }, undefined, { code: -32603, message: 'm', data: { upstreamCode: -32042, upstreamData: undefined } }],
  ];
  for (const [name, error, request, want] of table) {
    const before = clone(error);
    const got = request === undefined ? modernError(error) : modernError(error, request);
    t.same(got, want, name);
    t.not(got.code, ErrorCode.LegacyResourceNotFound, `${name}: -32002 never leaves`);
    t.not(got.code, ErrorCode.LegacyUrlElicitationRequired, `${name}: -32042 never leaves`);
    t.strictSame(error, before, `${name}: input not mutated`);
  }
  const got = modernError({ code: -32002, message: 'nf' });
  t.notOk('data' in got, 'no data key at all when there is nothing to say');

  const unchanged: JsonRpcErrorObject[] = [
    { code: -32601, message: 'Method not found' },
    { code: -32602, message: 'Invalid params', data: { uri: 'x' } },
    { code: -32603, message: 'Internal' },
    { code: -32000, message: 'impl-defined' },
    { code: -32020, message: 'header' },
    { code: 1, message: 'app' },
  ];
  for (const e of unchanged) t.equal(modernError(e, { uri: 'file:///a' }), e, `${e.code} unchanged (same object)`);
});

t.test('modernError: a missing resource on resources/read, whatever code the server used', async (t) => {
  const read = { method: 'resources/read', uri: 'test://missing' };
  // [name, error, expected]
  const table: Array<[string, JsonRpcErrorObject, JsonRpcErrorObject]> = [
    [
      'SDK McpServer: -32602 "Resource … not found" gains data.uri',
      { code: -32602, message: 'MCP error -32602: Resource test://missing not found' },
      { code: -32602, message: 'MCP error -32602: Resource test://missing not found', data: { uri: 'test://missing' } },
    ],
    [
      'a plain Error: -32603 → -32602, the code kept',
      { code: -32603, message: 'Resource not found: test://missing' },
      { code: -32602, message: 'Resource not found: test://missing', data: { uri: 'test://missing', upstreamCode: -32603 } },
    ],
    [
      'Python-style code 0 "Unknown resource"',
      { code: 0, message: 'Unknown resource: test://missing' },
      { code: -32602, message: 'Unknown resource: test://missing', data: { uri: 'test://missing', upstreamCode: 0 } },
    ],
    [
      'an application code, "does not exist", its data kept',
      { code: -32001, message: 'File does not exist', data: { path: '/x' } },
      { code: -32602, message: 'File does not exist', data: { path: '/x', uri: 'test://missing', upstreamCode: -32001 } },
    ],
    [
      '"doesn\'t exist"',
      { code: -32603, message: "That resource doesn't exist" },
      { code: -32602, message: "That resource doesn't exist", data: { uri: 'test://missing', upstreamCode: -32603 } },
    ],
    [
      "the server's own data.uri wins",
      { code: -32602, message: 'Resource not found', data: { uri: 'test://canonical' } },
      { code: -32602, message: 'Resource not found', data: { uri: 'test://canonical' } },
    ],
  ];
  for (const [name, error, want] of table) {
    const before = clone(error);
    t.same(modernError(error, read), want, name);
    t.strictSame(error, before, `${name}: input not mutated`);
  }
  // Errors that do not say the resource is missing, or that are not about resources/read, keep their code.
  const unchanged: Array<[string, JsonRpcErrorObject, { method?: string; uri?: string }]> = [
    ['method not found (a server without resources)', { code: -32601, message: 'Method not found' }, read],
    ['invalid request', { code: -32600, message: 'Session not found' }, read],
    ['-32603 that says nothing of a missing resource', { code: -32603, message: 'database offline' }, read],
    ['-32602 about something else', { code: -32602, message: 'Invalid URI' }, read],
    ['"not found" on tools/call', { code: -32602, message: 'Tool x not found' }, { method: 'tools/call' }],
    ['"not found" on prompts/get', { code: -32603, message: 'Prompt not found' }, { method: 'prompts/get' }],
  ];
  for (const [name, error, request] of unchanged) t.equal(modernError(error, request), error, `${name}: unchanged`);
});

t.test('saysResourceNotFound', async (t) => {
  const table: Array<[JsonRpcErrorObject, boolean]> = [
    [{ code: -32002, message: 'anything' }, true],
    [{ code: -32602, message: 'Resource test://a not found' }, true],
    [{ code: -32603, message: 'NOT FOUND' }, true],
    [{ code: 7, message: 'no such resource' }, true],
    [{ code: -32601, message: 'Method not found' }, false],
    [{ code: -32700, message: 'not found' }, false],
    [{ code: -32021, message: 'not found' }, false],
    [{ code: -32603, message: 'notfound-ish but not the phrase: foundation' }, false],
  ];
  for (const [e, want] of table) t.equal(saysResourceNotFound(e), want, `${e.code} ${e.message}`);
});

t.test('asErrorObject', async (t) => {
  const malformed = { code: -32603, message: 'Malformed error from upstream' };
  const table: Array<[string, unknown, JsonRpcErrorObject]> = [
    ['full', { code: -32601, message: 'nope', data: { a: 1 } }, { code: -32601, message: 'nope', data: { a: 1 } }],
    ['no data key', { code: 5, message: 'm' }, { code: 5, message: 'm' }],
    ['data null kept', { code: 5, message: 'm', data: null }, { code: 5, message: 'm', data: null }],
    ['message missing', { code: 5 }, { code: 5, message: 'Upstream error' }],
    ['message not a string', { code: 5, message: 7 }, { code: 5, message: 'Upstream error' }],
    ['extra keys dropped', { code: 5, message: 'm', stack: 'secret' }, { code: 5, message: 'm' }],
    ['code string', { code: '-32601', message: 'm' }, malformed],
    ['code a fraction', { code: 1.5, message: 'm' }, malformed],
    ['code the smallest denormal (a fuzz find)', { code: -5e-324 }, malformed],
    ['code not finite', { code: Infinity, message: 'm' }, malformed],
    ['no code', { message: 'm' }, malformed],
    ['null', null, malformed],
    ['string', 'boom', malformed],
    ['array', [{ code: 1, message: 'm' }], malformed],
  ];
  for (const [name, v, want] of table) t.strictSame(asErrorObject(v), want, name);
});
