/** translate/listen: `subscriptions/listen` (SUB2) ⇄ the legacy GET stream and `resources/subscribe` (translation.md §3.7). */
import t from 'tap';
import type { JsonRpcNotification } from '../../src/translate/jsonrpc.js';
import {
  acceptListenFilter,
  listenAcknowledgement,
  listenClosingResult,
  listenNotification,
  readListenFilter,
  type ListenFilter,
} from '../../src/translate/listen.js';
import { clone, K, LEGACY_WIRE, type Json } from '../fixtures/translate-wire.js';

t.test('readListenFilter', async (t) => {
  const table: Array<[string, Json, ListenFilter]> = [
    [
      'everything',
      {
        notifications: {
          toolsListChanged: true,
          promptsListChanged: true,
          resourcesListChanged: true,
          resourceSubscriptions: ['file:///a', 'file:///b'],
          taskIds: ['t1'],
        },
      },
      { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'], taskIds: ['t1'] },
    ],
    ['false flags dropped', { notifications: { toolsListChanged: false, promptsListChanged: false } }, {}],
    ['truthy non-boolean flags dropped', { notifications: { toolsListChanged: 'yes', promptsListChanged: 1, resourcesListChanged: {} } }, {}],
    ['unknown keys dropped', { notifications: { toolsListChanged: true, logs: true, 'x-vendor': true } }, { toolsListChanged: true }],
    [
      'non-string uris dropped, duplicates removed, order kept',
      { notifications: { resourceSubscriptions: ['file:///b', 1, null, 'file:///a', 'file:///b', {}] } },
      { resourceSubscriptions: ['file:///b', 'file:///a'] },
    ],
    ['only junk uris → no key', { notifications: { resourceSubscriptions: [1, null] } }, {}],
    ['empty uri list → no key', { notifications: { resourceSubscriptions: [] } }, {}],
    ['uri list not an array', { notifications: { resourceSubscriptions: 'file:///a' } }, {}],
    ['taskIds deduplicated', { notifications: { taskIds: ['t1', 't1', 2, 't2'] } }, { taskIds: ['t1', 't2'] }],
    ['taskIds not an array', { notifications: { taskIds: 't1' } }, {}],
    ['notifications not an object', { notifications: true }, {}],
    ['notifications array', { notifications: [{ toolsListChanged: true }] }, {}],
    ['flags at the wrong level are ignored', { toolsListChanged: true }, {}],
    ['no params', {}, {}],
  ];
  for (const [name, params, want] of table) {
    const before = clone(params);
    t.strictSame(readListenFilter(params), want, name);
    t.strictSame(params, before, `${name}: input not mutated`);
  }
});

t.test('acceptListenFilter vs upstream capabilities', async (t) => {
  const all: ListenFilter = {
    toolsListChanged: true,
    promptsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: ['file:///a'],
    taskIds: ['t1'],
  };
  const table: Array<[string, ListenFilter, Json, ListenFilter]> = [
    // LEGACY_WIRE.initializeResult: tools listChanged, prompts listChanged:false, resources subscribe+listChanged
    [
      'fixture capabilities',
      all,
      LEGACY_WIRE.initializeResult.capabilities as Json,
      { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///a'] },
    ],
    [
      "everything supported (taskIds are not the upstream's)",
      all,
      {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true, subscribe: true },
      },
      { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///a'] },
    ],
    ['no capabilities', all, {}, {}],
    ['listChanged must be exactly true', all, { tools: { listChanged: 'true' }, prompts: { listChanged: 1 }, resources: { subscribe: 'yes' } }, {}],
    ['capability without listChanged', all, { tools: {}, prompts: {}, resources: {} }, {}],
    ['resources.subscribe without listChanged', all, { resources: { subscribe: true } }, { resourceSubscriptions: ['file:///a'] }],
    ['resources.listChanged without subscribe', all, { resources: { listChanged: true } }, { resourcesListChanged: true }],
    ['capability not an object', all, { tools: true, resources: [] }, {}],
    ['nothing requested', {}, { tools: { listChanged: true }, resources: { subscribe: true } }, {}],
    ['only what was requested', { promptsListChanged: true }, { tools: { listChanged: true }, prompts: { listChanged: true } }, { promptsListChanged: true }],
  ];
  for (const [name, requested, caps, want] of table) t.strictSame(acceptListenFilter(requested, caps), want, name);
});

t.test('listenAcknowledgement shape', async (t) => {
  const accepted: ListenFilter = { toolsListChanged: true, resourceSubscriptions: ['file:///a'] };
  const table: Array<[string | number, ListenFilter]> = [
    ['listen-1', accepted],
    [42, {}],
  ];
  for (const [id, filter] of table) {
    const ack = listenAcknowledgement(id, filter);
    t.strictSame(
      ack,
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: filter, _meta: { [K.subscriptionId]: id } },
      },
      `ack for ${id}`,
    );
    t.notOk('id' in ack, 'a notification: no id');
    t.not(ack.params?.notifications, filter, 'a copy of the filter');
  }
});

