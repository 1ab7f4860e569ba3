/**
 * The one seam between the gateway and an upstream MCP server, whatever era it speaks. The runtime (`src/tasks`)
 * and the edge (`src/proxy`) depend on these interfaces only; sessions, envelopes and MRTR retries stay inside
 * the implementations (the legacy session pool, the stateless modern client).
 *
 * A call is a stream of events: notifications (progress, log), input requests, then exactly one outcome. Input
 * requests look the same for both eras: a legacy server→client request arrives as it is; each entry of a modern
 * `InputRequiredResult` arrives as a request whose `id` is unique for the call's life, and once every request of
 * a round has been answered with `respond()`, the modern client retries the original request with
 * `inputResponses` and the echoed `requestState` (2026-07-28 basic/patterns/mrtr §Client Requirements) and
 * goes on streaming events of that retry. The consumer never sees a round boundary.
 */
import type {
  Era,
  LayerLogger,
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
  ListenFilter,
  RequestId,
  TaskSnapshot,
  TraceCarrier,
  UpstreamIdentity,
} from '../translate/index.js';
import type { ExchangeStop } from './http.js';

/** On whose behalf an upstream request is made. Era-neutral: capabilities in the modern per-request shape. */
export interface UpstreamCaller {
  /** The client's Authorization header, forwarded unchanged; also keys per-caller state (legacy sessions). */
  authorization?: string;
  /**
   * Who the caller is (the edge's principal: a keyed fingerprint of its credentials, or `anonymous`); legacy upstream
   * sessions are keyed by it (docs/security.md §Upstream session isolation). Absent: the caller is not known, and never shares
   * a session.
   */
  principal?: string;
  /**
   * The era of the client the request is made for (absent: 2026-07-28). A federated endpoint reaches a member that
   * speaks both eras on the client's own side, as a single endpoint passes the client through (docs/federation.md).
   */
  clientEra?: Era;
  /** The client's declared capabilities (`elicitation`, `sampling`, `roots`, `extensions`, …). */
  capabilities: JsonObject;
  /** The client's identity (a modern upstream gets it as `io.modelcontextprotocol/clientInfo`). */
  clientInfo?: JsonObject;
  /** The lowest log level the client wants (a modern upstream gets it as `io.modelcontextprotocol/logLevel`). */
  logLevel?: string;
  /**
   * The W3C trace context of the request this is made for (docs/operations.md §Traces): the request's SERVER span when
   * an OpenTelemetry SDK is registered, else the client's own `traceparent` as it came. Each upstream call carries
   * its own CLIENT span's (or, without an SDK, this one) in `traceparent`/`tracestate` headers and `params._meta`.
   * Absent (or `undefined`, a parent that could not be read): no trace context goes upstream.
   */
  trace?: TraceCarrier | undefined;
}

/** An event on one call. `response`, `task` and `failure` are final. */
export type CallEvent =
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'request'; message: JsonRpcRequest }
  /**
   * `raw`: the message's JSON text as the upstream sent it, when its answer was that one message in plain JSON (a
   * translation may splice it rather than serialize the parsed message again).
   */
  | { kind: 'response'; message: JsonRpcResponse; raw?: string }
  /** The upstream answered a call sent with `CallOptions.task` by creating a task (either era's CreateTaskResult). */
  | { kind: 'task'; task: UpstreamTask }
  | { kind: 'failure'; error: Error };

/** How one call is sent. */
export interface CallOptions {
  /**
   * Lets the upstream answer with a task: a legacy upstream gets `task: { ttl }` in the params (2025-11-25
   * basic/utilities/tasks §Creating Tasks), a modern one the tasks extension declared in this request's client
   * capabilities (tasks extension §Capability Negotiation). Without it a modern upstream never sees the extension
   * declared, so it cannot answer with a task. `ttlMs` absent: the upstream picks.
   */
  task?: { ttlMs?: number };
  /**
   * The call may outlive its request (it runs, or may come to run, as a gateway-owned task): when the upstream's
   * sessions are all busy it waits for one within its own budget, rather than the bound an interactive caller gets
   * (`sessions.acquireTimeoutMs`), so that a burst of tasks queues instead of failing.
   */
  patient?: boolean;
}

