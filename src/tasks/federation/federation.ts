/**
 * One federated endpoint: several upstreams (members) of either era behind one path (docs/federation.md). It knows
 * each member's lists (cached per member, and per principal unless the member says its lists are the same for every
 * caller), merges them under each member's names, and answers which member serves a name or a URI. Tool calls and
 * tasks run on the member's own route (the runtime resolves them with `target`), so that each member keeps its own
 * rules, era handling and task records; everything else reaches the members through `FederatedClient`.
 */
import {
  declaresTasks,
  GatewayError,
  isObject,
  legacySupportsToolTasks,
  logFailure,
  NO_LOG,
  raceAbort,
  type JsonObject,
  type JsonRpcNotification,
  type LayerLogger,
  type TaskSupport,
} from '../../translate/index.js';
import {
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  type UpstreamAvailability,
  type UpstreamCaller,
} from '../../upstream/index.js';
import { eachListPage, legacyTaskSupport } from '../calls/tool-support.js';
import type { CallerContext, FederationRouting, TaskPolicy, UpstreamRoute } from '../route.js';
import { MemberNames, nameOf, renamed, type AccessRule, type NameRules } from './naming.js';

/** How a member shows itself (its `expose` and `access`), by its upstream's name. */
export type MemberExposure = Omit<MemberSpec, 'route' | 'modernRoute' | 'availability'>;

/** One member as the composition root describes it. */
export interface MemberSpec {
  /** The upstream's configured name (its routes', its task records'). */
  name: string;
  namespace?: string | undefined;
  tools: NameRules;
  prompts: NameRules;
  /** URIs starting with it are this member's when two members could serve one. */
  resourcePrefix?: string | undefined;
  /** `/readyz` of the path needs it. */
  required: boolean;
  /** `principal`: its lists are cached per caller; `shared`: one cache for every caller. */
  listCache: 'principal' | 'shared';
  access: readonly AccessRule[];
  /** The member through the client of the era it speaks (legacy sessions for a 2025-11-25-only server). */
  route: UpstreamRoute;
  /** The member through its stateless 2026-07-28 client (used when it speaks that era). */
  modernRoute: UpstreamRoute;
  availability: UpstreamAvailability;
}

/** What a federation needs besides its members. */
export interface FederationOptions {
  /** The endpoint's route name (logs, metrics). */
  name: string;
  members: readonly MemberSpec[];
  /** A page of a member's tools/list as its job rules show it (TaskRuntime.listTools). */
  listTools(route: UpstreamRoute, caller: CallerContext, result: JsonObject, signal: AbortSignal): Promise<JsonObject>;
  /** A member's rule for one of its tools (TaskRuntime.policyFor). */
  policyFor(route: UpstreamRoute, tool: string): TaskPolicy;
  /** Told once per name and pair when a member's name is hidden behind an earlier member's (default: nowhere). */
  onCollision?: (c: Collision) => void;
  log?: LayerLogger;
}

/** Two members showing one name: the first in configuration order keeps it. */
export interface Collision {
  kind: 'tool' | 'prompt';
  name: string;
  kept: string;
  hidden: string;
}

/** The lists a federation merges, by the field their results carry them in. */
export const LISTS = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
} as const;
export type ListMethod = keyof typeof LISTS;

/** How long a member's list is trusted when it gives no cache hint of its own (2026-07-28 server/utilities/caching). */
const DEFAULT_LIST_TTL_MS = 30_000;
/** A name not found is looked for again in fresh lists at most this often per member list. */
const MISS_REFRESH_MS = 2_000;
/** Cached lists kept at most (per member, kind and principal): the oldest go first. */
const MAX_CACHED = 4_096;
/** Entries per page of a merged list. */
export const MERGED_PAGE = 500;

/** One member's list as read for one cache key. */
interface CachedList {
  at: number;
  ttlMs: number;
  entries: JsonObject[];
}

