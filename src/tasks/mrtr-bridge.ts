/**
 * Forwarding of modern requests to a legacy upstream, with the MRTR bridge (translation.md §4.3, M2):
 * server→client requests that arrive on an upstream call's stream become an `InputRequiredResult`; the call
 * is held open (bounded in time and number) until the client's retry brings `inputResponses` with the
 * integrity-protected `requestState`, then resumes. Progress and (opted-in) log messages are relayed.
 */
import { randomBytes } from 'node:crypto';
import {
  ErrorCode,
  META,
  asErrorObject,
  decodeRequestState,
  encodeRequestState,
  isObject,
  modernError,
  modernResult,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type ModernRequest,
} from '../translate/index.js';
import { UpstreamTimeoutError } from '../upstream/index.js';
import { Conversation } from './conversation.js';
import type { CallerContext, UpstreamRoute } from './route.js';

/** The outcome of a forwarded request, already in modern shape. */
export type Outcome = { kind: 'result'; result: JsonObject } | { kind: 'error'; error: JsonRpcErrorObject };

/** Per-request hooks from the HTTP edge. */
export interface ForwardHooks {
  /** The client's request; aborted when the client goes away. */
  signal: AbortSignal;
  /** Relays a notification on the client's response stream. */
  notify(n: JsonRpcNotification): void;
}

/** What becomes of a call: how its response is turned into the outcome, and an optional deadline. */
export interface Continuation {
  /** Turns the upstream's final response into the client's outcome. `resumed`: after an MRTR round. */
  finish(response: JsonRpcResponse, resumed: boolean): Promise<Outcome>;
  /** Milliseconds from each (re)start after which `onDeadline` takes the still-running call. */
  deadlineMs?: number;
  /** Takes over a call that outlived the deadline (it becomes a gateway-owned task). */
  onDeadline?(conv: Conversation): Promise<Outcome>;
}

/** Bridge settings. */
export interface MrtrOptions {
  /** HMAC key for request states. */
  stateKey: Uint8Array;
  /** How long a held call waits for the retry. */
  holdMs: number;
  /** Most calls held at once. */
  maxHeld: number;
  /** How long to wait for further concurrent input requests once one arrived. */
  gatherMs: number;
}

interface Hold {
  id: string;
  /** The upstream route the held call runs on; a state is only valid on that route. */
  route: string;
  conv: Conversation;
  principal: string;
  method: string;
  name: string;
  round: number;
  busy: boolean;
  timer: NodeJS.Timeout | undefined;
}

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** Thrown for an invalid `requestState`: the edge answers -32602. */
export class InvalidRequestStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestStateError';
  }
}

/** Starts an upstream request on the caller's behalf and wraps it in a conversation. */
export async function startConversation(
  route: UpstreamRoute,
  caller: CallerContext,
  method: string,
  params: JsonObject | undefined,
  signal?: AbortSignal,
): Promise<Conversation> {
  return new Conversation(await route.upstream.call(caller, method, params, signal));
}

/** The forwarding runtime of one gateway (all upstreams share the hold registry). */
export class MrtrBridge {
  private readonly holds = new Map<string, Hold>();

  constructor(readonly opts: MrtrOptions) {}

  /** Number of calls currently held for input. */
  get heldCount(): number {
    return this.holds.size;
  }

  /** The plain continuation: a legacy response becomes the modern result or error. */
  plainContinuation(route: UpstreamRoute, req: ModernRequest): Continuation {
    return {
      finish: async (m, resumed) => {
        if ('error' in m) {
          const uri = typeof req.params.uri === 'string' ? { uri: req.params.uri } : {};
          return { kind: 'error', error: modernError(asErrorObject(m.error), uri) };
        }
        const result = modernResult(req.method, isObject(m.result) ? m.result : {}, {
          ...(route.upstream.knownIdentity ? { serverInfo: route.upstream.knownIdentity.serverInfo } : {}),
          // CACHE2: results of MRTR retries MUST NOT be cached.
          cache: resumed ? { ttlMs: 0, scope: 'private' } : route.cache,
        });
        return { kind: 'result', result };
      },
    };
  }

  /** Forwards one modern request to a legacy upstream and returns its modern outcome. */
  forward(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    return this.run(route, req, caller, hooks, () => startConversation(route, caller, req.method, legacyParams(req), hooks.signal), this.plainContinuation(route, req));
  }

