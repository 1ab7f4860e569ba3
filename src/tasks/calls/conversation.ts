/**
 * A conversation with one upstream call: its events are pumped until it answers, asks for input, passes a
 * deadline, or the consumer goes away. The same conversation serves the MRTR bridge (input becomes an
 * `InputRequiredResult`) and gateway-owned tasks (input becomes the task's `inputRequests`), so that a call can
 * move from one to the other (an `auto` wrap that outlives `afterMs`).
 */
import {
  GatewayError,
  isInputDeclared,
  isInputMethod,
  isObject,
  isValidInputResponse,
  logFailure,
  NO_LOG,
  toInputRequest,
  toLegacyInputResult,
  undeclaredInputAnswer,
  type InputRequest,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type LayerLogger,
  catalogError,
} from '../../translate/index.js';
import { InputLedger, taskAsCall, type TaskCallOptions, type UpstreamCall, type UpstreamTask } from '../../upstream/index.js';

/**
 * The -32021 a client gets when the upstream needs an input kind it did not declare (GW_MISSING_CAPABILITY; 2026-07-28
 * schema `MissingRequiredClientCapabilityError`; conformance). `data.requiredCapabilities` names what is missing.
 */
export class MissingCapabilityError extends GatewayError {
  constructor(
    readonly requiredCapabilities: JsonObject,
    what: string,
  ) {
    super('GW_MISSING_CAPABILITY', { args: [what], data: { requiredCapabilities } });
  }
}

/** How one pump treats what arrives. */
export interface PumpOptions {
  signal: AbortSignal;
  /** Capabilities the input must be declared in. */
  capabilities: JsonObject;
  /**
   * Whether input requests may be asked at all (2026-07-28 basic/patterns/mrtr: tools/call, prompts/get,
   * resources/read).
   */
  inputAllowed: boolean;
  /** Responses the client already sent, by key (a fresh MRTR call may carry them). */
  offered?: JsonObject;
  /** Stop waiting at this time (epoch ms) and report `deadline`. */
  deadlineAt?: number;
  /** Once one input request arrived, wait this long for more before reporting (concurrent asks). */
  gatherMs: number;
  /** Notifications from the upstream (progress, log, …). */
  notify(n: JsonRpcNotification): void;
  /** Where an answer the upstream could not take is logged (default nowhere). */
  log?: LayerLogger;
  /**
   * How much input the call may ask (`input.maxRequestsPerRound`, `input.maxRoundsPerTask`): beyond, the pump throws
   * `GW_INPUT_REQUESTS_EXCEEDED` / `GW_INPUT_ROUNDS_EXCEEDED` and the caller cancels the call. Absent: unbounded.
   */
  bounds?: { maxRequestsPerRound: number; maxRounds: number };
}

/** Why a pump returned. */
export type PumpResult =
  | { kind: 'response'; message: JsonRpcResponse }
  /** The upstream answered a call sent with `CallOptions.task` by creating a task. */
  | { kind: 'task'; task: UpstreamTask }
  | { kind: 'input'; keys: string[] }
  | { kind: 'deadline' }
  | { kind: 'aborted' };

/** A live upstream call plus its input bookkeeping. */
export class Conversation {
  /** The call's outstanding input requests, by keys unique for its whole life. */
  readonly input = new InputLedger();
  /** Rounds of input the call has asked (pumps that ended with `input`). */
  private rounds = 0;

  constructor(
    readonly call: UpstreamCall,
    /** The upstream task this conversation follows as a call (`taskAsCall`), which the runtime may take over. */
    readonly task?: UpstreamTask,
  ) {}

  /** A conversation following an upstream task inside a request; the task stays the caller's to take over. */
  static following(task: UpstreamTask, opts: TaskCallOptions = {}): Conversation {
    return new Conversation(taskAsCall(task, opts), task);
  }

  /** Cancels the upstream call (legacy: `notifications/cancelled`). */
  cancel(reason: string): void {
    this.call.cancel(reason);
  }

