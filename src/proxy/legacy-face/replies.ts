/**
 * How the legacy face answers a request that does not stream: a JSON result, an in-band error (as a legacy server
 * sends it), a thrown error through the one error table, or a store failure (503, never a hang). Each returns the
 * request's outcome.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JsonObject, JsonRpcErrorObject, JsonRpcRequest, RequestId } from '../../translate/index.js';
import { edgeHeaders, exceptionToEdge, refuseWith } from '../errors.js';
import { errorOutcome, OK, type RequestOutcome } from '../request-outcome.js';

/** Answers a request with a result (a JSON body); returns its outcome. */
export function answer(reply: FastifyReply, id: RequestId, result: JsonObject): RequestOutcome {
  void reply.code(200).header('content-type', 'application/json').send({ jsonrpc: '2.0', id, result });
  return OK;
}

/** Answers a request with an in-band error; returns its outcome (`e`: the exception it answers, if any). */
export function failInBand(reply: FastifyReply, id: RequestId, error: JsonRpcErrorObject, e?: unknown): RequestOutcome {
  // In-band errors travel with 200, as a legacy server sends them; a legacy client reads the body only then.
  void reply.code(200).header('content-type', 'application/json').send({ jsonrpc: '2.0', id, error });
  return errorOutcome(error.code, e);
}

/** A thrown error as the client gets it: in-band for the errors a legacy server answers in-band. */
export function failWith(request: FastifyRequest, reply: FastifyReply, upstream: string, req: JsonRpcRequest, e: unknown): RequestOutcome {
  const edge = exceptionToEdge(e);
  if (edge.fault) request.log.error({ err: e, method: req.method, upstream }, 'legacy face: request failed');
  if (edge.status === 200) return failInBand(reply, req.id, edge.error, e);
  edgeHeaders(reply, edge);
  void reply.code(edge.status).header('content-type', 'application/json').send({ jsonrpc: '2.0', id: req.id, error: edge.error });
  return errorOutcome(edge.error.code, e);
}

/** A store failure (or a full registry) as the client gets it: 503 with Retry-After, never a hang. */
export function storeTrouble(request: FastifyRequest, reply: FastifyReply, id: RequestId | null, e: unknown): FastifyReply {
  const edge = exceptionToEdge(e);
  if (edge.fault) request.log.error({ err: e }, 'legacy face: session store failed');
  return refuseWith(reply, edge, id);
}
