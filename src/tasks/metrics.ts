/**
 * What the task layer tells the metrics about (the edge keeps the Prometheus registry; this layer knows only these
 * callbacks). The default tells nobody.
 */

/** Events of the runtime that no audit event carries. */
export interface TaskMetrics {
  /** One MRTR round ended asking the client for input (an `input_required` result went out). */
  mrtrRound(upstream: string): void;
}

/** Metrics that record nothing (tests, tools that need none). */
export const NO_TASK_METRICS: TaskMetrics = { mrtrRound: () => {} };
