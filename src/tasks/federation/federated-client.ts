/**
 * The upstream seam of a federated endpoint (docs/federation.md): one `UpstreamClient` that both faces use as they use
 * a 2026-07-28 upstream. Lists are the federation's merged lists, paginated with opaque cursors; a request naming a
 * tool, a prompt or a resource goes to the member that serves it under the member's own name; `logging/setLevel` goes
 * to every member; a listen stream listens to every member. Identity and capabilities are the union of the members'.
 */
import {
  catalogError,
  declaresTasks,
  isObject,
  legacySupportsToolTasks,
  MODERN_VERSION,
  modernCapabilities,
  NO_LOG,
  offersSubscriptions,
  TASKS_EXTENSION,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type LayerLogger,
  type ListenFilter,
  type UpstreamIdentity,
} from '../../translate/index.js';
import {
  UpstreamTaskLostError,
  type CallEvent,
  type CallOptions,
  type UpstreamCall,
  type UpstreamCaller,
  type UpstreamClient,
  type UpstreamListen,
  type UpstreamStats,
  type UpstreamTask,
  type UpstreamTaskRef,
  type UpstreamTaskSnapshot,
} from '../../upstream/index.js';
import { wrapsTools, type CallerContext, type UpstreamRoute } from '../route.js';
import type { TaskRuntime } from '../task-runtime.js';
import { Federation, LISTS, MERGED_PAGE, unknownName, type Collision, type ListMethod, type MemberSpec } from './federation.js';

/** Who the federated endpoint says it is. */
export interface FederatedIdentity {
  serverInfo: JsonObject;
  /** Put before the members' own instructions. */
  instructions?: string | undefined;
}

/** A call answered at once. */
function answered(payload: { result: JsonObject } | { error: JsonRpcErrorObject }): UpstreamCall {
  const event: CallEvent = { kind: 'response', message: { jsonrpc: '2.0', id: 0, ...payload } };
  return {
    finished: true,
    pending: 0,
    next: () => Promise.resolve(event),
    nextUnless: () => Promise.resolve(event),
    respond: () => Promise.resolve(),
    cancel: () => {},
    abandon: () => {},
  };
}

/** A merged-list cursor: where the page ends, in which generation of the merged list. */
function encodeCursor(offset: number, generation: number): string {
  return Buffer.from(JSON.stringify({ o: offset, g: generation })).toString('base64url');
}

function decodeCursor(cursor: unknown): { offset: number; generation: number } | undefined {
  if (typeof cursor !== 'string') return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return isObject(v) && Number.isInteger(v.o) && (v.o as number) > 0 && Number.isInteger(v.g)
      ? { offset: v.o as number, generation: v.g as number }
      : undefined;
  } catch {
    return undefined;
  }
}

const INVALID_CURSOR: JsonRpcErrorObject = catalogError('GW_INVALID_CURSOR');

export class FederatedClient implements UpstreamClient {
  readonly era = 'modern' as const;
  readonly log: LayerLogger;
  private known: UpstreamIdentity | undefined;

  constructor(
    private readonly fed: Federation,
    private readonly who: FederatedIdentity,
    log?: LayerLogger,
  ) {
    this.log = log ?? NO_LOG;
  }

  get name(): string {
    return this.fed.name;
  }

  get knownIdentity(): UpstreamIdentity | undefined {
    return this.known;
  }

