/** The operator log (pino's JSON lines) captured for a test, with a bounded wait for a line (not a test file). */
import { Writable } from 'node:stream';
import { bounded } from './era-clients.js';

/** The operator log as parsed lines, with a bounded wait for one. */
export class LogLines {
  readonly lines: Array<Record<string, any>> = [];
  private waiters = new Set<() => void>();
  readonly stream = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      for (const l of chunk.toString('utf8').split('\n')) {
        if (l.trim() === '') continue;
        this.lines.push(JSON.parse(l));
      }
      for (const w of [...this.waiters]) w();
      done();
    },
  });
  /** Resolves with the `count`th line (seen or to come) matching `pred`. */
  waitFor(pred: (l: Record<string, any>) => boolean, what: string, count = 1): Promise<Record<string, any>> {
    return bounded(
      new Promise((resolve) => {
        const check = (): boolean => {
          const hit = this.lines.filter(pred)[count - 1];
          if (hit) resolve(hit);
          return hit !== undefined;
        };
        if (check()) return;
        const w = (): void => {
          if (check()) this.waiters.delete(w);
        };
        this.waiters.add(w);
      }),
      what,
    );
  }
}
