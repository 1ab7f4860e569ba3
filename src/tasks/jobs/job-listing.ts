/**
 * What `task: job` rules make of a `tools/list` (docs/jobs.md#what-each-client-gets): the tools they hide are left
 * out, and each start tool is listed with the `outputSchema` of the tool whose result its callers receive — the
 * rule's result tool, else its status tool — or with none when that tool lists none (2025-11-25 and 2026-07-28
 * server/tools §Output Schema: a result conforms to the schema its tool is listed with, and clients validate it).
 *
 * The schema comes from the upstream's own tools/list: the entry on the same page when it is there (hidden or not),
 * else the upstream's whole list (every page; the result tool may be on another page than the start tool), read for
 * the caller and kept per route for the tool-support TTL, one read per route at a time. A schema that cannot be
 * learned is listed as none: a client that validates nothing cannot be told a result does not conform.
 */
import { drivesJob, isObject, raceAbort, type JsonObject } from '../../translate/index.js';
import type { JobSpec } from './job-rule.js';
import { withoutHiddenTools, type CallerContext, type TaskPolicy, type UpstreamRoute } from '../route.js';
import { eachListPage } from '../calls/tool-support.js';

/** The upstream's tools by name, each with its listed `outputSchema` (`undefined`: it lists none). */
type Schemas = Map<string, unknown>;

/** The tool whose result a job's caller receives: the rule's result tool, else its status tool (the final status). */
function resultToolOf(spec: JobSpec): string {
  return spec.result?.tool ?? spec.status.tool;
}

/** A route's upstream tools/list as job rules show it to clients. */
export class JobListing {
  /** The whole list's schemas per route and upstream era (bounded by the routes configured), with when it was read. */
  private readonly learned = new Map<string, { at: number; schemas: Schemas }>();
  /** The whole-list read in flight per route, shared by the listings that need it. */
  private readonly reading = new Map<string, Promise<Schemas | undefined>>();

  constructor(
    /** How long a whole list read is trusted. */
    private readonly ttlMs: number,
    /** The rule of a tool on a route. */
    private readonly policyFor: (route: UpstreamRoute, tool: string) => TaskPolicy,
  ) {}

  /**
   * `result` (one page of the upstream's tools/list, in the era it is served in) with the tools job rules hide left out
   * and each start tool's `outputSchema` that of its result tool.
   */
  async list(route: UpstreamRoute, caller: CallerContext, result: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    if (!Array.isArray(result.tools)) return result;
    const page = new Map<string, JsonObject>();
    for (const t of result.tools) if (isObject(t) && typeof t.name === 'string') page.set(t.name, t);
    const sources = new Map<string, string>();
    for (const name of page.keys()) {
      const policy = this.policyFor(route, name);
      if (drivesJob(policy.task) && policy.job) sources.set(name, resultToolOf(policy.job));
    }
    if (sources.size === 0) return withoutHiddenTools(route, result);
    const elsewhere = [...sources.values()].some((tool) => !page.has(tool));
    const whole = elsewhere ? await this.whole(route, caller, signal) : undefined;
    const schemaOf = (tool: string): unknown => (page.has(tool) ? page.get(tool)?.outputSchema : whole?.get(tool));
    const tools = result.tools.map((t) => {
      const source = isObject(t) && typeof t.name === 'string' ? sources.get(t.name) : undefined;
      if (source === undefined) return t;
      const { outputSchema: _own, ...rest } = t as JsonObject;
      const schema = schemaOf(source);
      return schema === undefined ? rest : { ...rest, outputSchema: schema };
    });
    return withoutHiddenTools(route, { ...result, tools });
  }

  /** The upstream's whole tools/list (its schemas), read anew once stale; `undefined` when it cannot be read now. */
  private async whole(route: UpstreamRoute, caller: CallerContext, signal: AbortSignal): Promise<Schemas | undefined> {
    const key = `${route.name} ${route.upstream.era}`;
    const known = this.learned.get(key);
    if (known && Date.now() - known.at < this.ttlMs) return known.schemas;
    let read = this.reading.get(key);
    if (!read) {
      // Not tied to the first caller's request: its going away must not fail the others waiting on the same list.
      read = readSchemas(route, caller, AbortSignal.timeout(route.timeoutMs))
        .then((schemas) => {
          this.learned.set(key, { at: Date.now(), schemas });
          return schemas;
        })
        .catch(() => undefined)
        .finally(() => this.reading.delete(key));
      this.reading.set(key, read);
    }
    return raceAbort(read, signal);
  }
}

/** Every page of the upstream's tools/list, as each tool's listed `outputSchema` by name. */
async function readSchemas(route: UpstreamRoute, caller: CallerContext, signal: AbortSignal): Promise<Schemas> {
  const schemas: Schemas = new Map();
  await eachListPage(route, caller, signal, (page) => {
    if (!Array.isArray(page.tools)) return;
    for (const t of page.tools) if (isObject(t) && typeof t.name === 'string') schemas.set(t.name, t.outputSchema);
  });
  return schemas;
}