  /** The union of the members' identities (members that cannot be asked now are left out). */
  async identity(caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamIdentity> {
    const parts = await Promise.all(
      this.fed.specs.map(async (m) => {
        if (m.availability.isDown) return undefined;
        try {
          const route = await this.fed.routeOf(m.name, caller);
          const id = route.upstream.knownIdentity ?? (await route.upstream.identity(caller, signal));
          return { m, route, id };
        } catch (e) {
          this.fed.failed(m.name, e);
          return undefined;
        }
      }),
    );
    const capabilities: JsonObject = {};
    const instructions: string[] = this.who.instructions ? [this.who.instructions] : [];
    let tasks = false;
    for (const p of parts) {
      if (!p) continue;
      const legacy = p.route.upstream.era === 'legacy';
      const caps = legacy ? modernCapabilities(p.id.capabilities, { tasksExtension: legacySupportsToolTasks(p.id.capabilities) }) : p.id.capabilities;
      tasks ||= declaresTasks(caps) || wrapsTools(p.route);
      mergeCapabilities(capabilities, caps);
      if (p.id.instructions) instructions.push(`## ${p.m.name}\n\n${p.id.instructions}`);
    }
    capabilities.logging ??= {};
    if (!tasks) {
      const ext = isObject(capabilities.extensions) ? capabilities.extensions : undefined;
      if (ext) for (const k of Object.keys(ext)) if (k.includes('tasks')) delete ext[k];
    } else {
      // A member whose rules make tasks (wrapped tools, jobs) runs tasks though its upstream declares none: the faces
      // read task support from these capabilities alone (a federated route has no rules of its own), so say it here.
      const ext = isObject(capabilities.extensions) ? capabilities.extensions : {};
      capabilities.extensions = { ...ext, [TASKS_EXTENSION]: ext[TASKS_EXTENSION] ?? {} };
    }
    const id: UpstreamIdentity = { protocolVersion: MODERN_VERSION, capabilities, serverInfo: this.who.serverInfo };
    if (instructions.length > 0) id.instructions = instructions.join('\n\n');
    this.known = id;
    return id;
  }

  async call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal, opts?: CallOptions): Promise<UpstreamCall> {
    const p = params ?? {};
    const who = caller as CallerContext;
    if (method in LISTS) return this.listPage(method as ListMethod, who, p, signal);
    switch (method) {
      case 'ping':
        return answered({ result: {} });
      case 'tools/call':
      case 'prompts/get': {
        const kind = method === 'tools/call' ? 'tool' : 'prompt';
        const name = typeof p.name === 'string' ? p.name : '';
        const t = await this.fed.target(kind, name, who, signal);
        if (!t) throw unknownName(kind, name);
        return this.forward(t.route, caller, method, { ...p, name: t.name }, signal, opts);
      }
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = typeof p.uri === 'string' ? p.uri : '';
        const member = await this.fed.resourceMember(uri, who, signal);
        if (member === undefined) return answered({ error: catalogError('GW_RESOURCE_NOT_SERVED', { args: [uri], data: { uri } }) });
        const route = await this.fed.routeOf(member, caller);
        const to = method === 'resources/read' ? route : await this.subscriptionRoute(member, route, caller, signal);
        return this.forward(to, caller, method, p, signal, opts);
      }
      case 'completion/complete':
        return this.complete(caller, p, signal);
      case 'logging/setLevel':
        await Promise.all(
          this.fed.specs
            .filter((m) => !m.availability.isDown)
            .map(async (m) => {
              try {
                const route = await this.fed.routeOf(m.name, caller);
                const call = await route.upstream.call(caller, method, p, signal);
                await call.next();
              } catch (e) {
                this.fed.failed(m.name, e);
              }
            }),
        );
        return answered({ result: {} });
      default:
        return answered({ error: catalogError('GW_METHOD_NOT_FOUND', { args: [method] }) });
    }
  }

  /** One page of a merged list. */
  private async listPage(method: ListMethod, caller: CallerContext, p: JsonObject, signal?: AbortSignal): Promise<UpstreamCall> {
    const list = await this.fed.list(method, caller, signal);
    let offset = 0;
    if (p.cursor !== undefined) {
      const c = decodeCursor(p.cursor);
      if (!c || c.generation !== list.generation || c.offset > list.entries.length) return answered({ error: INVALID_CURSOR });
      offset = c.offset;
    }
    const end = offset + MERGED_PAGE;
    const result: JsonObject = { [LISTS[method]]: list.entries.slice(offset, end) };
    if (end < list.entries.length) result.nextCursor = encodeCursor(end, list.generation);
    return answered({ result });
  }

  /** `completion/complete` to the member of its reference: a prompt by its shown name, a resource template by itself. */
  private async complete(caller: UpstreamCaller, p: JsonObject, signal?: AbortSignal): Promise<UpstreamCall> {
    const ref = isObject(p.ref) ? p.ref : {};
    const who = caller as CallerContext;
    if (ref.type === 'ref/prompt') {
      const name = typeof ref.name === 'string' ? ref.name : '';
      const t = await this.fed.target('prompt', name, who, signal);
      if (!t) throw unknownName('prompt', name);
      return this.forward(t.route, caller, 'completion/complete', { ...p, ref: { ...ref, name: t.name } }, signal);
    }
    const uri = typeof ref.uri === 'string' ? ref.uri : '';
    const member = await this.fed.templateMember(uri, who, signal);
    if (member === undefined) return answered({ error: catalogError('GW_RESOURCE_NOT_SERVED', { args: [uri], data: { uri } }) });
    return this.forward(await this.fed.routeOf(member, caller), caller, 'completion/complete', p, signal);
  }

  /** A request sent to a member; a failure that says it may be down has it asked again at once. */
  private async forward(
    route: UpstreamRoute,
    caller: UpstreamCaller,
    method: string,
    params: JsonObject,
    signal?: AbortSignal,
    opts?: CallOptions,
  ): Promise<UpstreamCall> {
    try {
      return await route.upstream.call(caller, method, params, signal, opts);
    } catch (e) {
      this.fed.failed(route.name, e);
      throw e;
    }
  }

  /** Listens to every member that offers what was asked; list changes of any member are one stream's. */
  async listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen> {
    const who = caller as CallerContext;
    const queue = new NotificationQueue(signal);
    const accepted: ListenFilter = {};
    // What the federation itself says: a member leaving or coming back changes the lists.
    const off = this.fed.onNotification((n) => {
      if (wanted(n, filter)) queue.push(n);
    });
    signal.addEventListener('abort', off, { once: true });
    // Each subscribed URI goes to the member that serves it.
    const subscriptions = new Map<string, string[]>();
    for (const uri of filter.resourceSubscriptions ?? []) {
      const member = await this.fed.resourceMember(uri, who, signal).catch(() => undefined);
      if (member !== undefined) subscriptions.set(member, [...(subscriptions.get(member) ?? []), uri]);
    }
    await Promise.all(
      this.fed.specs.map(async (m) => {
        if (m.availability.isDown) return;
        const { resourceSubscriptions: _all, taskIds: _tasks, ...lists } = filter;
        const uris = subscriptions.get(m.name);
        const mine: ListenFilter = { ...lists, ...(uris ? { resourceSubscriptions: uris } : {}) };
        if (!mine.toolsListChanged && !mine.promptsListChanged && !mine.resourcesListChanged && !mine.resourceSubscriptions) return;
        try {
          const route = await this.fed.routeOf(m.name, caller);
          // Subscriptions a dual-era member offers only on its 2025-11-25 side are listened to there (its lists still
          // on the route it is reached by), as a single-upstream endpoint passes a 2025-11-25 client through to it.
          const other = uris ? await this.subscriptionRoute(m.name, route, caller, signal) : route;
          const listens: Array<[UpstreamRoute, ListenFilter]> =
            other === route
              ? [[route, mine]]
              : [
                  ...(mine.toolsListChanged || mine.promptsListChanged || mine.resourcesListChanged ? [[route, lists] as [UpstreamRoute, ListenFilter]] : []),
                  [other, { resourceSubscriptions: uris ?? [] }],
                ];
          for (const [r, f] of listens) {
            const l = await r.upstream.listen(caller, f, signal);
            mergeFilter(accepted, l.accepted);
            void (async () => {
              try {
                for await (const n of l.notifications) {
                  this.fed.heard(m.name, n);
                  queue.push(n);
                }
              } catch {
                // The member's stream broke: the others go on.
              }
            })();
          }
        } catch (e) {
          this.fed.failed(m.name, e);
        }
      }),
    );
    // Lists change when a member leaves or returns, whether or not any member could be listened to.
    if (filter.toolsListChanged) accepted.toolsListChanged = true;
    if (filter.promptsListChanged) accepted.promptsListChanged = true;
    if (filter.resourcesListChanged) accepted.resourcesListChanged = true;
    return { accepted, notifications: queue };
  }

  /**
   * The route a member's resource subscriptions go to: the one it is reached by, unless that one (its 2026-07-28 side)
   * offers no subscriptions while the member also speaks 2025-11-25 and offers them there (a dual-era server such as
   * the reference everything-server, whose 2026-07-28 side declares `resources: {}`).
   */
  private async subscriptionRoute(member: string, route: UpstreamRoute, caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamRoute> {
    const spec = this.fed.specs.find((m) => m.name === member);
    if (!spec || spec.route === route || spec.route.upstream.era !== 'legacy') return route;
    const mine = route.upstream.knownIdentity ?? (await route.upstream.identity(caller, signal));
    if (offersSubscriptions(mine.capabilities)) return route;
    // Its 2025-11-25 side is asked now if the probe left it unasked (a server that answered server/discover).
    const eras = await spec.availability.legacyEras(caller.authorization);
    if (!eras.legacy) return route;
    const legacy = spec.route.upstream.knownIdentity ?? (await spec.route.upstream.identity(caller, signal));
    return offersSubscriptions(legacy.capabilities) ? spec.route : route;
  }

  resumeTask(_caller: UpstreamCaller, ref: UpstreamTaskRef, _created: UpstreamTaskSnapshot): UpstreamTask {
    // A federated endpoint's tasks are its members' records, resumed on the member's route (tasks/kinds/proxied-reach.ts).
    throw new UpstreamTaskLostError(`task ${ref.id} is a member's: resumed on its own route`);
  }

  retain(caller: UpstreamCaller): () => void {
    const releases = new Set<() => void>();
    for (const m of this.fed.specs) for (const c of new Set([m.route.upstream, m.modernRoute.upstream])) releases.add(c.retain(caller));
    return () => {
      for (const r of releases) r();
    };
  }

  stats(): UpstreamStats {
    // The members' own sessions are counted under each member.
    return { sessions: 0 };
  }

  async close(): Promise<void> {
    this.fed.close();
  }
}

