/**
 * Spans through `@opentelemetry/api`: a no-op unless the operator registers an SDK (docs/operations.md §Traces). The
 * edge opens one SERVER span per MCP request; this file holds what both layers share (the tracer, the attribute names
 * of the OpenTelemetry semantic conventions for MCP) and the CLIENT span of one upstream call.
 *
 * Without an SDK nothing is allocated here: `sdkTracer()` is a property read on the global provider, and a caller
 * without trace context costs one comparison. The incoming `traceparent` then travels on verbatim (same trace id,
 * same parent), since the gateway has no span of its own to put in between.
 */
import {
  context,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { formatTraceparent, isObject, parseTraceparent, type IncomingTrace, type JsonObject, type TraceCarrier } from '../translate/index.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from '../version.js';
import type { CallEvent } from './client.js';

/** Span attribute names: the OpenTelemetry semantic conventions for MCP and GenAI, then the gateway's own. */
const ATTR = {
  methodName: 'mcp.method.name',
  protocolVersion: 'mcp.protocol.version',
  toolName: 'gen_ai.tool.name',
  promptName: 'gen_ai.prompt.name',
  operationName: 'gen_ai.operation.name',
  errorType: 'error.type',
  rpcStatusCode: 'rpc.response.status_code',
  httpStatusCode: 'http.response.status_code',
  /** The configured upstream name. */
  upstream: 'mcp_tasks_gateway.upstream',
  /** The client's era (`modern`, `legacy`). */
  clientEra: 'mcp_tasks_gateway.client.era',
  /** Which path served the request: `modern-face`, `legacy-face`, `pass-through`. */
  path: 'mcp_tasks_gateway.path',
  /** The gateway task a request created or addressed (the id its client sees). */
  taskId: 'mcp_tasks_gateway.task.id',
  /** The upstream's own task id, when an upstream call created a task. */
  upstreamTaskId: 'mcp_tasks_gateway.upstream.task.id',
} as const;

/**
 * The gateway's tracer from a registered SDK, or `undefined` when none is (the API's no-op). Asked per use, not
 * cached: an SDK registered or disabled later is seen at once, and the question costs no allocation.
 */
function sdkTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider
    ? provider.getDelegateTracer(GATEWAY_NAME, GATEWAY_VERSION)
    : provider.getTracer(GATEWAY_NAME, GATEWAY_VERSION);
}

/**
 * The span name of an MCP operation (semantic conventions for MCP: `{mcp.method.name} {target}`, the target a tool or
 * prompt name, low in cardinality; a resource URI is left out by default).
 */
function spanName(method: string, params: unknown): string {
  // A client's method name is not trusted to be short either (the span name must stay low in cardinality).
  if (method.length > 64) return 'other';
  const target = targetOf(method, params);
  return target === undefined ? method : `${method} ${target}`;
}

function targetOf(method: string, params: unknown): string | undefined {
  if ((method !== 'tools/call' && method !== 'prompts/get') || !isObject(params) || typeof params.name !== 'string') return undefined;
  // Bounded: a client's name is not trusted to be short.
  return params.name.length <= 128 ? params.name : undefined;
}

/** Sets the target attributes of an MCP operation on a recording span (tool or prompt name, execute_tool). */
function setTargetAttributes(span: Span, method: string, params: unknown): void {
  const target = targetOf(method, params);
  if (target === undefined) return;
  if (method === 'tools/call') {
    span.setAttribute(ATTR.toolName, target);
    span.setAttribute(ATTR.operationName, 'execute_tool');
  } else span.setAttribute(ATTR.promptName, target);
}

/** One upstream call's span and the context its exchanges carry upstream. */
export interface ClientTrace {
  /** The CLIENT span (only with an SDK). */
  span: Span | undefined;
  /** The `traceparent`/`tracestate` each exchange of the call sends. */
  carrier: TraceCarrier | undefined;
}

const UNTRACED: ClientTrace = Object.freeze({ span: undefined, carrier: undefined });

/**
 * Opens the CLIENT span of one upstream call, child of `parent` (the request's SERVER span as the caller carries it).
 * Without a parent: nothing (a call made for no traced request). Without an SDK: the parent travels on as it is.
 */
export function startClientTrace(parent: TraceCarrier | undefined, upstream: string, method: string, params: JsonObject | undefined): ClientTrace {
  if (parent === undefined) return UNTRACED;
  const tracer = sdkTracer();
  if (!tracer) return { span: undefined, carrier: parent };
  const p = parseTraceparent(parent.traceparent);
  if (!p) return UNTRACED;
  // The parent is the gateway's own SERVER span (local), known here by its ids only: the upstream layer stays free of
  // the edge's context objects.
  const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: p.traceId, spanId: p.spanId, traceFlags: p.flags, isRemote: false });
  const span = tracer.startSpan(spanName(method, params), { kind: SpanKind.CLIENT, attributes: { [ATTR.methodName]: method, [ATTR.upstream]: upstream } }, ctx);
  if (span.isRecording()) setTargetAttributes(span, method, params);
  const sc = span.spanContext();
  const traceparent = formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags);
  return { span, carrier: parent.tracestate === undefined ? { traceparent } : { traceparent, tracestate: parent.tracestate } };
}

