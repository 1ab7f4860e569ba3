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
  const upstreams = route.federation ? route.federation.members : [route.name];
  // A federated endpoint's tasks are its members' (docs/federation.md): each member's page, merged in the one order.
  const pages = await Promise.all(
    upstreams.map((upstream) =>
      store.list({
        principal: caller.principal,
        upstream,
        ...(caller.session !== undefined ? { session: caller.session } : {}),
        ...(after ? { after } : {}),
        limit: LIST_PAGE_SIZE,
      }),
    ),
  );
  const page = pages.length === 1 ? (pages[0] as (typeof pages)[number]) : mergePages(pages);
  const last = page.tasks.at(-1);
  return { tasks: page.tasks, ...(page.more && last ? { nextCursor: encodeCursor(last) } : {}) };
}

/** Several pages in creation order, cut to one page: more when any page had more or some were cut. */
function mergePages(pages: Array<{ tasks: TaskRecord[]; more: boolean }>): { tasks: TaskRecord[]; more: boolean } {
  const all = pages.flatMap((p) => p.tasks).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.taskId < b.taskId ? -1 : 1));
  return { tasks: all.slice(0, LIST_PAGE_SIZE), more: all.length > LIST_PAGE_SIZE || pages.some((p) => p.more) };
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