/** Whether a federation-made notification is one the listen asked for. */
function wanted(n: JsonRpcNotification, f: ListenFilter): boolean {
  if (n.method === 'notifications/tools/list_changed') return f.toolsListChanged === true;
  if (n.method === 'notifications/prompts/list_changed') return f.promptsListChanged === true;
  if (n.method === 'notifications/resources/list_changed') return f.resourcesListChanged === true;
  return false;
}

function mergeFilter(into: ListenFilter, more: ListenFilter): void {
  if (more.toolsListChanged) into.toolsListChanged = true;
  if (more.promptsListChanged) into.promptsListChanged = true;
  if (more.resourcesListChanged) into.resourcesListChanged = true;
  if (more.resourceSubscriptions) into.resourceSubscriptions = [...new Set([...(into.resourceSubscriptions ?? []), ...more.resourceSubscriptions])];
}

/** Adds a member's capabilities to the union: each capability present if any member has it, flags true if any says so. */
function mergeCapabilities(into: JsonObject, caps: JsonObject): void {
  for (const [k, v] of Object.entries(caps)) {
    if (isObject(v) && isObject(into[k])) {
      const merged = { ...(into[k] as JsonObject) };
      for (const [f, fv] of Object.entries(v)) {
        if (fv === true || merged[f] === undefined) merged[f] = fv;
        else if (isObject(fv) && isObject(merged[f])) merged[f] = { ...(merged[f] as JsonObject), ...fv };
      }
      into[k] = merged;
    } else if (into[k] === undefined) {
      into[k] = isObject(v) ? { ...v } : v;
    }
  }
}

