/** translate/abort: waiting on shared work with one caller's signal. */
import t from 'tap';
import { raceAbort } from '../../src/translate/abort.js';

t.test('raceAbort: the value, the work’s own failure, or the signal’s reason when it aborts first', async (t) => {
  t.equal(await raceAbort(Promise.resolve(1), undefined), 1, 'no signal: the promise itself');
  t.equal(await raceAbort(Promise.resolve(2), new AbortController().signal), 2, 'settles first: its value');
  await t.rejects(raceAbort(Promise.reject(new Error('broke')), new AbortController().signal), /broke/, 'its own failure');
  const c = new AbortController();
  let finish!: (v: number) => void;
  const shared = new Promise<number>((resolve) => (finish = resolve));
  const mine = raceAbort(shared, c.signal);
  c.abort(new Error('caller left'));
  await t.rejects(mine, /caller left/, 'the caller going away rejects its wait');
  finish(3);
  t.equal(await shared, 3, 'the shared work goes on for the others');
  const gone = new AbortController();
  gone.abort();
  await t.rejects(raceAbort(shared, gone.signal), /aborted|This operation was aborted/, 'already aborted: at once');
});
