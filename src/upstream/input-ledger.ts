/**
 * The input requests an upstream asked and the gateway holds until they are answered: each under a key unique for
 * the call's or the task's whole life (2026-07-28 basic/patterns/mrtr keys; tasks extension `inputRequests` keys),
 * with the upstream call it came on and the id to answer. One ledger serves a call the runtime converses with and a
 * legacy upstream task followed on its `tasks/result` stream.
 */
import {
  checkInputAnswers,
  isObject,
  isValidInputResponse,
  KeyMinter,
  logFailure,
  NO_LOG,
  toInputRequest,
  toLegacyInputResult,
  type InputRequest,
  type JsonObject,
  type LayerLogger,
  type RequestId,
} from '../translate/index.js';
import type { UpstreamCall } from './client.js';

interface Held {
  call: UpstreamCall;
  upstreamId: RequestId;
  request: InputRequest;
}

/** Outstanding upstream input requests by key. */
export class InputLedger {
  /** Mints the keys (an upstream's hinted key when still unused). */
  readonly keys = new KeyMinter();
  private readonly held = new Map<string, Held>();

  /** `_meta` added to every answer sent upstream (a legacy task's related-task, 2025-11-25 schema). */
  constructor(
    private readonly answerMeta?: JsonObject,
    private readonly log: LayerLogger = NO_LOG,
  ) {}

  /** How many requests wait for an answer. */
  get size(): number {
    return this.held.size;
  }

  /** Holds an upstream request under `key` (minted with `keys`). */
  hold(key: string, call: UpstreamCall, upstreamId: RequestId, method: string, params: JsonObject | undefined): void {
    this.held.set(key, { call, upstreamId, request: toInputRequest(method, params) });
  }

  /** Outstanding requests as an `inputRequests` map. */
  inputRequests(): Record<string, InputRequest> {
    const out: Record<string, InputRequest> = {};
    for (const [k, o] of this.held) out[k] = o.request;
    return out;
  }

  /** Forgets every request (the call or task ended). */
  clear(): void {
    this.held.clear();
  }

  /**
   * Refuses an answer map before any of it goes upstream (`GatewayError`): a key never asked in the call's life, or an
   * answer that does not fit the request waiting under its key. Keys answered in earlier rounds pass (a client may
   * resend them). Nothing is answered or forgotten, so the client can send a corrected map.
   */
  check(responses: JsonObject): void {
    checkInputAnswers(responses, (key) => this.held.get(key)?.request ?? (this.keys.has(key) ? 'answered' : undefined), 'refuse');
  }

  /**
   * Answers outstanding keys from `responses` (bare modern results) upstream; unknown, answered or malformed ones are
   * ignored (tasks extension: SHOULD ignore keys not outstanding; 2026-07-28 basic/patterns/mrtr: re-ask rather than
   * fail). Returns the keys answered.
   */
  async answer(responses: JsonObject): Promise<string[]> {
    const answered: string[] = [];
    for (const [key, pending] of [...this.held]) {
      if (!Object.hasOwn(responses, key)) continue;
      const answer = responses[key];
      if (!isValidInputResponse(pending.request.method, answer, pending.request.params)) continue;
      this.held.delete(key);
      answered.push(key);
      const result = toLegacyInputResult(answer) as JsonObject;
      if (this.answerMeta) result._meta = { ...(isObject(result._meta) ? result._meta : {}), ...this.answerMeta };
      // The call may have ended meanwhile (cancelled, timed out): the answer has nowhere to go.
      await pending.call.respond(pending.upstreamId, { result }).catch(logFailure(this.log, 'debug', 'answer not delivered upstream; its call ended', { key }));
    }
    return answered;
  }
}
