/** The ids of task input requests the legacy face sends: they name the task and the key, so any instance reads them. */
import t from 'tap';
import { readInputRequestId } from '../../../src/proxy/legacy-face/tasks.js';

t.test('a minted id names its task and key; anything else is not one', async (t) => {
  const key = (k: string) => Buffer.from(k, 'utf8').toString('base64url');
  t.strictSame(readInputRequestId(`gwt-in.gwt_abc-DEF_1.${key('confirm')}.7`), { taskId: 'gwt_abc-DEF_1', key: 'confirm' });
  t.strictSame(readInputRequestId(`gwt-in.gwt_x.${key('a.b:ü')}.1`), { taskId: 'gwt_x', key: 'a.b:ü' }, 'any key survives');
  const refused: Array<[string, string]> = [
    ["the face's own call ids", 'gw-1'],
    ['the old per-instance form', 'gwt-in-3'],
    ['no key', 'gwt-in.gwt_x'],
    ['an empty key', 'gwt-in.gwt_x..1'],
    ['a part too many', `gwt-in.gwt_x.${key('k')}.1.2`],
    ['a task id with other characters', `gwt-in.gwt/x.${key('k')}.1`],
    ['oversize', `gwt-in.${'a'.repeat(2000)}.${key('k')}.1`],
  ];
  for (const [why, id] of refused) t.equal(readInputRequestId(id), undefined, why);
});
