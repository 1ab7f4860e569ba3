/** translate/results-to-legacy: modern results, errors and notifications → legacy ones (translation.md §4.1–4.3, §4.11). */
import t from 'tap';
import { ErrorCode } from '../../src/translate/constants.js';
import {
  legacyError,
  legacyInputParams,
  legacyResult,
  modernParamsFromLegacy,
  offersSubscriptions,
  sessionListenFilter,
  undeclaredInputError,
} from '../../src/translate/results-to-legacy.js';
import { K } from '../fixtures/translate-wire.js';

const serverInfo = { name: 'modern-fixture', version: '2.0.0' };

t.test('legacyResult', async (t) => {
  const list = legacyResult('tools/list', {
    resultType: 'complete',
    ttlMs: 60000,
    cacheScope: 'private',
    tools: [
      { name: 'a', inputSchema: { type: 'object' } },
      { name: 'b', inputSchema: {}, outputSchema: { type: 'array' } },
      { name: 'c', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } },
    ],
    nextCursor: 'n',
    _meta: { [K.serverInfo]: serverInfo },
  });
  t.strictSame(
    list,
    {
      ok: true,
      value: {
        tools: [
          { name: 'a', inputSchema: { type: 'object' } },
          { name: 'b', inputSchema: { type: 'object' } },
          { name: 'c', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } },
        ],
        nextCursor: 'n',
      },
    },
    'resultType, cache hints and serverInfo dropped; schemas a strict legacy client accepts; the rest kept',
  );

  t.strictSame(
    legacyResult('tools/call', {
      resultType: 'complete',
      content: [{ type: 'text', text: '[1,2]' }],
      structuredContent: [1, 2],
      _meta: { [K.serverInfo]: serverInfo, 'com.example/trace': 't' },
    }),
    {
      ok: true,
      value: { content: [{ type: 'text', text: '[1,2]' }], _meta: { 'com.example/trace': 't' } },
    },
    'non-object structuredContent dropped; other _meta keys kept',
  );

  t.strictSame(
    legacyResult('tools/call', { resultType: 'complete', content: [], structuredContent: { a: 1 }, ttlMs: 5 }),
    {
      ok: true,
      value: { content: [], structuredContent: { a: 1 }, ttlMs: 5 },
    },
    'ttlMs is kept where it is not a cache hint',
  );

  t.strictSame(legacyResult('resources/read', { resultType: 'complete', contents: [], ttlMs: 0, cacheScope: 'public' }), { ok: true, value: { contents: [] } });
  t.strictSame(
    legacyResult('completion/complete', { completion: { values: [] } }),
    { ok: true, value: { completion: { values: [] } } },
    'no resultType is fine',
  );
  t.strictSame(legacyResult('tools/call', { resultType: 'task', taskId: 't' }), {
    ok: false,
    failure: { reason: 'unsupported-result-type', resultType: 'task' },
  });
  t.strictSame(legacyResult('tools/call', { resultType: 'input_required', inputRequests: {} }), {
    ok: false,
    failure: { reason: 'unsupported-result-type', resultType: 'input_required' },
  });
  const input = { resultType: 'complete', tools: 'nope' };
  t.strictSame(legacyResult('tools/list', input), { ok: true, value: { tools: 'nope' } }, 'a malformed list is left alone');
  t.equal(input.resultType, 'complete', 'the input is not modified');
});

t.test('legacyError', async (t) => {
  const needsTask = {
    code: ErrorCode.MissingRequiredClientCapability,
    message: 'needs tasks',
    data: { requiredCapabilities: { extensions: { [K.tasksExtension]: {} } } },
  };
  t.strictSame(legacyError(needsTask), { code: ErrorCode.MethodNotFound, message: 'needs tasks', data: needsTask.data }, '-32021 for tasks → legacy -32601');
  const needsElicit = { code: ErrorCode.MissingRequiredClientCapability, message: 'x', data: { requiredCapabilities: { elicitation: {} } } };
  t.equal(legacyError(needsElicit), needsElicit, '-32021 for an input kind is kept');
  const noData = { code: ErrorCode.MissingRequiredClientCapability, message: 'x' };
  t.equal(legacyError(noData), noData);
  for (const code of [ErrorCode.HeaderMismatch, ErrorCode.UnsupportedProtocolVersion]) {
    const e = legacyError({ code, message: 'bad', data: { supported: ['2026-07-28'] } });
    t.equal(e.code, ErrorCode.InternalError, `${code} → internal error`);
    t.strictSame(e.data, { upstreamCode: code, upstreamData: { supported: ['2026-07-28'] } });
  }
  const notFound = { code: ErrorCode.InvalidParams, message: 'Resource not found', data: { uri: 'x://y' } };
  t.equal(legacyError(notFound), notFound, 'resource not found stays -32602 (SEP-2164 holds for 2025-11-25 clients too)');
});

t.test('undeclaredInputError', async (t) => {
  t.strictSame(undeclaredInputError('sampling/createMessage', { sampling: {} }), {
    code: ErrorCode.MissingRequiredClientCapability,
    message: 'The client did not declare the capability sampling/createMessage needs',
    data: { requiredCapabilities: { sampling: {} } },
  });
});

t.test('modernParamsFromLegacy', async (t) => {
  t.strictSame(modernParamsFromLegacy({ name: 'x', arguments: {}, task: { ttl: 1 } }), { name: 'x', arguments: {} });
  const p = { name: 'x' };
  t.equal(modernParamsFromLegacy(p), p);
  t.equal(modernParamsFromLegacy(undefined), undefined);
});

t.test('sessionListenFilter', async (t) => {
  const caps = { tools: { listChanged: true }, prompts: { listChanged: false }, resources: { listChanged: true, subscribe: true } };
  t.strictSame(sessionListenFilter(caps, { lists: true, resources: ['a://1'] }), {
    toolsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: ['a://1'],
  });
  t.strictSame(
    sessionListenFilter(caps, { lists: false, resources: ['a://1'] }),
    { resourceSubscriptions: ['a://1'] },
    'without a GET stream only resource updates',
  );
  t.equal(sessionListenFilter(caps, { lists: false, resources: [] }), undefined);
  t.equal(sessionListenFilter({}, { lists: true, resources: [] }), undefined, 'nothing announced, nothing to listen for');
  t.equal(sessionListenFilter({ resources: {} }, { lists: false, resources: ['a://1'] }), undefined, 'no subscriptions asked of an upstream that offers none');
});

t.test('offersSubscriptions: resources.subscribe true, nothing else', async (t) => {
  t.equal(offersSubscriptions({ resources: { subscribe: true } }), true);
  for (const caps of [{}, { resources: {} }, { resources: { subscribe: false } }, { resources: { listChanged: true } }, { resources: true }]) {
    t.equal(offersSubscriptions(caps as never), false, JSON.stringify(caps));
  }
});

t.test('legacyInputParams', async (t) => {
  t.strictSame(legacyInputParams('elicitation/create', { mode: 'url', url: 'https://x', message: 'm' }, 'e1'), {
    mode: 'url',
    url: 'https://x',
    message: 'm',
    elicitationId: 'e1',
  });
  const form = { mode: 'form', message: 'm', requestedSchema: { type: 'object', properties: {} } };
  t.equal(legacyInputParams('elicitation/create', form, 'e1'), form);
  const own = { mode: 'url', url: 'u', message: 'm', elicitationId: 'mine' };
  t.equal(legacyInputParams('elicitation/create', own, 'e1'), own);
  t.equal(legacyInputParams('roots/list', undefined, 'e1'), undefined);
});
