/**
 * Whether a route's upstream can run a tool as a task: its era and capabilities, and a legacy upstream's tools/list by tool name, refreshed once per
 * route at a time.
 */
import { declaresTasks, legacySupportsToolTasks, modeTraits, raceAbort, toolTaskSupport, type JsonObject, type TaskSupport } from '../../translate/index.js';
import { requestOnce } from '../../upstream/index.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from '../route.js';

/** The task support of each route's tools, learned from its upstream. */
export class ToolSupport {
  /** The tools/list refresh in flight per route, shared by the calls that need it. */
  private readonly refreshing = new Map<string, Promise<Map<string, TaskSupport>>>();

  /** `ttlMs`: how long the upstream's tool list (task support) is trusted. */
  constructor(private readonly ttlMs: number) {}

  /**
   * Whether the route's upstream can run this tool as a task: a modern upstream with the tasks extension decides per
   * call (`optional` for every tool; tasks extension §Task Creation), a legacy one says per tool in its tools/list
   * (2025-11-25 basic/utilities/tasks §Tool-Level Negotiation).
   */
  async of(route: UpstreamRoute, caller: CallerContext, tool: string, signal?: AbortSignal): Promise<TaskSupport> {
    const identity = route.upstream.knownIdentity ?? (await route.upstream.identity(caller, signal));
    if (route.upstream.era === 'modern') return declaresTasks(identity.capabilities) ? 'optional' : 'forbidden';
    if (!legacySupportsToolTasks(identity.capabilities)) return 'forbidden';
    const age = route.toolSupport ? Date.now() - route.toolSupport.at : Infinity;
    // Refetch when stale, or for a name not seen yet at most every few seconds (unknown names must not
    // turn every call into an upstream tools/list).
    if (age >= this.ttlMs || (!route.toolSupport?.byName.has(tool) && age >= 5_000)) {
      // One refresh per route at a time: a burst of calls waits for the same tools/list rather than each taking an
      // upstream session for it (a burst past the caller's session share would otherwise be refused for a list).
      let refresh = this.refreshing.get(route.name);
      if (!refresh) {
        // Not tied to the first caller's request: its going away must not fail the others waiting on the same list.
        refresh = fetchToolSupport(route, caller, AbortSignal.timeout(route.timeoutMs)).finally(() => this.refreshing.delete(route.name));
        this.refreshing.set(route.name, refresh);
      }
      route.toolSupport = { at: Date.now(), byName: await raceAbort(refresh, signal) };
    }
    return route.toolSupport?.byName.get(tool) ?? 'forbidden';
  }
}

/** Every page of the upstream's tools/list (bounded), as one map of task support by tool name. */
async function fetchToolSupport(route: UpstreamRoute, caller: CallerContext, signal: AbortSignal): Promise<Map<string, TaskSupport>> {
  const byName = new Map<string, TaskSupport>();
  await eachListPage(route, caller, signal, (page) => {
    for (const [k, v] of toolTaskSupport(page)) byName.set(k, v);
  });
  return byName;
}

/** Pages of the upstream's tools/list one reads at most (a list longer than this is read in part). */
const MAX_TOOLS_PAGES = 50;

/**
 * Reads every page of one of the upstream's lists (`tools/list` unless said) for `caller` (2025-11-25 and 2026-07-28
 * server/utilities/pagination: `nextCursor` until none), at most `MAX_TOOLS_PAGES`; an error answer ends the walk with
 * the pages read. Each page is handed over, and awaited, before the next is asked.
 */
export async function eachListPage(
  route: UpstreamRoute,
  caller: CallerContext,
  signal: AbortSignal,
  page: (result: JsonObject) => void | Promise<void>,
  method = 'tools/list',
): Promise<void> {
  let cursor: string | undefined;
  for (let n = 0; n < MAX_TOOLS_PAGES; n++) {
    const res = await requestOnce(route.upstream, caller, method, cursor ? { cursor } : {}, signal);
    if (!('result' in res)) return;
    await page(res.result);
    cursor = typeof res.result.nextCursor === 'string' ? res.result.nextCursor : undefined;
    if (!cursor) return;
  }
}

/**
 * A tool's 2025-11-25 `execution.taskSupport` on a route that can run tasks (2025-11-25 basic/utilities/tasks
 * §Tool-Level Negotiation): the rule's mode says (its `legacySupport` trait, translate/task-modes.ts); under a mode that
 * keeps the upstream's tasks the upstream does: a modern upstream with the tasks extension may answer any tool with a
 * task (the gateway cannot see which tools require one, so optional), a legacy one says per tool.
 */
export function legacyTaskSupport(
  policy: TaskPolicy['task'],
  upstream: { era: 'modern'; extension: boolean } | { era: 'legacy'; support: TaskSupport | undefined },
): TaskSupport {
  const shown = modeTraits(policy).legacySupport;
  if (shown !== 'upstream') return shown;
  if (upstream.era === 'modern') return upstream.extension ? 'optional' : 'forbidden';
  return upstream.support ?? 'forbidden';
}