  /**
   * Drops the upstream stream without a cancellation (a `tasks/result` wait; 2025-11-25 basic/utilities/tasks: tasks
   * are not cancelled so).
   */
  abandon(reason: string): void {
    this.call.abandon(reason);
  }

  /** Outstanding requests as an `inputRequests` map. */
  inputRequests(): Record<string, InputRequest> {
    return this.input.inputRequests();
  }

  /** Answers outstanding keys from `responses` (see `InputLedger.answer`); returns the keys answered. */
  answer(responses: JsonObject): Promise<string[]> {
    return this.input.answer(responses);
  }

  /** Reads events until the call answers, asks for input, passes the deadline or the signal aborts. */
  async pump(o: PumpOptions): Promise<PumpResult> {
    const fresh: string[] = [];
    const offered = o.offered ?? {};
    // An answer the upstream cannot take any more: its call ended meanwhile (an expected race).
    const unanswered = logFailure(o.log ?? NO_LOG, 'debug', 'answer to an upstream request not delivered; its call ended');
    for (;;) {
      const now = Date.now();
      let wait: number | undefined = o.deadlineAt !== undefined ? Math.max(0, o.deadlineAt - now) : undefined;
      if (fresh.length > 0) wait = wait === undefined ? o.gatherMs : Math.min(wait, o.gatherMs);
      const event = await this.call.nextUnless(wait, o.signal);
      if (event === undefined) {
        if (o.signal.aborted) return { kind: 'aborted' };
        if (fresh.length > 0) {
          this.rounds += 1;
          // An upstream that asks without end is stopped (the caller cancels the call).
          if (o.bounds && this.rounds > o.bounds.maxRounds) throw new GatewayError('GW_INPUT_ROUNDS_EXCEEDED', { args: [o.bounds.maxRounds] });
          return { kind: 'input', keys: fresh };
        }
        return { kind: 'deadline' };
      }
      switch (event.kind) {
        case 'notification':
          o.notify(event.message);
          break;
        case 'request': {
          const { id, method } = event.message;
          const params = isObject(event.message.params) ? event.message.params : undefined;
          if (!o.inputAllowed || !isInputMethod(method)) {
            const answer = isInputMethod(method) ? undeclaredInputAnswer(method) : { error: catalogError('GW_METHOD_NOT_SERVED', { args: [method] }) };
            await this.call.respond(id, answer).catch(unanswered);
            break;
          }
          if (!isInputDeclared(method, params, o.capabilities)) {
            // 2026-07-28 basic/patterns/mrtr §Server Requirements: never ask for an undeclared kind. The upstream asked
            // anyway (its session declares only what the caller did): it gets the answer a client without the kind
            // gives, and the call goes on; a -32021 is the upstream's own to send.
            await this.call.respond(id, undeclaredInputAnswer(method)).catch(unanswered);
            break;
          }
          const key = this.input.keys.mint(method, params);
          // A response the client already sent under this key answers at once (stateless MRTR re-execution).
          // An offered answer that does not fit the request is not sent: the request is asked again (a fresh call cannot
          // refuse keys it has not reached yet, so `offered` is never checked as a whole).
          if (Object.hasOwn(offered, key) && isValidInputResponse(method, offered[key], toInputRequest(method, params).params)) {
            await this.call.respond(id, { result: toLegacyInputResult(offered[key]) as JsonObject }).catch(unanswered);
            break;
          }
          this.input.hold(key, this.call, id, method, params);
          fresh.push(key);
          // Checked as each arrives: an upstream asking without pause would never let the gathering end.
          if (o.bounds && this.input.size > o.bounds.maxRequestsPerRound) {
            throw new GatewayError('GW_INPUT_REQUESTS_EXCEEDED', { args: [o.bounds.maxRequestsPerRound] });
          }
          break;
        }
        case 'response':
          return { kind: 'response', message: event.message };
        case 'task':
          return { kind: 'task', task: event.task };
        case 'failure':
          throw event.error;
      }
    }
  }
}
