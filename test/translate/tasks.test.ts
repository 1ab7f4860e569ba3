/**
 * translate/tasks: the era-neutral task model and the mappings that belong to neither era alone: statuses, retention
 * and poll interval from either wire, the legacy view of a status, and a task's outcome from a legacy payload
 * (translation.md §1.4, §1.6, §1.10, §2.3, §4.4–4.6).
 */
import t from 'tap';
import type { JsonRpcErrorObject } from '../../src/translate/jsonrpc.js';
import {
  inlineResult,
  isTerminal,
  legacyStatus,
  outcomeFromPayload,
  pollIntervalMsFromLegacy,
  pollIntervalMsFromWire,
  TERMINAL_STATUSES,
  ttlMsFromLegacy,
  ttlMsFromWire,
  withoutRelatedTask,
  type TaskStatus,
} from '../../src/translate/tasks.js';
import { clone, K, LEGACY_TASKS, LEGACY_WIRE, type Json } from '../fixtures/translate-wire.js';
import { STATUSES } from '../helpers/task-records.js';

t.test('TERMINAL_STATUSES / isTerminal', async (t) => {
  t.same([...TERMINAL_STATUSES].sort(), ['cancelled', 'completed', 'failed']);
  const table: Array<[TaskStatus, boolean]> = [
    ['working', false],
    ['input_required', false],
    ['completed', true],
    ['failed', true],
    ['cancelled', true],
  ];
  t.same(
    table.map(([s]) => s),
    STATUSES,
    'the table covers all five statuses',
  );
  for (const [status, want] of table) {
    t.equal(isTerminal(status), want, status);
    t.equal(TERMINAL_STATUSES.includes(status), want, `${status}: TERMINAL_STATUSES agrees`);
  }
});

t.test('ttlMsFromWire (ttlMsFromLegacy): legacy ttl and modern ttlMs → the gateway ttlMs', async (t) => {
  t.equal(ttlMsFromLegacy, ttlMsFromWire, 'the legacy name is the same function');
  const table: Array<[string, unknown, number | null]> = [
    ['null (unlimited) kept', null, null],
    ['undefined (missing, non-compliant) → null', undefined, null],
    ['NaN', NaN, null],
    ['Infinity', Infinity, null],
    ['-Infinity', -Infinity, null],
    ['numeric string', '1500', null],
    ['boolean', true, null],
    ['object', { ttl: 1 }, null],
    ['integer kept', 120_000, 120_000],
    ['1500.6 rounds up', 1500.6, 1501],
    ['1500.4 rounds down', 1500.4, 1500],
    ['0 → 1', 0, 1],
    ['-0 → 1', -0, 1],
    ['0.4 → 1', 0.4, 1],
    ['-5 → 1', -5, 1],
    ['-5.7 → 1', -5.7, 1],
  ];
  for (const [name, v, want] of table) {
    const got = ttlMsFromWire(v);
    t.equal(got, want, name);
    if (got !== null) t.ok(Number.isInteger(got) && got > 0, `${name}: positive integer`);
  }
});

t.test('pollIntervalMsFromWire (pollIntervalMsFromLegacy): pollInterval / pollIntervalMs → a positive integer or absent', async (t) => {
  t.equal(pollIntervalMsFromLegacy, pollIntervalMsFromWire, 'the legacy name is the same function');
  const table: Array<[string, unknown, number | undefined]> = [
    ['absent', undefined, undefined],
    ['null', null, undefined],
    ['0', 0, undefined],
    ['negative', -100, undefined],
    ['-0.4', -0.4, undefined],
    ['0.4 rounds to 0', 0.4, undefined],
    ['0.5 rounds to 1', 0.5, 1],
    ['250.4 → 250', 250.4, 250],
    ['250.5 → 251', 250.5, 251],
    ['integer kept', 2000, 2000],
    ['NaN', NaN, undefined],
    ['Infinity', Infinity, undefined],
    ['numeric string', '250', undefined],
    ['object', { ms: 250 }, undefined],
  ];
  for (const [name, v, want] of table) {
    const got = pollIntervalMsFromWire(v);
    t.equal(got, want, name);
    if (got !== undefined) t.ok(Number.isInteger(got) && got > 0, `${name}: positive integer`);
  }
});