/** Ends a CLIENT span with the call's final event: its error code, a tool error, the task it created. */
export function endClientSpan(span: Span, event: CallEvent): void {
  if (span.isRecording()) {
    if (event.kind === 'failure') {
      span.setAttribute(ATTR.errorType, errorTypeOf(event.error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message.slice(0, 200) });
    } else if (event.kind === 'task') {
      span.setAttribute(ATTR.upstreamTaskId, event.task.id);
    } else if (event.kind === 'response') {
      const m = event.message;
      if ('error' in m) {
        span.setAttribute(ATTR.errorType, String(m.error.code));
        span.setAttribute(ATTR.rpcStatusCode, String(m.error.code));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(m.error.message).slice(0, 200) });
      } else if (isObject(m.result) && m.result.isError === true) {
        span.setAttribute(ATTR.errorType, 'tool_error');
      } else if (isObject(m.result) && isObject(m.result.task) && typeof m.result.task.taskId === 'string') {
        // A 2025-11-25 CreateTaskResult (basic/utilities/tasks §Creating Tasks), read as a task above this call.
        span.setAttribute(ATTR.upstreamTaskId, m.result.task.taskId);
      }
    }
  }
  span.end();
}

/** A low-cardinality name for an error (its class, or the gateway's error kind). */
function errorTypeOf(e: unknown): string {
  if (isObject(e) && typeof (e as { kind?: unknown }).kind === 'string') return (e as { kind: string }).kind;
  return e instanceof Error ? e.name : 'Error';
}

/** The trace of one MCP request at the edge (docs/operations.md §Traces). */
export interface RequestTrace {
  /** The SERVER span (only with an SDK). */
  readonly span: Span | undefined;
  /** What the upstream calls made for the request carry (`UpstreamCaller.trace`). */
  readonly carrier: TraceCarrier;
  /** The trace id, for the operator log line. */
  readonly traceId: string;
}

/** What the edge knows of a request when it opens its span. */
export interface RequestTraceAttributes {
  path: 'modern-face' | 'legacy-face' | 'pass-through';
  clientEra: 'modern' | 'legacy';
  upstream: string;
}

/**
 * Opens the SERVER span of one MCP request. Its parent: the client's `params._meta` context, else a span already
 * active here (an HTTP server instrumentation the operator installed, itself from the `traceparent` header), else
 * the header's context (semantic conventions for MCP §Context propagation: the `_meta` context is the parent, the
 * ambient one a link). Without an SDK there is no span and the client's context travels on verbatim; without an SDK
 * or an incoming context: `undefined`, and nothing was allocated.
 */
export function startServerTrace(
  incoming: IncomingTrace | undefined,
  method: string,
  params: unknown,
  attrs: RequestTraceAttributes,
): RequestTrace | undefined {
  const tracer = sdkTracer();
  if (!tracer) return incoming === undefined ? undefined : { span: undefined, carrier: incoming.carrier, traceId: incoming.parent.traceId };
  const active = context.active();
  const ambient = trace.getSpan(active)?.spanContext();
  const ambientValid = ambient !== undefined && isSpanContextValid(ambient);
  let parent: Context = active;
  let links: Link[] | undefined;
  if (incoming !== undefined && (incoming.source === 'meta' || !ambientValid)) {
    const p = incoming.parent;
    parent = trace.setSpanContext(active, { traceId: p.traceId, spanId: p.spanId, traceFlags: p.flags, isRemote: true });
    if (ambientValid) links = [{ context: ambient }];
  }
  const span = tracer.startSpan(
    spanName(method, params),
    {
      kind: SpanKind.SERVER,
      attributes: {
        [ATTR.methodName]: method.length > 64 ? 'other' : method,
        [ATTR.path]: attrs.path,
        [ATTR.clientEra]: attrs.clientEra,
        [ATTR.upstream]: attrs.upstream,
      },
      ...(links ? { links } : {}),
    },
    parent,
  );
  if (span.isRecording()) setTargetAttributes(span, method, params);
  const sc = span.spanContext();
  const tracestate = sc.traceState?.serialize() || incoming?.carrier.tracestate;
  const traceparent = formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags);
  return { span, carrier: tracestate ? { traceparent, tracestate } : { traceparent }, traceId: sc.traceId };
}

/** What a request's span learns on the way: the task it created or addressed, its JSON-RPC error. */
export function annotateTrace(t: RequestTrace | undefined, note: { taskId?: string; errorCode?: number | undefined; errorMessage?: string }): void {
  const span = t?.span;
  if (!span?.isRecording()) return;
  if (note.taskId !== undefined) span.setAttribute(ATTR.taskId, note.taskId);
  if (note.errorCode !== undefined) {
    span.setAttribute(ATTR.errorType, String(note.errorCode));
    span.setAttribute(ATTR.rpcStatusCode, String(note.errorCode));
    span.setStatus({ code: SpanStatusCode.ERROR, ...(note.errorMessage !== undefined ? { message: note.errorMessage.slice(0, 200) } : {}) });
  }
}

/** Ends a span (SERVER, or the CLIENT span of a passed-through request) with the HTTP status its answer had. */
export function endHttpSpan(span: Span | undefined, status: number): void {
  if (!span) return;
  if (span.isRecording()) {
    span.setAttribute(ATTR.httpStatusCode, status);
    if (status >= 500) {
      span.setAttribute(ATTR.errorType, String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}
