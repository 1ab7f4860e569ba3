/**
 * A federated endpoint's 2025-11-25 `tools/call` passed through to its member (docs/federation.md §Eras and tasks). The
 * client's request goes on the member's 2025-11-25 session for this caller, the one from the pool that the face's own
 * call would take. The body carries the member's own name, and the answer comes back as the member sent it: JSON or
 * SSE, with its progress and log messages.
 *
 * Only where nothing of the face is needed:
 * - the member speaks 2025-11-25;
 * - no rule of the member's hides the tool or makes it the gateway's, and the member does not insist on a task;
 * - the client declared no input kind (elicitation, sampling, roots), so nothing can be asked on the answer's stream. A
 *   server→client request there would carry the member's id, and the client's answer to the session could not be
 *   routed back by it;
 * - the client takes SSE.
 *
 * Anything else is the face's, which routes, translates and relays.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { catalogAnswer, GatewayError, singleHeader, type JsonObject, type JsonRpcRequest, type TraceCarrier } from '../../translate/index.js';
import type { TaskRuntime, UpstreamRoute } from '../../tasks/index.js';
import { UpstreamHttpError, type PassedRequest } from '../../upstream/index.js';
import { rawBodyOf } from '../raw-body.js';
import { passThroughOutcome, type RequestOutcome } from '../request-outcome.js';
import { idKey } from './calls.js';
import { failWith } from './replies.js';
import type { ClientSession } from './session.js';

/** A passed call's outcome and the member that served it. */
export interface MemberPassed {
  outcome: RequestOutcome;
  member: string;
}

/** The member route and own name of a call that may pass through, or `undefined` when the face serves it. */
async function passable(
  runtime: TaskRuntime,
  request: FastifyRequest,
  s: ClientSession,
  params: JsonObject,
  trace: TraceCarrier | undefined,
  signal: AbortSignal,
): Promise<{ member: UpstreamRoute; own: string } | undefined> {
  const federation = s.route.federation;
  const name = params.name;
  if (!federation || typeof name !== 'string') return undefined;
  const c = s.capabilities;
  if (c.elicitation !== undefined || c.sampling !== undefined || c.roots !== undefined) return undefined;
  const accept = singleHeader(request.headers, 'accept') ?? '';
  if (!accept.includes('text/event-stream') && !accept.includes('*/*')) return undefined;
  const caller = s.contextOf(trace);
  let target: { route: UpstreamRoute; name: string } | undefined;
  try {
    target = await federation.target('tool', name, caller, signal);
  } catch {
    // A member known to be down, a list that could not be read: the face answers it.
    return undefined;
  }
  const member = target?.route;
  if (!target || member?.upstream.era !== 'legacy' || !member.upstream.passRequest) return undefined;
  if (!(await runtime.passesPlainCall(member, target.name, caller, signal))) return undefined;
  return { member, own: target.name };
}

/**
 * Passes `req` through to its member and resolves once its answer has ended, or resolves `undefined` at once when
 * the face must serve it.
 */
export async function passToMember(
  runtime: TaskRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
  s: ClientSession,
  req: JsonRpcRequest,
  params: JsonObject,
  trace: TraceCarrier | undefined,
): Promise<MemberPassed | undefined> {
  const aborter = new AbortController();
  const hop = await passable(runtime, request, s, params, trace, aborter.signal);
  if (!hop) return undefined;
  const { member, own } = hop;
  const text = own === params.name ? (rawBodyOf(request) ?? JSON.stringify(req)) : JSON.stringify({ ...req, params: { ...params, name: own } });
  // Its `notifications/cancelled` (or the session's end) reaches the member; a client that leaves drops the answer.
  const untrack = s.calls.track(idKey(req.id), aborter);
  const onClose = () => {
    if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
  };
  reply.raw.on('close', onClose);
  try {
    let passed: PassedRequest;
    try {
      passed = await (member.upstream.passRequest as NonNullable<typeof member.upstream.passRequest>)(s.callerOf(trace), text, aborter.signal);
    } catch (e) {
      s.route.federation?.failed(member.name, e);
      return { outcome: failWith(request, reply, member.name, req, e), member: member.name };
    }
    return { outcome: await relay(request, reply, req, member, passed, aborter.signal), member: member.name };
  } finally {
    reply.raw.off('close', onClose);
    untrack();
  }
}

/** Relays the member's answer to the client as it comes; resolves with the outcome once it has ended. */
function relay(
  request: FastifyRequest,
  reply: FastifyReply,
  req: JsonRpcRequest,
  member: UpstreamRoute,
  passed: PassedRequest,
  signal: AbortSignal,
): Promise<RequestOutcome> {
  const type = (passed.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const sse = type === 'text/event-stream';
  if (!sse && type !== 'application/json') {
    // No MCP answer (a proxy's error page, a wrong path): the catalogued error instead, as the face would answer.
    passed.body.destroy();
    passed.release(true);
    const e =
      passed.status >= 400
        ? new UpstreamHttpError(passed.status, '')
        : new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`HTTP ${passed.status} ${type || 'without a content type'}, not JSON-RPC`] });
    return Promise.resolve(failWith(request, reply, member.name, req, e));
  }
  const raw = reply.raw as ServerResponse;
  const body = passed.body;
  reply.hijack();
  const headers: Record<string, string> = { 'content-type': passed.header('content-type') as string };
  const length = passed.header('content-length');
  if (sse) headers['cache-control'] = 'no-cache';
  else if (length !== undefined) headers['content-length'] = length;
  raw.writeHead(passed.status, headers);
  if (sse) raw.flushHeaders();
  return new Promise<RequestOutcome>((resolve) => {
    let ended = false;
    // The member's budget bounds the answer, as for a call the face carries: a stream ends with the catalogued timeout.
    const timer = setTimeout(() => stop('GW_UPSTREAM_TIMEOUT'), member.timeoutMs);
    timer.unref();
    const stop = (why: 'GW_UPSTREAM_TIMEOUT' | 'cancelled') => {
      if (raw.writableEnded) return;
      body.unpipe?.(raw);
      body.destroy();
      if (why === 'cancelled') passed.cancel(req.id, signal.reason instanceof Error ? signal.reason.message : 'cancelled');
      if (sse && !raw.destroyed && why === 'GW_UPSTREAM_TIMEOUT')
        raw.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: req.id, error: catalogAnswer(why).error })}\n\n`);
      else if (sse && !raw.destroyed) raw.end();
      else raw.destroy();
    };
    const onAbort = () => stop('cancelled');
    signal.addEventListener('abort', onAbort, { once: true });
    body.once('end', () => {
      ended = true;
    });
    body.once('error', () => raw.destroy());
    raw.once('close', () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (!body.destroyed) body.destroy();
      // A session whose answer did not end cleanly is not reused: its connection may still carry the rest.
      passed.release(!ended);
      resolve(passThroughOutcome(raw.writableFinished, passed.status, undefined));
    });
    body.pipe(raw);
  });
}
