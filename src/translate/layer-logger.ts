/**
 * The logger the runtime and upstream layers write to: the few pino methods they use, as a structural type, so that
 * those layers import no logging library (docs/architecture.md §2) and the composition root hands each a pino child.
 */

/** One log method: a structured object first, then a fixed message (pino's argument order). */
export type LogMethod = (obj: object, msg: string) => void;

/**
 * What `tasks/` and `upstream/` log with. Lines carry identifiers (upstream, task id, method, an error's name and
 * message), never payloads, tokens or session ids.
 */
export interface LayerLogger {
  debug: LogMethod;
  /** What an operator may want to see that is no fault (an stdio server's own stderr log); absent, such lines go to `debug`. */
  info?: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

/** A logger that writes nothing (tests and parts built without one). */
export const NO_LOG: LayerLogger = { debug: () => {}, warn: () => {}, error: () => {} };

/**
 * A rejection handler that logs what failed instead of swallowing it: `debug` for expected races and best-effort
 * cleanup (a cancel of a call that already ended), `warn` for what should not happen. Only the error's name and
 * message are written (never the error object itself, whose fields may carry an upstream's body).
 */
export function logFailure(log: LayerLogger, level: 'debug' | 'warn' | 'error', msg: string, fields: object = {}): (e: unknown) => void {
  return (e) => log[level]({ ...fields, err: errorSummary(e) }, msg);
}

/** An error as a log line shows it: its name and message (bounded), nothing else it carries. */
export function errorSummary(e: unknown): { type: string; message: string } {
  const err = e instanceof Error ? e : new Error(String(e));
  return { type: err.name, message: err.message.length > 300 ? `${err.message.slice(0, 300)}…` : err.message };
}
