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
import { ErrorCode } from '../translate/index.js';
import type {
  Era,
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
  ListenFilter,
  RequestId,
  UpstreamIdentity,
} from '../translate/index.js';

/** On whose behalf an upstream request is made. Era-neutral: capabilities in the modern per-request shape. */
export interface UpstreamCaller {
  /** The client's Authorization header, forwarded unchanged; also keys per-caller state (legacy sessions). */
  authorization?: string;
  /** The client's declared capabilities (`elicitation`, `sampling`, `roots`, `extensions`, …). */
  capabilities: JsonObject;
  /** The client's identity (a modern upstream gets it as `io.modelcontextprotocol/clientInfo`). */
  clientInfo?: JsonObject;
  /** The lowest log level the client wants (a modern upstream gets it as `io.modelcontextprotocol/logLevel`). */
  logLevel?: string;
}

/** An event on one call. `response` and `failure` are final. */
export type CallEvent =
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'response'; message: JsonRpcResponse }
  | { kind: 'failure'; error: Error };

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
  /** The upstream's identity and capabilities (learned once, then cached). */
  identity(caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamIdentity>;
  /** Sends one request on the caller's behalf; its events arrive on the returned call. */
  call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal): Promise<UpstreamCall>;
  /** Opens a notification stream; it ends when `signal` aborts or the upstream ends it. */
  listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen>;
  /** Keeps per-caller upstream state (a legacy session and its tasks) alive until the returned release is called. */
  retain(caller: UpstreamCaller): () => void;
  stats(): UpstreamStats;
  /** Releases every upstream resource. Idempotent. */
  close(): Promise<void>;
}

/** Sends one request and reads it to its response, refusing any input request on the way (handshakes, lists, tasks/*). */
export async function requestOnce(
  client: UpstreamClient,
  caller: UpstreamCaller,
  method: string,
  params: JsonObject | undefined,
  signal?: AbortSignal,
): Promise<JsonRpcResponse> {
  return drain(await client.call(caller, method, params, signal));
}

/** Reads a call to its response, refusing any input request on the way. */
export async function drain(call: UpstreamCall): Promise<JsonRpcResponse> {
  for (;;) {
    const e = await call.next();
    if (e.kind === 'response') return e.message;
    if (e.kind === 'failure') throw e.error;
    if (e.kind === 'request') {
      await call.respond(e.message.id, { error: { code: ErrorCode.MethodNotFound, message: 'not supported here' } }).catch(() => {});
    }
  }
}