/**
 * One upstream task as the gateway sees it, whatever era created it, in the neutral (modern) vocabulary: `failed` only
 * for a JSON-RPC error, a tool error is `completed` with `result.isError` (tasks extension §Task Status). The same
 * shape translate reads from either era's wire (`TaskSnapshot`), without the id (the task carries it).
 */
export type UpstreamTaskSnapshot = Omit<TaskSnapshot, 'taskId'>;

/**
 * Where an upstream task lives, for another gateway instance to reach it: its id, and for a legacy upstream the
 * session it was created in (2025-11-25 tasks are bound to their session).
 */
export interface UpstreamTaskRef {
  id: string;
  /** The upstream session id (legacy upstreams). */
  session?: string;
}

/**
 * A task an upstream runs. A legacy upstream's is followed on its `tasks/result` stream (input requests and the
 * payload arrive there) and polled with `tasks/get`; a modern upstream's is polled with `tasks/get` at its
 * `pollIntervalMs`, answered with `tasks/update`. Holds the upstream state it lives in until `release()`.
 */
export interface UpstreamTask {
  /** The upstream's own task id. */
  readonly id: string;
  /** Where it lives (stored with the gateway's record, so that any instance can reach it). */
  readonly ref: UpstreamTaskRef;
  /** The state the upstream created it in. */
  readonly created: UpstreamTaskSnapshot;
  /**
   * The next state that differs from the last one returned (status, statusMessage, the set of input keys), or the
   * terminal one; `undefined` once `signal` aborts. Rejects with `UpstreamTaskLostError` when the upstream no
   * longer knows the task. After a terminal state, returns it again.
   */
  next(signal: AbortSignal): Promise<UpstreamTaskSnapshot | undefined>;
  /** The state now (one upstream round trip). */
  get(signal?: AbortSignal): Promise<UpstreamTaskSnapshot>;
  /**
   * Whether the upstream's own poll interval has passed since it was last asked about the task (by `next()` or
   * `get()`): a read that is not due is answered from the state known, so that the upstream is asked at most once
   * per the interval it suggested, however often clients poll.
   */
  pollDue(): boolean;
  /**
   * Answers outstanding input requests by key with the bare modern results; unknown or answered keys are ignored.
   * Resolves with the keys it sent upstream.
   */
  answer(responses: JsonObject): Promise<string[]>;
  /**
   * Asks the upstream to cancel. `cancelled`: accepted (modern: acknowledged); `terminal`: it had already ended
   * (its outcome stands); `unknown`: the upstream does not know it.
   */
  cancel(): Promise<'cancelled' | 'terminal' | 'unknown'>;
  /** Stops following the task and ends the hold on its upstream state. Idempotent; the upstream task runs on. */
  release(): void;
}

/** One in-flight upstream request. */
export interface UpstreamCall {
  /** Whether the final event has been produced. */
  readonly finished: boolean;
  /** Events queued and not yet taken. */
  readonly pending: number;
  /** The next event; after the final one, the final one again. */
  next(): Promise<CallEvent>;
  /** The next event, or `undefined` when `ms` pass or `signal` aborts first (a later event stays queued). */
  nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined>;
  /** Answers an input request of this call. */
  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void>;
  /** Stops the call and tells the upstream (legacy `notifications/cancelled`; modern: closing the stream). Idempotent. */
  cancel(reason: string): void;
  /** Drops the call's stream without cancelling the work upstream (a legacy `tasks/result` wait). Idempotent. */
  abandon(reason: string): void;
}

/** A notification stream of list changes and resource updates (2026-07-28 `subscriptions/listen`; legacy GET stream). */
export interface UpstreamListen {
  /** The subset of the requested filter the upstream serves. */
  accepted: ListenFilter;
  /** Notifications in legacy-era method names (`notifications/tools/list_changed`, `…/resources/updated`, …). */
  notifications: AsyncIterable<JsonRpcNotification>;
}