t.test('listenClosingResult', async (t) => {
  t.strictSame(listenClosingResult('listen-1'), { resultType: 'complete', _meta: { [K.subscriptionId]: 'listen-1' } });
  t.strictSame(listenClosingResult(0), { resultType: 'complete', _meta: { [K.subscriptionId]: 0 } });
});

t.test('listenNotification tagging and filtering', async (t) => {
  const sid = 'listen-9';
  const n = LEGACY_WIRE.notifications;
  const all: ListenFilter = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///watched'] };
  const tag = (m: JsonRpcNotification, params: Json = {}) => ({ jsonrpc: '2.0', method: m.method, params: { ...params, _meta: { [K.subscriptionId]: sid } } });

  // [name, legacy notification, accepted filter, expected]
  const table: Array<[string, JsonRpcNotification, ListenFilter, unknown]> = [
    ['tools changed, opted in', n.toolsChanged, all, tag(n.toolsChanged)],
    ['tools changed, not opted in', n.toolsChanged, { promptsListChanged: true }, undefined],
    ['prompts changed, opted in', n.promptsChanged, all, tag(n.promptsChanged)],
    ['prompts changed, not opted in', n.promptsChanged, { toolsListChanged: true }, undefined],
    ['resources changed, opted in', n.resourcesChanged, all, tag(n.resourcesChanged)],
    ['resources changed, not opted in', n.resourcesChanged, {}, undefined],
    [
      'resource updated, watched uri (legacy _meta kept)',
      n.resourceUpdated('file:///watched'),
      all,
      {
        jsonrpc: '2.0',
        method: 'notifications/resources/updated',
        params: { uri: 'file:///watched', _meta: { 'com.example/x': 1, [K.subscriptionId]: sid } },
      },
    ],
    ['resource updated, other uri', n.resourceUpdated('file:///other'), all, undefined],
    ['resource updated, prefix of a watched uri', n.resourceUpdated('file:///watch'), all, undefined],
    ['resource updated, no subscriptions', n.resourceUpdated('file:///watched'), { resourcesListChanged: true }, undefined],
    ['resource updated, uri missing', { jsonrpc: '2.0', method: 'notifications/resources/updated', params: {} }, all, undefined],
    ['resource updated, no params', { jsonrpc: '2.0', method: 'notifications/resources/updated' }, all, undefined],
    ['log message is never relayed', n.log, all, undefined],
    ['task status is not a legacy stream type', n.taskStatus, { ...all, taskIds: ['t'] }, undefined],
    ['unknown notification', { jsonrpc: '2.0', method: 'notifications/vendor' }, all, undefined],
    [
      'subscriptionId overrides one sent upstream',
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [K.subscriptionId]: 'spoofed' } } },
      all,
      tag(n.toolsChanged),
    ],
    ['junk _meta replaced', { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: 'x' } }, all, tag(n.toolsChanged)],
  ];
  for (const [name, legacy, filter, want] of table) {
    const before = clone(legacy);
    t.strictSame(listenNotification(legacy, filter, sid), want, name);
    t.strictSame(legacy, before, `${name}: input not mutated`);
  }
  t.strictSame(listenNotification(n.toolsChanged, all, 7)?.params?._meta, { [K.subscriptionId]: 7 }, 'numeric listen id');
});