/** The notifications of several member streams as one async iterable, ended when the listen's signal aborts. */
class NotificationQueue implements AsyncIterable<JsonRpcNotification> {
  private readonly items: JsonRpcNotification[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(signal: AbortSignal) {
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    if (signal.aborted) end();
    else signal.addEventListener('abort', end, { once: true });
  }

  push(n: JsonRpcNotification): void {
    if (this.ended) return;
    // Bounded: a client that does not read its stream loses the oldest notifications, never the gateway's memory.
    if (this.items.length >= 1_000) this.items.shift();
    this.items.push(n);
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<JsonRpcNotification> {
    for (;;) {
      const n = this.items.shift();
      if (n) {
        yield n;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}

/** What a federated route is made of (the composition root reads it from the configuration). */
export interface FederatedRouteOptions {
  /** The path it is served at: also the route's name (logs, metrics). */
  path: string;
  identity: FederatedIdentity;
  members: readonly MemberSpec[];
  runtime: Pick<TaskRuntime, 'listTools' | 'policyFor'>;
  onCollision?: (c: Collision) => void;
  log?: LayerLogger;
}

/** The route of a federated path: its client merges and routes, its `federation` resolves tool calls and tasks. */
export function federatedRoute(o: FederatedRouteOptions): UpstreamRoute & { federation: Federation } {
  const federation = new Federation({
    name: o.path,
    members: o.members,
    listTools: (route, caller, result, signal) => o.runtime.listTools(route, caller, result, signal),
    policyFor: (route, tool) => o.runtime.policyFor(route, tool),
    ...(o.onCollision ? { onCollision: o.onCollision } : {}),
    ...(o.log ? { log: o.log } : {}),
  });
  return {
    name: o.path,
    url: '',
    staticHeaders: {},
    timeoutMs: Math.max(...o.members.map((m) => m.route.timeoutMs)),
    // Merged lists depend on the caller (per-principal caches, access rules): never a shared cache.
    cache: { ttlMs: 0, scope: 'private' },
    rules: [],
    upstream: new FederatedClient(federation, o.identity, o.log),
    federation,
  };
}

/** Names two members of a federated path would both show (docs/federation.md §Collisions): each problem names both. */
export class FederationCollisionError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'FederationCollisionError';
  }
}

/**
 * Refuses names two members of one federated path would both show, asked of the members that answer now with the
 * operator's credentials; a member that is down is checked when it comes up, and a collision then hides the later
 * member's name with a warning (`Federation.list`).
 */
export async function refuseCollisions(routes: readonly UpstreamRoute[]): Promise<void> {
  const problems: string[] = [];
  for (const r of routes) {
    const found = (await r.federation?.collisionsNow({ principal: 'gateway', capabilities: {} }, AbortSignal.timeout(r.timeoutMs))) ?? [];
    for (const c of found)
      problems.push(`upstreams.${c.hidden}: ${c.kind} ${c.name} at ${r.name} is also upstreams.${c.kept}'s; give one a namespace or a rename (expose)`);
  }
  if (problems.length > 0) throw new FederationCollisionError(problems);
}