/** Gauges an operator sees on /healthz. */
export interface UpstreamStats {
  /** Upstream sessions held (0 for a stateless upstream). */
  sessions: number;
}

/** A client of one upstream. */
export interface UpstreamClient {
  /** The upstream's configured name. */
  readonly name: string;
  /** The era this client speaks to the upstream. */
  readonly era: Era;
  /** The identity already learned, without I/O. */
  readonly knownIdentity: UpstreamIdentity | undefined;
  /** Where its tasks and calls log what they do not report to a caller (absent: nowhere). */
  readonly log?: LayerLogger;
  /** The upstream's identity and capabilities (learned once, then cached). */
  identity(caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamIdentity>;
  /**
   * Sends one request on the caller's behalf; its events arrive on the returned call. Resolves once the request is
   * sent and answered with headers; see `callNow` for a call whose window starts when it is sent.
   */
  call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal, opts?: CallOptions): Promise<UpstreamCall>;
  /** Opens a notification stream; it ends when `signal` aborts or the upstream ends it. */
  listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen>;
  /**
   * An upstream task another instance created, reached on the caller's behalf from its `ref` (a legacy upstream's
   * session is joined by id, without a new `initialize`). `created`: its last known state. The task is not followed
   * until `next` is called; operations on a task the upstream no longer knows reject with `UpstreamTaskLostError`.
   */
  resumeTask(caller: UpstreamCaller, ref: UpstreamTaskRef, created: UpstreamTaskSnapshot): UpstreamTask;
  /** Keeps per-caller upstream state (a legacy session and its tasks) alive until the returned release is called. */
  retain(caller: UpstreamCaller): () => void;
  stats(): UpstreamStats;
  /** Releases every upstream resource. Idempotent. */
  close(): Promise<void>;
  /**
   * Sends later requests with the operator's new static headers (a reload: `upstreams[].headers`); what is open stays
   * open. Absent: the client's headers are fixed until a restart.
   */
  useStaticHeaders?(headers: Record<string, string>): void;
  /**
   * Admits later sessions under new bounds (a reload: `sessions.*`); sessions over a lowered bound are not closed, they
   * end as they go idle. Absent: a client without sessions (the stateless 2026-07-28 one).
   */
  setSessionBounds?(bounds: SessionBounds): void;
  /**
   * Sends `text`, a client's request as it came, on the caller's session and hands the answer back unread, the
   * session held until the answer is done with (a federated endpoint's 2025-11-25 call passed through to its member).
   * Absent: a client without sessions of its own to pass a request on (the stateless 2026-07-28 one).
   */
  passRequest?(caller: UpstreamCaller, text: string, requestId: string | number, stop?: ExchangeStop): Promise<PassedRequest>;
}

/** A request passed on as it came (`UpstreamClient.passRequest`): its answer, unread, and its session's hold. */
export interface PassedRequest {
  /** The HTTP status and headers of the answer. */
  status: number;
  header(name: string): string | undefined;
  /** The answer's body as it arrives (empty when it had none). */
  body: NodeJS.ReadableStream & { destroy(): void; destroyed?: boolean };
  /** Tells the upstream the request is cancelled (2025-11-25 basic/utilities/cancellation). */
  cancel(reason: string): void;
  /** Gives the session back; `broken`: the exchange did not end cleanly, so the session is not reused. */
  release(broken?: boolean): void;
}

/** The bounds on a client's upstream sessions, the ones a reload may change. */
export interface SessionBounds {
  /** Sessions held on the upstream at once. */
  max: number;
  /** Sessions one principal may hold at once (absent: `max`). */
  maxPerPrincipal?: number;
  /** An idle session is closed after this long. */
  idleMs: number;
  /** Idle sessions kept ready per key with demand (absent: the client's default). */
  warmIdle?: number;
  /** How long a call waits for a session to come free when the bounds are full (absent: the client's default). */
  acquireTimeoutMs?: number;
}