t.test('inlineResult', async (t) => {
  const rt = { [K.relatedTask]: { taskId: 'upstream-task-1' } };
  // [name, legacy payload, expected]
  const table: Array<[string, Json, Json]> = [
    [
      'CallToolResult fixture: related-task stripped, other _meta kept',
      clone(LEGACY_WIRE.toolsCallResult) as Json,
      {
        content: [{ type: 'text', text: 'done' }],
        isError: false,
        resultType: 'complete',
        _meta: { 'com.example/trace': 'abc' },
      },
    ],
    [
      'isError kept, emptied _meta dropped',
      clone(LEGACY_TASKS.payloadIsError) as Json,
      { content: [{ type: 'text', text: 'quota exceeded' }], isError: true, resultType: 'complete' },
    ],
    ['no _meta', { content: [] }, { content: [], resultType: 'complete' }],
    ['empty _meta dropped', { content: [], _meta: {} }, { content: [], resultType: 'complete' }],
    [
      '_meta without related-task kept as is',
      { content: [], _meta: { progressToken: 1 } },
      { content: [], resultType: 'complete', _meta: { progressToken: 1 } },
    ],
    ['several other keys kept', { content: [], _meta: { ...rt, a: 1, b: { c: 2 } } }, { content: [], resultType: 'complete', _meta: { a: 1, b: { c: 2 } } }],
    ['resultType overwritten', { content: [], resultType: 'task' }, { content: [], resultType: 'complete' }],
    [
      'structuredContent and unknown keys kept',
      { content: [], structuredContent: { n: 1 }, 'x-vendor': true },
      { content: [], structuredContent: { n: 1 }, 'x-vendor': true, resultType: 'complete' },
    ],
    ['empty payload', {}, { resultType: 'complete' }],
  ];
  for (const [name, legacy, want] of table) {
    t.test(name, async (t) => {
      const before = clone(legacy);
      const got = inlineResult(legacy);
      t.strictSame(got, want);
      t.notOk(K.relatedTask in ((got._meta as Json | undefined) ?? {}), 'no related-task _meta');
      t.strictSame(legacy, before, 'input (and its _meta) not mutated');
    });
  }
});

t.test('outcomeFromPayload', async (t) => {
  t.strictSame(
    outcomeFromPayload({ result: clone(LEGACY_TASKS.payloadIsError) as Json }),
    {
      status: 'completed',
      result: { content: [{ type: 'text', text: 'quota exceeded' }], isError: true, resultType: 'complete' },
    },
    'isError result → completed (not failed), inlined',
  );
  t.strictSame(
    outcomeFromPayload({ result: clone(LEGACY_WIRE.toolsCallResult) as Json }),
    {
      status: 'completed',
      result: inlineResult(clone(LEGACY_WIRE.toolsCallResult) as Json),
    },
    'success result → completed, inlined like inlineResult',
  );
  t.strictSame(outcomeFromPayload({ result: {} }), { status: 'completed', result: { resultType: 'complete' } }, 'empty result');

  const errors: Array<[string, JsonRpcErrorObject]> = [
    ['fixture error with data', clone(LEGACY_TASKS.payloadError) as JsonRpcErrorObject],
    ['error without data', { code: -32601, message: 'Method not found' }],
    ['application error code', { code: 42, message: 'nope', data: null }],
  ];
  for (const [name, error] of errors) {
    const before = clone(error);
    t.strictSame(outcomeFromPayload({ error }), { status: 'failed', error: before }, `JSON-RPC error → failed: ${name}`);
    t.strictSame(error, before, `${name}: not mutated`);
  }
});

t.test('legacyStatus: what a 2025-11-25 requestor sees', async (t) => {
  // [name, status, result, expected]
  const table: Array<[string, TaskStatus, Json | undefined, TaskStatus]> = [
    ['completed + isError: true → failed (a tool error fails a legacy tool task)', 'completed', { content: [], isError: true }, 'failed'],
    ['completed + isError: false stays completed', 'completed', { content: [], isError: false }, 'completed'],
    ['completed without isError stays completed', 'completed', { content: [] }, 'completed'],
    ['completed without a stored result stays completed', 'completed', undefined, 'completed'],
    ['completed + isError "true" (a string) stays completed', 'completed', { content: [], isError: 'true' }, 'completed'],
    ['failed stays failed', 'failed', undefined, 'failed'],
    ['working with an isError result is not terminal: stays working', 'working', { content: [], isError: true }, 'working'],
    ['input_required stays', 'input_required', undefined, 'input_required'],
    ['cancelled stays, whatever the late result', 'cancelled', { content: [], isError: true }, 'cancelled'],
  ];
  for (const [name, status, result, want] of table) t.equal(legacyStatus(status, result), want, name);
  for (const status of STATUSES) t.equal(legacyStatus(status), status, `${status} without a result is itself`);
});

t.test('withoutRelatedTask', async (t) => {
  const rt = { [K.relatedTask]: { taskId: 'up-1' } };
  // [name, legacy, expected]
  const table: Array<[string, Json, Json]> = [
    [
      'an elicitation answer: related-task gone with its emptied _meta',
      { action: 'accept', content: { region: 'eu' }, _meta: rt },
      { action: 'accept', content: { region: 'eu' } },
    ],
    ['other _meta kept', { action: 'decline', _meta: { ...rt, 'com.example/x': 1 } }, { action: 'decline', _meta: { 'com.example/x': 1 } }],
    ['no _meta: unchanged', { roots: [] }, { roots: [] }],
    ['_meta without related-task kept', { roots: [], _meta: { a: 1 } }, { roots: [], _meta: { a: 1 } }],
    ['empty _meta dropped', { roots: [], _meta: {} }, { roots: [] }],
    ['malformed _meta dropped', { roots: [], _meta: 'x' }, { roots: [] }],
    [
      'a tasks/result payload',
      clone(LEGACY_WIRE.toolsCallResult) as Json,
      { content: [{ type: 'text', text: 'done' }], isError: false, _meta: { 'com.example/trace': 'abc' } },
    ],
  ];
  for (const [name, legacy, want] of table) {
    const before = clone(legacy);
    t.strictSame(withoutRelatedTask(legacy), want, name);
    t.strictSame(legacy, before, `${name}: input not mutated`);
  }
});
