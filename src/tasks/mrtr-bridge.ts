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
  hintedInputKey,
  requiredCapabilityFor,
  isInputDeclared,
  isInputMethod,
  isObject,
  isValidInputResponse,
  legacySessionCapabilities,
  modernError,
  modernResult,
  toInputRequest,
  toLegacyInputResult,
  undeclaredInputAnswer,
  type InputRequest,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type ModernRequest,
} from '../translate/index.js';
import type { CallEvent, UpstreamCall } from '../upstream/index.js';
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

interface Outstanding {
  upstreamId: string | number;
  request: InputRequest;
}

interface Hold {
  id: string;
  call: UpstreamCall;
  principal: string;
  method: string;
  name: string;
  round: number;
  keys: KeyMinter;
  outstanding: Map<string, Outstanding>;
  busy: boolean;
  timer: NodeJS.Timeout | undefined;
  release: () => void;
}

/** Mints input keys unique for a call's whole life (M2 keys are request-unique; ours never repeat). */
class KeyMinter {
  private seq = 0;
  private readonly used = new Set<string>();

  /** The upstream's hinted key if still unused, else `<kind>-<n>`. */
  mint(method: string, params: JsonObject | undefined): string {
    const hint = hintedInputKey(params);
    let key = hint !== undefined && !this.used.has(hint) ? hint : undefined;
    while (key === undefined || this.used.has(key)) key = `${method.split('/')[0] ?? 'input'}-${++this.seq}`;
    this.used.add(key);
    return key;
  }
}

/** The -32021 a client gets when the upstream needs an input kind it did not declare (S2; conformance). */
export class MissingCapabilityError extends Error {
  constructor(readonly requiredCapabilities: JsonObject, method: string) {
    super(`The upstream needs ${method}, which this request's clientCapabilities do not declare`);
    this.name = 'MissingCapabilityError';
  }
}

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** Thrown for an invalid `requestState`: the edge answers -32602. */
export class InvalidRequestStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestStateError';
  }
}

/** The forwarding runtime of one gateway (all upstreams share the hold registry). */
export class MrtrBridge {
  private readonly holds = new Map<string, Hold>();

  constructor(private readonly opts: MrtrOptions) {}

  /** Number of calls currently held for input. */
  get heldCount(): number {
    return this.holds.size;
  }

  /** Forwards one modern request to a legacy upstream and returns its modern outcome. */
  async forward(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    const mrtr = req.policy.kind === 'forward-input';
    const name = nameOf(req);
    if (mrtr && req.requestState !== undefined) {
      return this.resume(route, req, caller, hooks, name);
    }
    const key = { capabilities: legacySessionCapabilities(caller.capabilities), ...(caller.authorization ? { authorization: caller.authorization } : {}) };
    const params = legacyParams(req);
    const call = await route.pool.withSession(key, (s) => s.request(req.method, params), hooks.signal);
    const release = route.pool.hold(key);
    return this.drive(route, call, req, caller, hooks, name, undefined, release, new KeyMinter());
  }

  private async resume(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks, name: string): Promise<Outcome> {
    const decoded = decodeRequestState(req.requestState as string, this.opts.stateKey, Date.now(), {
      sub: caller.principal,
      method: req.method,
      name,
    });
    if (!decoded.ok) throw new InvalidRequestStateError(`Invalid requestState (${decoded.reason})`);
    const hold = this.holds.get(decoded.value.hold);
    if (!hold || hold.round !== decoded.value.round) {
      throw new InvalidRequestStateError('Invalid requestState: the round it continues has ended');
    }
    if (hold.busy) throw new InvalidRequestStateError('Invalid requestState: this round is already being continued');
    hold.busy = true;
    if (hold.timer) clearTimeout(hold.timer);
    hold.timer = undefined;
    const responses = req.inputResponses ?? {};
    for (const [key, pending] of [...hold.outstanding]) {
      if (!Object.hasOwn(responses, key)) continue;
      const answer = responses[key];
      if (!isValidInputResponse(pending.request.method, answer)) continue; // re-asked below
      const result = toLegacyInputResult(answer) as JsonObject;
      hold.outstanding.delete(key);
      await hold.call.respond(pending.upstreamId, { result }).catch(() => {});
    }
    return this.drive(route, hold.call, req, caller, hooks, name, hold, hold.release, hold.keys);
  }

