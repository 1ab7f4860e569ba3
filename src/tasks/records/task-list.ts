/** One `tasks/list` page of a caller's tasks on a route, read from the store, with the opaque cursor of where it ended. */
import { isObject, type TaskRecord } from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';
import type { CallerContext, UpstreamRoute } from '../route.js';
import { InvalidCursorError } from './task-limits.js';

/** A `tasks/list` page (2025-11-25 basic/utilities/tasks §Listing Tasks: the page size is the server's choice). */
const LIST_PAGE_SIZE = 50;

/**
 * A 2025-11-25 `tasks/list` page of the caller's tasks on this route (its session's, when it has no credentials),
 * with an opaque cursor; `InvalidCursorError` for a cursor this gateway did not issue. Records as stored.
 */
export async function listPage(
  store: TaskStore,
  route: UpstreamRoute,
  caller: CallerContext,
  cursor: string | undefined,
): Promise<{ tasks: TaskRecord[]; nextCursor?: string }> {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  if (cursor !== undefined && !after) throw new InvalidCursorError();
  const page = await store.list({
    principal: caller.principal,
    upstream: route.name,
    ...(caller.session !== undefined ? { session: caller.session } : {}),
    ...(after ? { after } : {}),
    limit: LIST_PAGE_SIZE,
  });
  const last = page.tasks.at(-1);
  return { tasks: page.tasks, ...(page.more && last ? { nextCursor: encodeCursor(last) } : {}) };
}

/** A `tasks/list` cursor: where the page ended, opaque to the client. */
function encodeCursor(r: { createdAt: string; taskId: string }): string {
  return Buffer.from(JSON.stringify({ c: r.createdAt, t: r.taskId })).toString('base64url');
}

/** A cursor `encodeCursor` made, or `undefined`. */
function decodeCursor(cursor: string): { createdAt: string; taskId: string } | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return isObject(v) && typeof v.c === 'string' && typeof v.t === 'string' ? { createdAt: v.c, taskId: v.t } : undefined;
  } catch {
    return undefined;
  }
}
