/** The intrusive list of what is in flight (src/upstream/in-flight.ts): the modern client's exchanges, the edge drain's open responses. */
import t from 'tap';
import { InFlight } from '../../src/upstream/in-flight.js';

t.test('values are listed newest first; a removed one is gone, a second removal does nothing', async (t) => {
  const list = new InFlight<string>();
  const a = list.add('a');
  const b = list.add('b');
  const c = list.add('c');
  t.same(list.values(), ['c', 'b', 'a']);
  list.remove(b);
  t.same(list.values(), ['c', 'a'], 'from the middle');
  list.remove(c);
  t.same(list.values(), ['a'], 'the newest');
  list.remove(c);
  list.remove(b);
  t.same(list.values(), ['a'], 'removed twice: nothing');
  list.remove(a);
  t.same(list.values(), []);
});

t.test('values leaves the list as it was, and its array may be walked while values are removed', async (t) => {
  const list = new InFlight<number>();
  const nodes = [1, 2, 3].map((n) => list.add(n));
  const seen: number[] = [];
  for (const v of list.values()) {
    seen.push(v);
    list.remove(nodes[v - 1]!);
  }
  t.same(seen, [3, 2, 1]);
  t.same(list.values(), []);
});

t.test('drain takes every value out; a node removed after it changes nothing', async (t) => {
  const list = new InFlight<string>();
  const a = list.add('a');
  list.add('b');
  t.same(list.drain(), ['b', 'a']);
  t.same(list.values(), []);
  list.remove(a);
  list.add('c');
  t.same(list.values(), ['c']);
});