  /**
   * Reads the call's events until it answers, needs input, or the client leaves. `hold` is the held state when
   * this continues an earlier round.
   */
  private async drive(
    route: UpstreamRoute,
    call: UpstreamCall,
    req: ModernRequest,
    caller: CallerContext,
    hooks: ForwardHooks,
    name: string,
    hold: Hold | undefined,
    release: () => void,
    keys: KeyMinter,
  ): Promise<Outcome> {
    const mrtr = req.policy.kind === 'forward-input';
    const asked: Array<[string, Outstanding]> = [];
    const offered = req.inputResponses ?? {};
    const finish = () => {
      if (hold) this.drop(hold);
      else release();
    };
    // A round whose answers were incomplete or invalid is re-asked at once (M2: re-ask rather than fail).
    if (hold && hold.outstanding.size > 0) return this.ask(route, hold, call, req, caller, name, [], release, keys);
    try {
      for (;;) {
        const event: CallEvent | undefined = asked.length > 0
          ? await call.nextUnless(this.opts.gatherMs, hooks.signal)
          : await call.nextUnless(undefined, hooks.signal);
        if (event === undefined) {
          if (hooks.signal.aborted) {
            call.cancel('client closed the request');
            finish();
            return { kind: 'error', error: { code: ErrorCode.InternalError, message: 'Request cancelled' } };
          }
          // the gather window closed: ask for what arrived
          return this.ask(route, hold, call, req, caller, name, asked, release, keys);
        }
        switch (event.kind) {
          case 'notification':
            this.relay(event.message, caller, hooks);
            break;
          case 'request': {
            const { id, method } = event.message;
            const params = isObject(event.message.params) ? event.message.params : undefined;
            if (!mrtr || !isInputMethod(method)) {
              // Only tools/call, prompts/get and resources/read may ask for input (M2).
              const answer = isInputMethod(method)
                ? undeclaredInputAnswer(method)
                : { error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` } };
              await call.respond(id, answer).catch(() => {});
              break;
            }
            if (!isInputDeclared(method, params, caller.capabilities)) {
              // M2: never ask for an undeclared kind. The call cannot finish without it: -32021 (S2).
              await call.respond(id, undeclaredInputAnswer(method)).catch(() => {});
              throw new MissingCapabilityError(requiredCapabilityFor(method, params), method);
            }
            const key = keys.mint(method, params);
            const request = toInputRequest(method, params);
            // A response the client already sent under this key answers at once (stateless MRTR re-execution).
            if (Object.hasOwn(offered, key) && isValidInputResponse(method, offered[key])) {
              await call.respond(id, { result: toLegacyInputResult(offered[key]) as JsonObject }).catch(() => {});
              break;
            }
            asked.push([key, { upstreamId: id, request }]);
            break;
          }
          case 'response': {
            finish();
            const m = event.message;
            if ('error' in m) {
              const uri = typeof req.params.uri === 'string' ? { uri: req.params.uri } : {};
              return { kind: 'error', error: modernError(asErrorObject(m.error), uri) };
            }
            const result = modernResult(req.method, isObject(m.result) ? m.result : {}, {
              ...(route.pool.identity ? { serverInfo: route.pool.identity.serverInfo } : {}),
              // CACHE2: results of MRTR retries MUST NOT be cached.
              cache: hold ? { ttlMs: 0, scope: 'private' } : route.cache,
            });
            return { kind: 'result', result };
          }
          case 'failure':
            finish();
            throw event.error;
        }
      }
    } catch (e) {
      if (!call.finished) call.cancel('gateway error');
      finish();
      throw e;
    }
  }

  /** Holds the call and answers with an `InputRequiredResult` for the outstanding requests. */
  private ask(
    route: UpstreamRoute,
    existing: Hold | undefined,
    call: UpstreamCall,
    req: ModernRequest,
    caller: CallerContext,
    name: string,
    asked: Array<[string, Outstanding]>,
    release: () => void,
    keys: KeyMinter,
  ): Outcome {
    let hold = existing;
    if (!hold) {
      if (this.holds.size >= this.opts.maxHeld) {
        call.cancel('too many calls waiting for input');
        release();
        return { kind: 'error', error: { code: ErrorCode.InternalError, message: 'Too many requests are waiting for input; try again later' } };
      }
      hold = {
        id: randomBytes(16).toString('base64url'),
        call,
        principal: caller.principal,
        method: req.method,
        name,
        round: 0,
        keys,
        outstanding: new Map(),
        busy: false,
        timer: undefined,
        release,
      };
      this.holds.set(hold.id, hold);
    }
    for (const [key, o] of asked) hold.outstanding.set(key, o);
    hold.round += 1;
    hold.busy = false;
    const h = hold;
    hold.timer = setTimeout(() => this.expire(h), this.opts.holdMs);
    hold.timer.unref();
    const inputRequests: JsonObject = {};
    for (const [key, o] of hold.outstanding) inputRequests[key] = o.request;
    const requestState = encodeRequestState(
      { hold: hold.id, sub: hold.principal, method: hold.method, name: hold.name, round: hold.round, exp: Date.now() + this.opts.holdMs },
      this.opts.stateKey,
    );
    const result: JsonObject = { resultType: 'input_required', inputRequests, requestState };
    if (route.pool.identity) result._meta = { [META.serverInfo]: route.pool.identity.serverInfo };
    return { kind: 'result', result };
  }

  private relay(n: JsonRpcNotification, caller: CallerContext, hooks: ForwardHooks): void {
    if (n.method === 'notifications/progress') {
      hooks.notify(n);
      return;
    }
    if (n.method === 'notifications/message') {
      // B2: without io.modelcontextprotocol/logLevel the server MUST NOT send log messages.
      if (!caller.logLevel) return;
      const level = isObject(n.params) && typeof n.params.level === 'string' ? n.params.level : 'info';
      if (LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(caller.logLevel)) hooks.notify(n);
    }
    // notifications/elicitation/complete and others have no modern counterpart on a request stream.
  }

  private expire(hold: Hold): void {
    if (hold.busy) return;
    hold.call.cancel('no retry arrived for the input request in time');
    this.drop(hold);
  }

  private drop(hold: Hold): void {
    if (hold.timer) clearTimeout(hold.timer);
    if (this.holds.get(hold.id) === hold) this.holds.delete(hold.id);
    hold.release();
  }

  /** Cancels every held call (on shutdown). */
  close(): void {
    for (const hold of [...this.holds.values()]) {
      hold.call.cancel('gateway shutting down');
      this.drop(hold);
    }
  }
}

/** The name a request state is bound to: the tool or prompt name, or the resource URI. */
function nameOf(req: ModernRequest): string {
  const p = req.policy.nameParam;
  const v = p ? req.params[p] : undefined;
  return typeof v === 'string' ? v : '';
}

/** Modern params → legacy params: envelope already removed; a modern client's `task` is ignored (X). */
function legacyParams(req: ModernRequest): JsonObject | undefined {
  const { task: _task, ...rest } = req.params;
  return Object.keys(rest).length > 0 || req.method !== 'tools/list' ? rest : undefined;
}