/** One member at run time. */
interface Member {
  spec: MemberSpec;
  names: MemberNames;
  /** The names of its tools and prompts last seen (kept while it is down: a call to one is told it is down). */
  lastSeen: { tool: Set<string>; prompt: Set<string> };
}

/** A merged list for one caller: its entries and which member serves each shown name or URI. */
export interface MergedList {
  /** Bumped whenever a member's list changes: cursors of an older merge are refused. */
  generation: number;
  entries: JsonObject[];
  /** Shown name (tools, prompts) or URI / URI template (resources) → the member and its own name. */
  index: Map<string, { member: string; own: string }>;
}

export class Federation implements FederationRouting {
  readonly members: readonly string[];
  private readonly byName = new Map<string, Member>();
  private readonly ordered: Member[];
  private readonly cache = new Map<string, CachedList>();
  private readonly reading = new Map<string, Promise<CachedList>>();
  private readonly merged = new Map<string, MergedList & { from: number }>();
  private readonly collisions = new Set<string>();
  private readonly listeners = new Set<(n: JsonRpcNotification, member: string) => void>();
  private readonly unwatch: Array<() => void> = [];
  private generationNo = 0;
  private readonly log: LayerLogger;

  constructor(private readonly o: FederationOptions) {
    this.log = o.log ?? NO_LOG;
    this.ordered = o.members.map((spec) => ({
      spec,
      names: new MemberNames(spec),
      lastSeen: { tool: new Set(), prompt: new Set() },
    }));
    for (const m of this.ordered) this.byName.set(m.spec.name, m);
    this.members = this.ordered.map((m) => m.spec.name);
    // A member that goes down leaves the lists, and comes back into them when it returns: both are list changes.
    for (const m of this.ordered) {
      // Told when it flips (left or came back), not when it is first learned or re-learned while up.
      let up: boolean | undefined = m.spec.availability.isDown ? false : m.spec.availability.current ? true : undefined;
      this.unwatch.push(
        m.spec.availability.onChange((change) => {
          this.forget(m.spec.name);
          const was = up;
          up = change.up;
          if (was === undefined || was === change.up) return;
          for (const method of ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed'])
            this.tell({ jsonrpc: '2.0', method }, m.spec.name);
        }),
      );
    }
  }

  /** The endpoint's route name. */
  get name(): string {
    return this.o.name;
  }

  /** The members' specs, in configuration order. */
  get specs(): readonly MemberSpec[] {
    return this.o.members;
  }

  has(upstream: string): boolean {
    return this.byName.has(upstream);
  }

  /** The member route a caller reaches a member over: its stateless 2026-07-28 client when it speaks that era. */
  async routeOf(member: string, caller: UpstreamCaller): Promise<UpstreamRoute> {
    const m = this.member(member);
    // A member that speaks the client's era is reached in it (a single endpoint would pass the client through): a
    // dual-era server's 2025-11-25 side for a 2025-11-25 client, with its sessions, its input requests and its own
    // subscriptions, however weaker its 2026-07-28 side (docs/federation.md §Eras and tasks).
    if (caller.clientEra === 'legacy') {
      const eras = await m.spec.availability.legacyEras(caller.authorization);
      return eras.legacy || !eras.modern ? m.spec.route : m.spec.modernRoute;
    }
    const eras = await m.spec.availability.eras(caller.authorization);
    return eras.modern ? m.spec.modernRoute : m.spec.route;
  }

  /** The member route as known now, without I/O (its last known eras). */
  knownRouteOf(member: string): UpstreamRoute {
    const m = this.member(member);
    return m.spec.availability.current?.modern ? m.spec.modernRoute : m.spec.route;
  }

  /** Whether the member is known to be down now. */
  isDown(member: string): boolean {
    return this.member(member).spec.availability.isDown;
  }

  async target(
    kind: 'tool' | 'prompt',
    name: string,
    caller: CallerContext,
    signal?: AbortSignal,
  ): Promise<{ route: UpstreamRoute; name: string } | undefined> {
    const method = kind === 'tool' ? 'tools/list' : 'prompts/list';
    let list = await this.list(method, caller, signal, { stale: true });
    let hit = list.index.get(name);
    if (!hit && this.missRefreshDue(method, caller)) {
      list = await this.list(method, caller, signal, { stale: false, missed: true });
      hit = list.index.get(name);
    }
    if (hit) return { route: await this.routeOf(hit.member, caller), name: hit.own };
    // A name of a member that is down: that member's answer (unavailable, with when to retry), not an unknown name.
    for (const m of this.ordered) {
      if (!m.spec.availability.isDown) continue;
      const own = m.names.own(kind, name);
      if (own === undefined || !m.lastSeen[kind].has(own) || !m.names.allows(name, caller.subject)) continue;
      await m.spec.availability.eras(caller.authorization);
    }
    // A name nobody lists goes as it is to the one member shown as it is, if there is one (no namespace, filter, rename
    // or access rule) and the name is in no other member's namespace: it answers it, as through a single endpoint (a
    // tool it serves but does not list, or its own "unknown tool"). A name in a namespace, or on a path without such
    // a member, is the gateway's unknown name: a denied one answers exactly the same.
    const open = this.openMember;
    if (open && !this.ordered.some((m) => m.spec.namespace && name.startsWith(`${m.spec.namespace}_`)) && !open.spec.availability.isDown)
      return { route: await this.routeOf(open.spec.name, caller), name };
    return undefined;
  }

  /**
   * The one member shown exactly as it is (see `target`), or `undefined`: only when every other member has a namespace,
   * so that a name denied to the caller is always inside one and answers as an unknown name does.
   */
  private get openMember(): Member | undefined {
    const bare = this.ordered.filter((m) => !m.spec.namespace);
    return bare.length === 1 && bare[0]?.names.showsAllAsIs ? bare[0] : undefined;
  }

  availabilityOf(member: string): UpstreamAvailability {
    return this.member(member).spec.availability;
  }

  failed(upstream: string, e: unknown): void {
    const m = this.byName.get(upstream);
    if (!m) return;
    if (e instanceof UpstreamUnavailableError || e instanceof UpstreamTimeoutError) m.spec.availability.suspect(true);
    else if (e instanceof UpstreamHttpError && !e.refusedCredentials) m.spec.availability.suspect(e.status >= 500);
  }

  /**
   * The merged list of `method` for `caller`: every member up, in configuration order, names shown as the member
   * shows them and as the caller may see them; a name an earlier member shows hides a later member's (told once).
   * `stale`: lists past their time are used as they are (routing a call needs the names, not the freshest list).
   */
  async list(method: ListMethod, caller: CallerContext, signal?: AbortSignal, opts: { stale?: boolean; missed?: boolean } = {}): Promise<MergedList> {
    const key = `${method}\n${viewOf(caller)}\n${caller.principal}${this.accessKey(caller)}`;
    const known = this.merged.get(key);
    const fresh = opts.stale ? known !== undefined && known.from === this.generationNo : known !== undefined && this.allFresh(method, caller);
    if (known && fresh && !opts.missed) return known;
    const parts = await Promise.all(
      this.ordered.map(async (m) => {
        if (m.spec.availability.isDown) return { m, entries: [] as JsonObject[] };
        try {
          return { m, entries: (await this.memberList(m, method, caller, signal, opts)).entries };
        } catch (e) {
          this.failed(m.spec.name, e);
          if (!(e instanceof UpstreamDownError))
            this.log.debug({ upstream: m.spec.name, method, err: e instanceof Error ? e.message : String(e) }, 'federated member list not read');
          return { m, entries: [] as JsonObject[] };
        }
      }),
    );
    const out: MergedList & { from: number } = { generation: this.generationNo, from: this.generationNo, entries: [], index: new Map() };
    for (const { m, entries } of parts) this.mergeInto(out, m, method, entries, caller);
    if (this.merged.size >= MAX_CACHED) this.merged.delete(this.merged.keys().next().value as string);
    this.merged.set(key, out);
    return out;
  }

  /** The member that serves a resource URI (docs/federation.md §Resources), or `undefined` when none can. */
  async resourceMember(uri: string, caller: CallerContext, signal?: AbortSignal): Promise<string | undefined> {
    for (const m of this.ordered) if (m.spec.resourcePrefix !== undefined && uri.startsWith(m.spec.resourcePrefix)) return m.spec.name;
    const listed = (await this.list('resources/list', caller, signal, { stale: true })).index.get(uri);
    if (listed) return listed.member;
    const templates = await this.list('resources/templates/list', caller, signal, { stale: true });
    for (const [template, hit] of templates.index) if (templateMatches(template, uri)) return hit.member;
    const serving = this.ordered.filter((m) => !m.spec.availability.isDown && offers(this.knownRouteOf(m.spec.name), 'resources'));
    return serving.length === 1 ? serving[0]?.spec.name : undefined;
  }

  /** The member whose template is exactly `template` (a completion's `ref/resource`). */
  async templateMember(template: string, caller: CallerContext, signal?: AbortSignal): Promise<string | undefined> {
    return (
      (await this.list('resources/templates/list', caller, signal, { stale: true })).index.get(template)?.member ??
      this.resourceMember(template, caller, signal)
    );
  }

  /** Every collision between members' tool and prompt names as `caller` would list them now. */
  async collisionsNow(caller: CallerContext, signal?: AbortSignal): Promise<Collision[]> {
    const found: Collision[] = [];
    for (const [method, kind] of [
      ['tools/list', 'tool'],
      ['prompts/list', 'prompt'],
    ] as const) {
      const owner = new Map<string, string>();
      for (const m of this.ordered) {
        if (m.spec.availability.isDown) continue;
        let entries: JsonObject[];
        try {
          entries = (await this.memberList(m, method, caller, signal, { missed: true })).entries;
        } catch {
          continue;
        }
        for (const e of entries) {
          const own = nameOf(e);
          const shown = own === undefined ? undefined : m.names.shown(kind, own);
          if (shown === undefined) continue;
          const first = owner.get(shown);
          if (first !== undefined && first !== m.spec.name) found.push({ kind, name: shown, kept: first, hidden: m.spec.name });
          else owner.set(shown, m.spec.name);
        }
      }
    }
    return found;
  }

  /** Listens to list changes and resource updates of every member (a federated listen stream); returns the remover. */
  onNotification(listener: (n: JsonRpcNotification, member: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A notification a member sent on a listen: a list change makes its cached lists stale. */
  heard(member: string, n: JsonRpcNotification): void {
    if (n.method.endsWith('/list_changed')) this.forget(member, n.method);
  }

  /** Forgets the cached lists of a member (all kinds, or the one a list change names). */
  forget(member: string, changed?: string): void {
    const kind = changed?.split('/')[1];
    for (const key of [...this.cache.keys()]) {
      const [m, method] = key.split('\n');
      if (m === member && (kind === undefined || method?.split('/')[0] === kind || (kind === 'resources' && method?.startsWith('resources/'))))
        this.cache.delete(key);
    }
    this.generationNo++;
  }

  /** Stops watching the members' availability. */
  close(): void {
    for (const off of this.unwatch.splice(0)) off();
    this.listeners.clear();
  }

  private tell(n: JsonRpcNotification, member: string): void {
    for (const l of this.listeners) l(n, member);
  }

  /**
   * What of the caller the access rules read, as part of a merged list's cache key: two tokens of one principal (one
   * JWT `sub`) may carry other scopes or claims, and one's merged list (which also routes its calls) is not the other's.
   */
  private accessKey(caller: CallerContext): string {
    if (!this.ordered.some((m) => m.names.hasAccessRules)) return '';
    const s = caller.subject;
    return `\n${JSON.stringify(s ? [s.name ?? null, s.scopes ?? null, s.claims ?? null] : null)}`;
  }

  private member(name: string): Member {
    const m = this.byName.get(name);
    if (!m) throw new Error(`no member ${name} in federation ${this.o.name}`);
    return m;
  }

  private cacheKey(m: Member, method: ListMethod, caller: CallerContext): string {
    return `${m.spec.name}\n${method}\n${viewOf(caller)}\n${m.spec.listCache === 'shared' ? '*' : caller.principal}`;
  }

  private allFresh(method: ListMethod, caller: CallerContext): boolean {
    const now = Date.now();
    for (const m of this.ordered) {
      if (m.spec.availability.isDown) continue;
      const c = this.cache.get(this.cacheKey(m, method, caller));
      if (!c || now - c.at >= c.ttlMs) return false;
    }
    return true;
  }

  private missRefreshDue(method: ListMethod, caller: CallerContext): boolean {
    const now = Date.now();
    return this.ordered.some((m) => {
      const c = this.cache.get(this.cacheKey(m, method, caller));
      return !m.spec.availability.isDown && (!c || now - c.at >= MISS_REFRESH_MS);
    });
  }

  /** A member's whole list for the caller: cached, or read (every page; one read per key at a time). */
  private async memberList(
    m: Member,
    method: ListMethod,
    caller: CallerContext,
    signal: AbortSignal | undefined,
    opts: { stale?: boolean; missed?: boolean },
  ): Promise<CachedList> {
    const key = this.cacheKey(m, method, caller);
    const known = this.cache.get(key);
    const now = Date.now();
    if (known && (opts.stale || now - known.at < known.ttlMs) && !(opts.missed && now - known.at >= MISS_REFRESH_MS)) return known;
    let read = this.reading.get(key);
    if (!read) {
      read = this.readList(m, method, caller)
        .then((list) => {
          if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
          this.cache.set(key, list);
          this.generationNo++;
          return list;
        })
        .finally(() => this.reading.delete(key));
      read.catch(logFailure(this.log, 'debug', 'federated member list not read', { upstream: m.spec.name, method }));
      this.reading.set(key, read);
    }
    return signal ? raceAbort(read, signal) : read;
  }

  /** Reads every page of a member's list (a member that lacks the capability lists nothing). */
  private async readList(m: Member, method: ListMethod, caller: CallerContext): Promise<CachedList> {
    const route = await this.routeOf(m.spec.name, caller);
    const at = Date.now();
    const field = LISTS[method];
    const capability = method === 'resources/templates/list' ? 'resources' : field;
    if (!offers(route, capability)) return { at, ttlMs: DEFAULT_LIST_TTL_MS, entries: [] };
    const signal = AbortSignal.timeout(route.timeoutMs);
    const entries: JsonObject[] = [];
    let ttlMs = DEFAULT_LIST_TTL_MS;
    await eachListPage(
      route,
      caller,
      signal,
      async (result) => {
        const page = method === 'tools/list' ? await this.o.listTools(route, caller, result, signal) : result;
        if (typeof page.ttlMs === 'number' && page.ttlMs >= 0) ttlMs = Math.min(ttlMs, page.ttlMs);
        const items = page[field];
        if (Array.isArray(items)) for (const e of items) if (isObject(e)) entries.push(method === 'tools/list' ? this.withTaskSupport(m, route, e) : e);
      },
      method,
    );
    if (method === 'tools/list' || method === 'prompts/list') {
      const seen = m.lastSeen[method === 'tools/list' ? 'tool' : 'prompt'];
      seen.clear();
      for (const e of entries) {
        const own = nameOf(e);
        if (own !== undefined) seen.add(own);
      }
    }
    return { at, ttlMs, entries };
  }

  /**
   * A member's tool with the 2025-11-25 `execution.taskSupport` its rule and era give it (the legacy face shows it to
   * clients that declared tasks; the modern face's translation removes it).
   */
  private withTaskSupport(m: Member, route: UpstreamRoute, tool: JsonObject): JsonObject {
    const own = nameOf(tool);
    if (own === undefined) return tool;
    const caps = route.upstream.knownIdentity?.capabilities ?? {};
    const listed = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
    const upstream =
      route.upstream.era === 'modern'
        ? { era: 'modern' as const, extension: declaresTasks(caps) }
        : {
            era: 'legacy' as const,
            support:
              legacySupportsToolTasks(caps) && (listed === 'optional' || listed === 'required' || listed === 'forbidden') ? (listed as TaskSupport) : undefined,
          };
    const support = legacyTaskSupport(this.o.policyFor(route, own).task, upstream);
    return { ...tool, execution: { ...(isObject(tool.execution) ? tool.execution : {}), taskSupport: support } };
  }

  private mergeInto(out: MergedList, m: Member, method: ListMethod, entries: JsonObject[], caller: CallerContext): void {
    const kind = method === 'tools/list' ? 'tool' : method === 'prompts/list' ? 'prompt' : undefined;
    for (const e of entries) {
      if (kind === undefined) {
        const key = method === 'resources/list' ? e.uri : e.uriTemplate;
        if (typeof key !== 'string' || out.index.has(key)) continue;
        out.index.set(key, { member: m.spec.name, own: key });
        out.entries.push(e);
        continue;
      }
      const own = nameOf(e);
      const shown = own === undefined ? undefined : m.names.shown(kind, own);
      if (own === undefined || shown === undefined || !m.names.allows(shown, caller.subject)) continue;
      const first = out.index.get(shown);
      if (first) {
        if (first.member !== m.spec.name) this.collided({ kind, name: shown, kept: first.member, hidden: m.spec.name });
        continue;
      }
      out.index.set(shown, { member: m.spec.name, own });
      out.entries.push(renamed(e, shown));
    }
  }

  private collided(c: Collision): void {
    const key = `${c.kind}\n${c.name}\n${c.hidden}`;
    if (this.collisions.has(key)) return;
    this.collisions.add(key);
    this.log.warn(
      { endpoint: this.o.name, kind: c.kind, name: c.name, kept: c.kept, hidden: c.hidden },
      'federated name collision: the later member is hidden',
    );
    this.o.onCollision?.(c);
  }
}

/**
 * What a member may show differently to different clients besides who they are: their era (a dual-era member is
 * reached on the client's side) and the kinds of input they declared (a server may list a tool only to a client that
 * can answer it: server-everything's sampling tool), as the legacy session pool keys its sessions.
 */
function viewOf(caller: UpstreamCaller): string {
  const caps = caller.capabilities;
  const kinds = ['elicitation', 'sampling', 'roots'].filter((k) => caps[k] !== undefined).join(',');
  return `${caller.clientEra ?? 'modern'} ${kinds}`;
}

/** Whether the route's upstream offers a capability (`tools`, `prompts`, `resources`); unknown: assumed to. */
function offers(route: UpstreamRoute, capability: string): boolean {
  const caps = route.upstream.knownIdentity?.capabilities;
  return caps === undefined || isObject(caps[capability]);
}

/**
 * Whether a URI matches an RFC 6570 template as resource templates use it: each `{expression}` matches one path
 * segment (`{+x}`, `{#x}`: any run; `{?x}`, `{&x}`: a query part), the rest literally.
 */
function templateMatches(template: string, uri: string): boolean {
  let re = '^';
  let last = 0;
  for (const m of template.matchAll(/\{([+#./;?&]?)[^}]*\}/g)) {
    re += escapeRe(template.slice(last, m.index));
    const op = m[1];
    re += op === '+' || op === '#' ? '.*' : op === '?' || op === '&' ? '(?:[?&].*)?' : '[^/?#]*';
    last = (m.index ?? 0) + m[0].length;
  }
  re += `${escapeRe(template.slice(last))}$`;
  return new RegExp(re, 's').test(uri);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The unknown-name refusal of a federated endpoint: exactly a single endpoint's for a name it does not have. */
export function unknownName(kind: 'tool' | 'prompt', name: string): GatewayError {
  return kind === 'tool' ? new GatewayError('GW_TOOL_NOT_FOUND', { args: [name] }) : new GatewayError('GW_PROMPT_NOT_FOUND', { args: [name] });
}
