// Task events across instances: changes of other instances reach this one's listeners, never older than what was told.
import t from 'tap';
import { MemoryTaskStore } from '../../../src/store/index.js';
import type { JsonObject, TaskId, TaskRecord } from '../../../src/translate/index.js';
// TaskEvents is internal to the runtime layer: tested through its own module.
import { TASK_TOPIC, TaskEvents } from '../../../src/tasks/records/task-events.js';

function record(version: number, status: TaskRecord['status']): TaskRecord {
  return {
    taskId: 'gwt_events' as TaskId,
    principal: 'p',
    upstream: 'u',
    kind: 'owned',
    tool: 'slow',
    status,
    createdAt: '2026-12-01T00:00:00.000Z',
    lastUpdatedAt: '2026-12-01T00:00:00.000Z',
    ttlMs: 60_000,
    version,
  };
}

/** Resolves once `n` publishes of the topic have been delivered to every subscriber. */
async function delivered(store: MemoryTaskStore, n: number, publish: () => Promise<void>): Promise<void> {
  let seen = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const off = await store.subscribe(TASK_TOPIC, () => {
    if (++seen === n) done();
  });
  await publish();
  await all;
  off();
}

t.test('changes of another instance arriving out of order: a listener never hears a task go back', async (t) => {
  const store = new MemoryTaskStore({ maxTasks: 10 });
  const b = new TaskEvents(store, 'gwi_b');
  await b.start();
  const heard: Array<[number, string]> = [];
  b.on((r) => heard.push([r.version, r.status]));
  const from = (r: TaskRecord): JsonObject => ({ from: 'gwi_a', record: r as unknown as JsonObject });
  await delivered(store, 4, async () => {
    await store.publish(TASK_TOPIC, from(record(3, 'input_required')));
    await store.publish(TASK_TOPIC, from(record(2, 'working'))); // older: dropped
    await store.publish(TASK_TOPIC, from(record(4, 'completed')));
    await store.publish(TASK_TOPIC, from(record(5, 'working'))); // after a terminal one: dropped
  });
  t.same(heard, [
    [3, 'input_required'],
    [4, 'completed'],
  ]);
  b.close();
  await store.close();
});

t.test('its own changes come back from the store and are not told twice', async (t) => {
  const store = new MemoryTaskStore({ maxTasks: 10 });
  const a = new TaskEvents(store, 'gwi_a');
  await a.start();
  await store.create(record(0, 'working'), 60_000);
  const heard: number[] = [];
  a.on((r) => heard.push(r.version));
  await delivered(store, 1, async () => {
    await a.change('gwt_events' as TaskId, (r) => ({ ...r, statusMessage: 'half' }));
  });
  t.same(heard, [1]);
  a.close();
  await store.close();
});
