/**
 * The audit trail: who did what to which task or session, for operators and incident review. One line per event
 * with the principal's fingerprint, the upstream, the tool and the task id; never payloads, tokens or session ids.
 */
import { createHash } from 'node:crypto';

/** What the audit trail records. */
export type AuditEvent =
  | 'task.created'
  | 'task.input_requested'
  | 'task.input_answered'
  | 'task.cancelled'
  | 'task.completed'
  | 'task.failed'
  | 'task.expired'
  | 'session.opened'
  | 'session.closed'
  | 'auth.failed';

/** The fields of one audit line (all optional; only what the event knows). */
export interface AuditFields {
  /** The caller's principal; written as its fingerprint only. */
  principal?: string;
  upstream?: string;
  tool?: string;
  taskId?: string;
  /** Which client era the event came through. */
  era?: 'legacy' | 'modern';
  /** A short, fixed reason (an auth failure's kind, an error's catalog code); never a token or a payload. */
  reason?: string;
}

/** Where audit events go. */
export interface AuditLog {
  record(event: AuditEvent, fields: AuditFields): void;
}

/** An audit trail that records nothing (tests, tools that need none). */
export const NO_AUDIT: AuditLog = { record: () => {} };

/**
 * One audit trail feeding several (the operator log and the metrics): each event reaches every one, and a failing one
 * does not keep it from the others.
 */
export function teeAudit(...logs: readonly AuditLog[]): AuditLog {
  return {
    record(event, fields) {
      for (const log of logs) {
        try {
          log.record(event, fields);
        } catch {
          // one sink's fault is its own
        }
      }
    },
  };
}

/**
 * A short, stable fingerprint of a principal for logs: enough to tell callers apart and correlate lines, not enough
 * to stand in for the principal (the principal is itself already a keyed hash of the credentials).
 */
export function principalFingerprint(principal: string): string {
  return createHash('sha256').update(principal).digest('base64url').slice(0, 12);
}