  /**
   * Runs (or, with a `requestState`, resumes) a call: MRTR rounds while it asks for input, then `cont` decides
   * what its response (or its outliving the deadline) becomes. The caller derives `cont` from the request, so a
   * retry gets the continuation its own round calls for (a wrapped tool's later rounds have no window).
   */
  async run(
    route: UpstreamRoute,
    req: ModernRequest,
    caller: CallerContext,
    hooks: ForwardHooks,
    start: () => Promise<Conversation>,
    cont: Continuation,
  ): Promise<Outcome> {
    const mrtr = req.policy.kind === 'forward-input';
    const name = nameOf(req);
    let hold: Hold | undefined;
    let conv: Conversation;
    if (mrtr && req.requestState !== undefined) {
      hold = this.take(route, req, caller, name);
      conv = hold.conv;
      await conv.answer(req.inputResponses ?? {});
      // M2: a round answered only in part (or with malformed answers) is asked again at once.
      if (conv.outstanding.size > 0) return this.ask(route, hold, conv, req, caller, name);
    } else {
      conv = await start();
    }
    if (cont.deadlineMs === 0 && cont.onDeadline) {
      // No synchronous window: the call becomes a task now; whatever it sends next is the task's.
      this.drop(hold);
      return cont.onDeadline(conv);
    }
    try {
      const r = await conv.pump({
        signal: hooks.signal,
        capabilities: caller.capabilities,
        inputAllowed: mrtr,
        onUndeclared: 'throw',
        ...(hold || !req.inputResponses ? {} : { offered: req.inputResponses }),
        // A call that cannot become a task is bounded by the upstream's budget for one call.
        deadlineAt: Date.now() + (cont.deadlineMs ?? route.timeoutMs),
        gatherMs: this.opts.gatherMs,
        notify: (n) => relay(n, caller, hooks, progressTokenOf(req.params)),
      });
      switch (r.kind) {
        case 'response':
          this.drop(hold);
          return await cont.finish(r.message, hold !== undefined);
        case 'input':
          return this.ask(route, hold, conv, req, caller, name);
        case 'deadline':
          this.drop(hold);
          if (!cont.onDeadline || cont.deadlineMs === undefined) throw new UpstreamTimeoutError(`the upstream call took longer than ${route.timeoutMs} ms`);
          return await cont.onDeadline(conv);
        case 'aborted':
          this.drop(hold);
          conv.cancel('client closed the request');
          return { kind: 'error', error: { code: ErrorCode.InternalError, message: 'Request cancelled' } };
      }
    } catch (e) {
      this.drop(hold);
      conv.cancel('gateway error');
      throw e;
    }
  }

  private take(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, name: string): Hold {
    const decoded = decodeRequestState(req.requestState as string, this.opts.stateKey, Date.now(), {
      sub: caller.principal,
      method: req.method,
      name,
    });
    if (!decoded.ok) throw new InvalidRequestStateError(`Invalid requestState (${decoded.reason})`);
    const hold = this.holds.get(decoded.value.hold);
    if (!hold || hold.round !== decoded.value.round || hold.route !== route.name) {
      throw new InvalidRequestStateError('Invalid requestState: the round it continues has ended');
    }
    if (hold.busy) throw new InvalidRequestStateError('Invalid requestState: this round is already being continued');
    hold.busy = true;
    if (hold.timer) clearTimeout(hold.timer);
    hold.timer = undefined;
    return hold;
  }

  /** Holds the call and answers with an `InputRequiredResult` for every outstanding request. */
  private ask(
    route: UpstreamRoute,
    existing: Hold | undefined,
    conv: Conversation,
    req: ModernRequest,
    caller: CallerContext,
    name: string,
  ): Outcome {
    let hold = existing;
    if (!hold) {
      if (this.holds.size >= this.opts.maxHeld) {
        conv.cancel('too many calls waiting for input');
        return { kind: 'error', error: { code: ErrorCode.InternalError, message: 'Too many requests are waiting for input; try again later' } };
      }
      hold = { id: randomBytes(16).toString('base64url'), route: route.name, conv, principal: caller.principal, method: req.method, name, round: 0, busy: false, timer: undefined };
      this.holds.set(hold.id, hold);
    }
    hold.round += 1;
    hold.busy = false;
    const h = hold;
    hold.timer = setTimeout(() => this.expire(h), this.opts.holdMs);
    hold.timer.unref();
    const requestState = encodeRequestState(
      { hold: hold.id, sub: hold.principal, method: hold.method, name: hold.name, round: hold.round, exp: Date.now() + this.opts.holdMs },
      this.opts.stateKey,
    );
    const result: JsonObject = { resultType: 'input_required', inputRequests: conv.inputRequests(), requestState };
    if (route.upstream.knownIdentity) result._meta = { [META.serverInfo]: route.upstream.knownIdentity.serverInfo };
    return { kind: 'result', result };
  }

  private expire(hold: Hold): void {
    if (hold.busy) return;
    this.drop(hold);
    hold.conv.cancel('no retry arrived for the input request in time');
  }

  private drop(hold: Hold | undefined): void {
    if (!hold) return;
    if (hold.timer) clearTimeout(hold.timer);
    if (this.holds.get(hold.id) === hold) this.holds.delete(hold.id);
  }

  /** Cancels every held call (on shutdown). */
  close(): void {
    for (const hold of [...this.holds.values()]) {
      this.drop(hold);
      hold.conv.cancel('gateway shutting down');
    }
  }
}

/** The progress token a request carries in its `_meta`, if any. */
export function progressTokenOf(params: JsonObject): string | number | undefined {
  const meta = isObject(params._meta) ? params._meta : undefined;
  const token = meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/**
 * Relays what a modern client may see on a request stream: progress for the token it sent (the gateway may
 * have added its own token upstream), and log messages it asked for (B2).
 */
function relay(n: JsonRpcNotification, caller: CallerContext, hooks: ForwardHooks, progressToken: string | number | undefined): void {
  if (n.method === 'notifications/progress') {
    if (progressToken !== undefined && isObject(n.params) && n.params.progressToken === progressToken) hooks.notify(n);
    return;
  }
  if (n.method === 'notifications/message') {
    if (!caller.logLevel) return;
    const level = isObject(n.params) && typeof n.params.level === 'string' ? n.params.level : 'info';
    if (LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(caller.logLevel)) hooks.notify(n);
  }
  // notifications/elicitation/complete and others have no modern counterpart on a request stream.
}

/** The name a request state is bound to: the tool or prompt name, or the resource URI. */
export function nameOf(req: ModernRequest): string {
  const p = req.policy.nameParam;
  const v = p ? req.params[p] : undefined;
  return typeof v === 'string' ? v : '';
}

/** Modern params → legacy params: envelope already removed; a modern client's `task` is ignored (X). */
export function legacyParams(req: ModernRequest): JsonObject {
  const { task: _task, ...rest } = req.params;
  return rest;
}
