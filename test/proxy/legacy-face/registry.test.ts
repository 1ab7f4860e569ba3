/** The legacy face's session registry: minted ids, principal binding, idle expiry, the bound on sessions. */
import t from 'tap';
import { LegacySessionRegistry, type SessionEndReason } from '../../../src/proxy/legacy-face/registry.js';

function registry(opts: { maxSessions?: number; idleMs?: number } = {}) {
  let clock = 1_000;
  const ended: Array<[string, SessionEndReason]> = [];
  const r = new LegacySessionRegistry<{ name: string }>({ ...opts, now: () => clock, onEnd: (d, why) => ended.push([d.name, why]) });
  return { r, ended, advance: (ms: number) => (clock += ms) };
}

t.test('ids are 128-bit, URL-safe, visible ASCII and distinct', async (t) => {
  const { r } = registry();
  t.teardown(() => r.close());
  const ids = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const e = r.create('p', (id) => ({ name: id }));
    t.ok(e);
    ids.add(e!.id);
    t.match(e!.id, /^[A-Za-z0-9_-]{22}$/);
    t.equal(e!.data.name, e!.id, 'make gets the id');
  }
  t.equal(ids.size, 200);
});

t.test('a session is bound to its principal; another principal sees nothing', async (t) => {
  const { r, ended } = registry();
  t.teardown(() => r.close());
  const e = r.create('alice', () => ({ name: 'a' }))!;
  t.equal(r.lookup(e.id, 'alice'), e);
  t.equal(r.lookup(e.id, 'mallory'), undefined, 'other principal → as unknown');
  t.equal(r.lookup(e.id, 'alice'), e, 'and the session is still there for its owner');
  t.equal(r.lookup('nope', 'alice'), undefined);
  t.equal(r.lookup(undefined, 'alice'), undefined);
  t.strictSame(ended, []);
});

t.test('idle sessions expire; busy ones do not', async (t) => {
  const { r, ended, advance } = registry({ idleMs: 1_000 });
  t.teardown(() => r.close());
  const idle = r.create('p', () => ({ name: 'idle' }))!;
  const busy = r.create('p', () => ({ name: 'busy' }))!;
  const release = r.acquire(busy);
  advance(999);
  t.equal(r.lookup(idle.id, 'p'), idle, 'not yet');
  advance(2);
  t.equal(r.lookup(idle.id, 'p'), undefined, 'expired on lookup');
  t.strictSame(ended, [['idle', 'expired']]);
  t.equal(r.lookup(busy.id, 'p'), busy, 'a request in flight keeps it');
  release();
  release();
  t.equal(busy.busy, 0, 'release is idempotent');
  advance(1_001);
  r.sweep();
  t.strictSame(
    ended,
    [
      ['idle', 'expired'],
      ['busy', 'expired'],
    ],
    'the sweep ends it after the request',
  );
  t.equal(r.size, 0);
});

t.test('touch keeps a session alive', async (t) => {
  const { r, advance } = registry({ idleMs: 1_000 });
  t.teardown(() => r.close());
  const e = r.create('p', () => ({ name: 'x' }))!;
  advance(800);
  r.touch(e);
  advance(800);
  t.equal(r.lookup(e.id, 'p'), e);
});

t.test('the bound: expired first, then the least recently used idle session, then refusal', async (t) => {
  const { r, ended, advance } = registry({ maxSessions: 2, idleMs: 10_000 });
  t.teardown(() => r.close());
  const a = r.create('p', () => ({ name: 'a' }))!;
  advance(10);
  const b = r.create('p', () => ({ name: 'b' }))!;
  advance(10);
  r.touch(a);
  const c = r.create('p', () => ({ name: 'c' }))!;
  t.ok(c, 'room made');
  t.strictSame(ended, [['b', 'evicted']], 'b was the least recently used');
  t.equal(r.size, 2);
  const ra = r.acquire(a);
  const rc = r.acquire(c);
  t.equal(
    r.create('p', () => ({ name: 'd' })),
    undefined,
    'all busy → refused',
  );
  ra();
  rc();
  advance(10_001);
  t.ok(
    r.create('p', () => ({ name: 'e' })),
    'expired sessions make room',
  );
  t.strictSame(ended.slice(1), [
    ['a', 'expired'],
    ['c', 'expired'],
  ]);
  t.equal(r.lookup(b.id, 'p'), undefined);
});

t.test('end and close', async (t) => {
  const { r, ended } = registry();
  const a = r.create('p', () => ({ name: 'a' }))!;
  r.create('p', () => ({ name: 'b' }));
  t.ok(r.end(a.id, 'deleted'));
  t.notOk(r.end(a.id, 'deleted'), 'once');
  r.close();
  r.close();
  t.strictSame(ended, [
    ['a', 'deleted'],
    ['b', 'closed'],
  ]);
  t.equal(r.size, 0);
});

t.test('adopt: a session minted elsewhere is held under its own id, once, for its principal, within the bound', async (t) => {
  const { r, ended } = registry({ maxSessions: 1 });
  t.teardown(() => r.close());
  const a = r.adopt('minted-on-a', 'alice', (id) => ({ name: id }))!;
  t.equal(a.id, 'minted-on-a');
  t.equal(r.lookup('minted-on-a', 'alice'), a);
  t.equal(
    r.adopt('minted-on-a', 'alice', () => ({ name: 'again' })),
    a,
    'held already: the same copy',
  );
  t.equal(
    r.adopt('minted-on-a', 'mallory', () => ({ name: 'theirs' })),
    undefined,
    'another principal gets nothing',
  );
  const release = r.acquire(a);
  t.equal(
    r.adopt('other', 'alice', () => ({ name: 'other' })),
    undefined,
    'full of busy sessions',
  );
  t.strictSame(
    r.busy().map((e) => e.id),
    ['minted-on-a'],
  );
  release();
  t.ok(
    r.adopt('other', 'alice', () => ({ name: 'other' })),
    'an idle one makes room',
  );
  t.strictSame(ended, [['minted-on-a', 'evicted']]);
  t.equal(r.peek('other')?.principal, 'alice');
});
