/**
 * The `Mcp-Param-*` header declarations (`x-mcp-header`) of a 2026-07-28 upstream's tools, learned from its `tools/list`
 * (read when a call names a tool not known or stale, shared by concurrent calls), bounded and expiring.
 */
import { isErrorResponse, screenToolsList, type HeaderParam, type JsonObject, type JsonRpcResponse } from '../../translate/index.js';
import type { UpstreamCaller } from '../client.js';
import { raceSignal } from './call.js';

const DEFAULT_TOOL_TTL_MS = 60_000;
const DEFAULT_MAX_TOOLS = 1_000;
/** Most `tools/list` pages read to learn tool schemas. */
const MAX_TOOL_PAGES = 20;

/** A tool's learned header parameters; `undefined` params = its declarations are invalid. */
interface ToolEntry {
  params: HeaderParam[] | undefined;
  expires: number;
}

/** The learned header parameters of one upstream's tools. */
export class ToolHeaders {
  private readonly tools = new Map<string, ToolEntry>();
  private pending: Promise<void> | undefined;
  private readonly ttlMs: number;
  private readonly maxTools: number;

  /**
   * `list`: one `tools/list` page read whole (bounded by the client's `timeoutMs`); `ttlMs`: how long a tool's
   * declarations are trusted (default 60 s); `maxTools`: most tools kept (default 1000).
   */
  constructor(
    private readonly list: (caller: UpstreamCaller, params: JsonObject) => Promise<JsonRpcResponse>,
    ttlMs?: number,
    maxTools?: number,
  ) {
    this.ttlMs = ttlMs ?? DEFAULT_TOOL_TTL_MS;
    this.maxTools = maxTools ?? DEFAULT_MAX_TOOLS;
  }

  /** The header parameters of the tool a `tools/call` names when they are known and fresh (no list to read); else `undefined`. */
  knownParams(params: JsonObject | undefined): HeaderParam[] | undefined {
    const name = params?.name;
    if (typeof name !== 'string') return [];
    const known = this.tools.get(name);
    return known && known.expires > Date.now() ? (known.params ?? []) : undefined;
  }

  /**
   * The header parameters of the tool a `tools/call` names, from the learned schemas; an unknown or stale tool
   * makes the client read `tools/list` first (shared by concurrent calls, bounded by `timeoutMs`). Best effort:
   * without the list, the request goes without `Mcp-Param-*` headers and the upstream's HeaderMismatch says so.
   * Schemas are learned per upstream, not per caller: a caller shown another schema for the same tool name is
   * covered by the HeaderMismatch re-read in the client's `drive`.
   */
  async paramsFor(caller: UpstreamCaller, params: JsonObject | undefined, stop: { readonly signal: AbortSignal }, force = false): Promise<HeaderParam[]> {
    const name = params?.name;
    if (typeof name !== 'string') return [];
    const known = force ? undefined : this.knownParams(params);
    if (known) return known;
    this.pending ??= this.read(caller).finally(() => {
      this.pending = undefined;
    });
    // The call's signal is asked for only here, where the call waits (`stop` makes one on demand).
    const signal = stop.signal;
    try {
      await raceSignal(this.pending, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      return [];
    }
    return this.tools.get(name)?.params ?? [];
  }

  /** Reads every page of `tools/list` (bounded) and learns each tool's header parameters. */
  private async read(caller: UpstreamCaller): Promise<void> {
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const response = await this.list(caller, cursor === undefined ? {} : { cursor });
      if (isErrorResponse(response)) return;
      this.learn(response.result);
      const next = response.result.nextCursor;
      if (typeof next !== 'string' || next === '') return;
      cursor = next;
    }
  }

  /**
   * Learns header parameters from a `tools/list` result and returns it without the tools whose `x-mcp-header`
   * declarations are invalid (a Streamable HTTP client MUST exclude them, §Schema Extension).
   */
  learn(result: JsonObject): JsonObject {
    const screened = screenToolsList(result);
    const expires = Date.now() + this.ttlMs;
    const learn = (name: string, params: HeaderParam[] | undefined) => {
      this.tools.delete(name); // re-inserted last: the Map's order is the eviction order
      this.tools.set(name, { params, expires });
      while (this.tools.size > this.maxTools) {
        const oldest = this.tools.keys().next();
        if (oldest.done) break;
        this.tools.delete(oldest.value);
      }
    };
    for (const [name, params] of screened.headers) learn(name, params);
    for (const { name } of screened.rejected) learn(name, undefined);
    return screened.result;
  }
}

/** Whether two tools' header parameters are the same (a HeaderMismatch retry is worth it only when they differ). */
export function sameHeaderParams(a: HeaderParam[], b: HeaderParam[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
