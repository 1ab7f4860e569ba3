/** A tool's 2025-11-25 `execution.taskSupport` as the legacy face shows it: the rule first, else the upstream. */
import t from 'tap';
import { legacyTaskSupport } from '../../../src/tasks/index.js';

t.test('wrapping rules decide whatever the upstream says', async (t) => {
  for (const upstream of [
    { era: 'modern', extension: false },
    { era: 'legacy', support: 'required' },
  ] as const) {
    t.equal(legacyTaskSupport('always', upstream), 'optional');
    t.equal(legacyTaskSupport('auto', upstream), 'optional');
    t.equal(legacyTaskSupport('required', upstream), 'required');
    t.equal(legacyTaskSupport('off', upstream), 'forbidden');
  }
});

t.test('native: the upstream decides', async (t) => {
  t.equal(legacyTaskSupport('native', { era: 'modern', extension: true }), 'optional', 'any tool of a modern upstream with the extension');
  t.equal(legacyTaskSupport('native', { era: 'modern', extension: false }), 'forbidden');
  t.equal(legacyTaskSupport('native', { era: 'legacy', support: 'required' }), 'required', "a legacy upstream's own value");
  t.equal(legacyTaskSupport('native', { era: 'legacy', support: 'optional' }), 'optional');
  t.equal(legacyTaskSupport('native', { era: 'legacy', support: undefined }), 'forbidden', 'absent is forbidden');
});
