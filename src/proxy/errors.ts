/**
 * Failures to JSON-RPC errors and HTTP statuses at the edge, through the one error catalog
 * (src/translate/error-catalog.ts): a thrown `GatewayError` names its entry, a refused modern request its reason's
 * entry, and anything else is the gateway's fault (GW_INTERNAL, 500, logged). The one exception is an upstream's own
 * in-band JSON-RPC error, which keeps its code (`upstreamErrorStatus`).
 */
import {
  answerOf,
  catalogAnswer,
  catalogError,
  ErrorCode,
  GatewayError,
  REQUEST_FAILURE_KIND,
  type CatalogAnswer,
  type ErrorKind,
  type GatewayErrorOptions,
  type InBandKind,
  type JsonRpcErrorObject,
  type RequestFailure,
  type RequestId,
} from '../translate/index.js';
import type { FastifyReply } from 'fastify';
import type { ResponseChannel } from './response.js';

/** An error as the client gets it. */
export interface EdgeError {
  status: number;
  error: JsonRpcErrorObject;
  /** Whether the operator log should carry it as a gateway fault. */
  fault: boolean;
  /** Seconds after which a retry may succeed (sent as `Retry-After`, RFC 9110 §10.2.3). */
  retryAfterSeconds?: number;
  /** An upstream's `WWW-Authenticate` on its 401/403, sent on unchanged (RFC 9110 §11.6.1). */
  challenge?: string | string[];
}

/** A catalog entry as the client gets it (the edge's refusals that are not thrown). */
function edgeError(kind: ErrorKind, opts?: GatewayErrorOptions): EdgeError {
  return withoutKind(catalogAnswer(kind, opts));
}

/**
 * A catalog entry that travels in-band (inside a 200, or as the gateway's answer to an upstream's request): `catalogError`,
 * held by its type to the entries that may.
 */
export function inBandError(kind: InBandKind, opts?: GatewayErrorOptions): JsonRpcErrorObject {
  return catalogError(kind, opts);
}

/** Refuses a request with a catalog entry: its status, `Retry-After` when it has one, and a JSON-RPC error body. */
export function refuse(reply: FastifyReply, kind: ErrorKind, id: RequestId | null, opts?: GatewayErrorOptions): FastifyReply {
  return refuseWith(reply, edgeError(kind, opts), id);
}

/** Refuses a request with an error already mapped (`exceptionToEdge`, `failureToEdge`). */
export function refuseWith(reply: FastifyReply, edge: EdgeError, id: RequestId | null): FastifyReply {
  edgeHeaders(reply, edge);
  return reply.code(edge.status).header('content-type', 'application/json').send({ jsonrpc: '2.0', id, error: edge.error });
}

/**
 * Sets what an error answer carries besides its body: `Retry-After`, and the upstream's own `WWW-Authenticate` on a
 * 401/403 it answered, as it arrived (byte for byte, repeated values kept apart). Set before a response channel ends
 * with the error: the channel sends the reply's headers with its status.
 */
export function edgeHeaders(reply: FastifyReply, edge: EdgeError): void {
  if (edge.retryAfterSeconds !== undefined) void reply.header('retry-after', String(edge.retryAfterSeconds));
  if (edge.challenge !== undefined) void reply.header('www-authenticate', edge.challenge);
}

/** Ends a response channel with a catalog entry (its status, and `Retry-After` when it has one). */
export function channelError(channel: ResponseChannel, id: RequestId | null, kind: ErrorKind, opts?: GatewayErrorOptions): void {
  const edge = edgeError(kind, opts);
  channel.error(id, edge.error, edge.status, edge.retryAfterSeconds);
}

/** A refused modern request → its reason's catalog entry, with the validator's message. */
export function failureToEdge(f: RequestFailure): EdgeError {
  return edgeError(REQUEST_FAILURE_KIND[f.reason], { args: [f.message], ...(f.data !== undefined ? { data: f.data } : {}) });
}

/**
 * An upstream's in-band JSON-RPC error keeps its code; this is the one place an upstream's code is given an HTTP
 * status (every error the gateway itself answers takes its status from the catalog). Only "method not found"
 * (2026-07-28 basic/transports/streamable-http: 404) and the modern era's header, version and capability errors
 * (2026-07-28 basic §Error Codes: 400) change it.
 */
export function upstreamErrorStatus(error: JsonRpcErrorObject): number {
  if (error.code === ErrorCode.MethodNotFound) return 404;
  if (
    error.code === ErrorCode.MissingRequiredClientCapability ||
    error.code === ErrorCode.HeaderMismatch ||
    error.code === ErrorCode.UnsupportedProtocolVersion
  )
    return 400;
  return 200;
}

/** A thrown error → what the client gets: a `GatewayError` through the catalog, anything else GW_INTERNAL (logged). */
export function exceptionToEdge(e: unknown): EdgeError {
  return withoutKind(e instanceof GatewayError ? answerOf(e) : catalogAnswer('GW_INTERNAL'));
}

function withoutKind(a: CatalogAnswer): EdgeError {
  const challenge = a.kind === 'GW_UPSTREAM_UNAUTHORIZED' || a.kind === 'GW_UPSTREAM_FORBIDDEN' ? challengeOf(a.error.data) : undefined;
  return {
    status: a.status,
    error: a.error,
    fault: a.fault,
    ...(a.retryAfterSeconds !== undefined ? { retryAfterSeconds: a.retryAfterSeconds } : {}),
    ...(challenge !== undefined ? { challenge } : {}),
  };
}

/** The upstream's challenge an upstream-auth error carries in its data (see UpstreamHttpError). */
function challengeOf(data: unknown): string | string[] | undefined {
  const v = typeof data === 'object' && data !== null ? (data as { wwwAuthenticate?: unknown }).wwwAuthenticate : undefined;
  if (typeof v === 'string') return v;
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
}
