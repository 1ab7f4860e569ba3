/** The trace of one MCP request at the edge (docs/operations.md §Traces): its SERVER span, opened and ended here. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { extractTrace, isObject, type Era } from '../translate/index.js';
import { endHttpSpan, startServerTrace, type RequestTrace, type RequestTraceAttributes } from '../upstream/index.js';

/**
 * The trace of one request: its context read from `params._meta` or the `traceparent`/`tracestate` headers (strictly;
 * a malformed value is ignored), its SERVER span opened when an SDK is registered and ended when the answer is done.
 * `undefined` (nothing allocated) without an SDK or an incoming context.
 */
export function traceRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  path: RequestTraceAttributes['path'],
  clientEra: Era,
  upstream: string,
): RequestTrace | undefined {
  const body = request.body;
  const params = isObject(body) && isObject(body.params) ? body.params : undefined;
  const t = startServerTrace(
    extractTrace(request.headers, params?._meta),
    isObject(body) && typeof body.method === 'string' ? body.method : request.method,
    params,
    { path, clientEra, upstream },
  );
  const span = t?.span;
  // Ended once what closed the answer has run to its end: a face notes the request's outcome on the span just after it
  // wrote the answer (in the same turn), and a short answer's response may close within that turn.
  if (span)
    reply.raw.once('close', () => {
      const status = reply.statusCode;
      setImmediate(() => endHttpSpan(span, status));
    });
  return t;
}
