/**
 * W3C Trace Context as MCP carries it: the `traceparent`/`tracestate` HTTP headers (W3C Trace Context §Trace Context
 * HTTP Headers Format) and the same two keys in a request's `params._meta` (2026-07-28 basic §General fields › `_meta`
 * › OpenTelemetry trace context; the OpenTelemetry semantic conventions for MCP use the same keys for earlier
 * revisions, whose specification reserves none). Parsing is strict and never throws: a malformed value is no context.
 */
import { isObject, type JsonObject } from './jsonrpc.js';

/** The `_meta` key and HTTP header of the W3C `traceparent` (2026-07-28 basic §General fields › `_meta`). */
export const TRACEPARENT = 'traceparent';
/** The `_meta` key and HTTP header of the W3C `tracestate`. */
export const TRACESTATE = 'tracestate';

/**
 * Longest `tracestate` carried on. W3C Trace Context §tracestate Limits: a platform SHOULD propagate at least 512
 * characters and MAY drop a longer value whole; it is dropped here (never truncated mid-member, never logged).
 */
export const MAX_TRACESTATE_LENGTH = 512;

/** A trace context as it travels: the `traceparent` value, and the `tracestate` that goes with it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The fields of a valid version-00 `traceparent`. */
export interface TraceParent {
  traceId: string;
  /** The caller's span (the `parent-id` field). */
  spanId: string;
  /** The trace flags as a number (bit 0: sampled). */
  flags: number;
}

/** Where an extracted context came from. */
export type TraceSource = 'meta' | 'header';

/** An incoming trace context: the carrier as it came (valid), its parsed parent, and its source. */
export interface IncomingTrace {
  carrier: TraceCarrier;
  parent: TraceParent;
  source: TraceSource;
}

/** Version 00 exactly (W3C Trace Context §traceparent Header), lowercase hex only. */
const TRACEPARENT_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';

/**
 * A `traceparent` read strictly as version 00 (W3C Trace Context §traceparent Header): exactly
 * `00-<32 lowercase hex>-<16 lowercase hex>-<2 lowercase hex>`, the trace id and parent id not all zeros. Anything
 * else (another version, upper case, extra fields, a non-string, a huge string) is `undefined`: the gateway only
 * carries on what it can vouch for.
 */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  // The length first: a huge value costs nothing more than a short one.
  if (typeof value !== 'string' || value.length !== 55) return undefined;
  const m = TRACEPARENT_00.exec(value);
  if (m === null) return undefined;
  const traceId = m[1] as string;
  const spanId = m[2] as string;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags: parseInt(m[3] as string, 16) };
}

/** The version-00 `traceparent` of a span (ids as lowercase hex, flags as a byte). */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * A `tracestate` worth carrying on, or `undefined`: a non-empty string of printable ASCII (W3C Trace Context
 * §tracestate Header: keys and values are printable ASCII) no longer than MAX_TRACESTATE_LENGTH. Its members are
 * opaque to the gateway, which neither reads nor reorders them.
 */
export function readTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TRACESTATE_LENGTH) return undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return undefined;
  }
  return value.trim() === '' ? undefined : value;
}

/** One header value: a repeated `traceparent` names no one parent (W3C §traceparent: exactly one). */
function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
}

/** A repeated `tracestate` header is one list (W3C §tracestate: combined as RFC 9110 field lines). */
function joined(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(',') : v;
}

/**
 * The trace context a request carries. Precedence: `params._meta.traceparent` over the HTTP header, as the
 * OpenTelemetry semantic conventions for MCP say (the `_meta` context is the MCP client's, the transport's may be an
 * HTTP hop below it; one HTTP request may even carry several MCP messages). A `tracestate` is taken only from the
 * source whose `traceparent` was taken, and only with a valid one (W3C §tracestate: without a valid traceparent it is
 * discarded). A malformed value is skipped: the next source is tried. Costs two property reads when neither is present.
 */
export function extractTrace(headers: Record<string, string | string[] | undefined>, meta: unknown): IncomingTrace | undefined {
  if (isObject(meta) && meta[TRACEPARENT] !== undefined) {
    const parent = parseTraceparent(meta[TRACEPARENT]);
    if (parent) return incoming(meta[TRACEPARENT] as string, readTracestate(meta[TRACESTATE]), parent, 'meta');
  }
  const header = single(headers[TRACEPARENT]);
  if (header === undefined) return undefined;
  const parent = parseTraceparent(header);
  return parent ? incoming(header, readTracestate(joined(headers[TRACESTATE])), parent, 'header') : undefined;
}

function incoming(traceparent: string, tracestate: string | undefined, parent: TraceParent, source: TraceSource): IncomingTrace {
  return { carrier: tracestate === undefined ? { traceparent } : { traceparent, tracestate }, parent, source };
}

/**
 * `params` with the trace context in its `_meta` (2026-07-28 basic §General fields › `_meta`): the carrier's keys set,
 * or, without one, any `traceparent`/`tracestate` the params brought removed (a client's malformed or superseded
 * value is not carried on). Params without either key and no carrier are returned as they are (no copy).
 */
export function withTraceMeta(params: JsonObject | undefined, carrier: TraceCarrier | undefined): JsonObject | undefined {
  const meta = params !== undefined && isObject(params._meta) ? params._meta : undefined;
  if (!carrier && (meta === undefined || (meta[TRACEPARENT] === undefined && meta[TRACESTATE] === undefined))) return params;
  const next: JsonObject = { ...(meta ?? {}) };
  delete next[TRACEPARENT];
  delete next[TRACESTATE];
  if (carrier) {
    next[TRACEPARENT] = carrier.traceparent;
    if (carrier.tracestate !== undefined) next[TRACESTATE] = carrier.tracestate;
  }
  return { ...(params ?? {}), _meta: next };
}

/** Sets the carrier's HTTP headers on `headers` (which the caller owns), replacing any already there. */
export function setTraceHeaders(headers: Record<string, string>, carrier: TraceCarrier): Record<string, string> {
  headers[TRACEPARENT] = carrier.traceparent;
  if (carrier.tracestate !== undefined) headers[TRACESTATE] = carrier.tracestate;
  else delete headers[TRACESTATE];
  return headers;
}
