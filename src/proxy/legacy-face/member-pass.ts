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
import { ExchangeStop, UpstreamHttpError, type PassedRequest } from '../../upstream/index.js';
import { rawBodyOf } from '../raw-body.js';
import { stopWhenClientLeaves } from '../response.js';
import { passThroughOutcome, type RequestOutcome } from '../request-outcome.js';
import { idKey } from './calls.js';
import { failWith } from './replies.js';
import type { ClientSession } from './session.js';

const ignore = () => {};

/** A passed call's outcome and the member that served it. */
export interface MemberPassed {
  outcome: RequestOutcome;
  member: string;
}

/**
 * How a passed call is stopped: its `notifications/cancelled`, the session's end or the client leaving. Before the
 * answer arrives, the exchange is aborted (and the member told, by `passRequest`); after it, the relay ends the answer.
 */
class Stop {
  readonly exchange = new ExchangeStop();
  /** Why the call was stopped, once it was. */
  why: string | undefined;
  /** What ends the relayed answer (set once the answer arrives). */
  onStop: (() => void) | undefined;

  abort(reason?: unknown): void {
    if (this.why !== undefined) return;
    this.why = reason instanceof Error ? reason.message : 'cancelled';
    this.onStop?.();
    this.exchange.abort(reason);
  }
}

/** The member route and own name of a call that may pass through, or `undefined` when the face serves it. */
async function passable(
  runtime: TaskRuntime,
  request: FastifyRequest,
  s: ClientSession,
  params: JsonObject,
  trace: TraceCarrier | undefined,
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
    target = await federation.target('tool', name, caller);
  } catch {
    // A member known to be down, a list that could not be read: the face answers it.
    return undefined;
  }
  const member = target?.route;
  if (!target || member?.upstream.era !== 'legacy' || !member.upstream.passRequest) return undefined;
  if (!(await runtime.passesPlainCall(member, target.name, caller))) return undefined;
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
  const hop = await passable(runtime, request, s, params, trace);
  if (!hop) return undefined;
  const { member, own } = hop;
  const text = own === params.name ? (rawBodyOf(request) ?? JSON.stringify(req)) : JSON.stringify({ ...req, params: { ...params, name: own } });
  // Its `notifications/cancelled` (or the session's end) reaches the member; a client that leaves drops the answer.
  const stop = new Stop();
  const untrack = s.calls.track(idKey(req.id), stop);
  const unwatch = stopWhenClientLeaves(reply, stop);
  try {
    let passed: PassedRequest;
    try {
      passed = await (member.upstream.passRequest as NonNullable<typeof member.upstream.passRequest>)(s.callerOf(trace), text, req.id, stop.exchange);
    } catch (e) {
      // Stopped before the member answered: as the face ends a cancelled request (GW_REQUEST_CANCELLED, or nothing
      // to a client that left).
      if (stop.why !== undefined) return { outcome: failWith(request, reply, member.name, req, new GatewayError('GW_REQUEST_CANCELLED')), member: member.name };
      s.route.federation?.failed(member.name, e);
      return { outcome: failWith(request, reply, member.name, req, e), member: member.name };
    }
    return { outcome: await relay(request, reply, req, member, passed, stop), member: member.name };
  } finally {
    unwatch();
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
  stop: Stop,
): Promise<RequestOutcome> {
  const body = passed.body;
  // A body destroyed before it ended emits an error (undici's "Request aborted"): with no listener it would take the
  // process down. Every destroy below is one of those; the relay's own listener ends the client's answer.
  body.on('error', ignore);
  const type = (passed.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const sse = type === 'text/event-stream';
  if (stop.why !== undefined || (!sse && type !== 'application/json')) {
    body.destroy();
    if (stop.why !== undefined) {
      // Stopped as the answer arrived: the member is told (before its session is given back), and the request ends
      // as the face ends a cancelled one.
      passed.cancel(stop.why);
      passed.release(true);
      return Promise.resolve(failWith(request, reply, member.name, req, new GatewayError('GW_REQUEST_CANCELLED')));
    }
    passed.release(true);
    // No MCP answer (a proxy's error page, a wrong path): the catalogued error instead, as the face would answer.
    const e =
      passed.status >= 400
        ? new UpstreamHttpError(passed.status, '')
        : new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`HTTP ${passed.status} ${type || 'without a content type'}, not JSON-RPC`] });
    return Promise.resolve(failWith(request, reply, member.name, req, e));
  }
  const raw = reply.raw as ServerResponse;
  reply.hijack();
  const headers: Record<string, string> = { 'content-type': passed.header('content-type') as string };
  const length = passed.header('content-length');
  if (sse) headers['cache-control'] = 'no-cache';
  else if (length !== undefined) headers['content-length'] = length;
  raw.writeHead(passed.status, headers);
  if (sse) raw.flushHeaders();
  return new Promise<RequestOutcome>((resolve) => {
    let ended = false;
    const end = (timedOut: boolean) => {
      if (raw.writableEnded) return;
      body.unpipe?.(raw);
      body.destroy();
      // The member stops too: its answer is no longer read (2025-11-25 basic/utilities/cancellation).
      passed.cancel(timedOut ? 'the answer outlived its budget' : (stop.why ?? 'cancelled'));
      if (sse && !raw.destroyed && timedOut)
        raw.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: req.id, error: catalogAnswer('GW_UPSTREAM_TIMEOUT').error })}\n\n`);
      else if (sse && !raw.destroyed) raw.end();
      else raw.destroy();
    };
    // The member's budget bounds the answer, as for a call the face carries: a stream ends with the catalogued timeout.
    const timer = setTimeout(() => end(true), member.timeoutMs);
    timer.unref();
    stop.onStop = () => end(false);
    body.once('end', () => {
      ended = true;
    });
    // A body that breaks before the answer is whole cuts the client's answer; one destroyed after the answer was
    // ended here (a stop) must not: the client's connection is whole and may carry its next request.
    body.on('error', () => {
      if (!raw.writableEnded) raw.destroy();
    });
    raw.once('close', () => {
      clearTimeout(timer);
      stop.onStop = undefined;
      if (!body.destroyed) body.destroy();
      // A session whose answer did not end cleanly is not reused: its connection may still carry the rest.
      passed.release(!ended);
      resolve(passThroughOutcome(raw.writableFinished, passed.status, undefined));
    });
    body.pipe(raw);
  });
}
