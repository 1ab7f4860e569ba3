/** The layer logger's helpers: a rejection is logged with the error's name and message only, at the level asked. */
import t from 'tap';
import { errorSummary, logFailure, NO_LOG, type LayerLogger } from '../../src/translate/index.js';

t.test('logFailure writes the error name and message at the level asked, with the fields given', async (t) => {
  const seen: Array<[string, object, string]> = [];
  const log: LayerLogger = {
    debug: (o, m) => seen.push(['debug', o, m]),
    warn: (o, m) => seen.push(['warn', o, m]),
    error: (o, m) => seen.push(['error', o, m]),
  };
  const err = Object.assign(new TypeError('boom'), { bodyText: 'PAYLOAD' });
  await Promise.reject(err).catch(logFailure(log, 'debug', 'cleanup failed', { taskId: 't1' }));
  t.same(seen, [['debug', { taskId: 't1', err: { type: 'TypeError', message: 'boom' } }, 'cleanup failed']]);
  t.notOk(JSON.stringify(seen).includes('PAYLOAD'), 'nothing else the error carries');
  logFailure(log, 'warn', 'odd')('not an error');
  t.same(seen[1], ['warn', { err: { type: 'Error', message: 'not an error' } }, 'odd']);
});

t.test('errorSummary bounds a long message; NO_LOG writes nothing', async (t) => {
  t.equal(errorSummary(new Error('x'.repeat(1000))).message.length, 301);
  t.doesNotThrow(() => NO_LOG.warn({}, 'nothing'));
});
