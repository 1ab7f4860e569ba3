/**
 * The audit trail's sink: one structured line per event in the operator log, at `info`, tagged `audit: <event>`.
 * The principal is written only as its fingerprint; the fields are identifiers and fixed reason codes (what
 * `AuditFields` allows), so that no payload, token, `Authorization` value or session id can reach the line.
 */
import { principalFingerprint, type AuditLog } from '../tasks/index.js';

/** What the sink writes to: pino's `info` (a pino logger or a child satisfies it). */
export interface AuditLogger {
  info(obj: object, msg: string): void;
}

/** An AuditLog writing one `info` line per event to `logger`. */
export function createAuditLog(logger: AuditLogger): AuditLog {
  return {
    record(event, fields) {
      const { principal, upstream, tool, taskId, era, reason } = fields;
      const line: Record<string, string> = { audit: event };
      // Only the known fields, each named here: a caller passing more (a stray object) writes nothing extra.
      if (principal !== undefined) line.principal = principalFingerprint(principal);
      if (upstream !== undefined) line.upstream = upstream;
      if (tool !== undefined) line.tool = tool;
      if (taskId !== undefined) line.taskId = taskId;
      if (era !== undefined) line.era = era;
      if (reason !== undefined) line.reason = reason;
      logger.info(line, `audit: ${event}`);
    },
  };
}
