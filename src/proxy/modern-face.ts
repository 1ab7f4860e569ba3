/**
 * The modern face: serves a 2026-07-28 request the gateway answers itself (translated for an upstream without that
 * era, or made the gateway's own by rules that wrap tools) — validated, run, answered and logged.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  GatewayError,
  discoverResult,
  declaresTasks,
  legacySupportsToolTasks,
  singleHeader,
  validateModernRequest,
  type JsonObject,
  type JsonRpcNotification,
  type ModernHeaders,
  type ModernRequest,
  Tally,
} from '../translate/index.js';
import {
  memberCall,
  onMember,
  runListen,
  wrapsTools,
  type CallerContext,
  type ForwardHooks,
  type MrtrBridge,
  type Outcome,
  type TaskRuntime,
  type UpstreamRoute,
} from '../tasks/index.js';
import { annotateTrace, UpstreamHttpError, UpstreamTimeoutError, UpstreamUnavailableError, type UpstreamAvailability } from '../upstream/index.js';
import { identityOf } from './auth.js';
import { channelError, exceptionToEdge, failureToEdge, upstreamErrorStatus } from './errors.js';
import { infoEnabled, recordRequest } from './operator-log.js';
import {
  clientClosed,
  errorOutcome,
  METHOD_NOT_FOUND,
  OK,
  outcomeText,
  resultOutcome,
  spanErrorCode,
  SUBSCRIPTION_ENDED,
  taskStatusOutcome,
  upstreamErrorOutcome,
  type RequestOutcome,
} from './request-outcome.js';
import { traceRequest } from './request-trace.js';
import { ResponseChannel, stopWhenClientLeaves } from './response.js';

/** What the modern face needs (the listen bounds are read at each listen: a reload may change them). */
export interface ModernFaceOptions {
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  /** Learns the upstream anew when a request says it may have changed (a federated endpoint's members learn it themselves). */
  availability: Pick<UpstreamAvailability, 'suspect'>;
  keepAliveMs: number;
  maxListenStreams: number;
  /** A principal's share of `maxListenStreams`. */
  maxListenStreamsPerPrincipal: number;
}

/** How one served request ended, and the task it created, if any. */
interface Served {
  outcome: RequestOutcome;
  taskId?: string;
}

/** Whether the upstream runs tool tasks itself: a modern one declares the tasks extension, a legacy one tool tasks. */
function upstreamRunsTasks(route: UpstreamRoute, capabilities: JsonObject): boolean {
  return route.upstream.era === 'modern' ? declaresTasks(capabilities) : legacySupportsToolTasks(capabilities);
}

/**
 * Runs one modern request that may need input: `tools/call` through the runtime (its rules decide what the call
 * becomes), the rest through the MRTR bridge. The same for a request that arrived here and one relayed from another
 * instance.
 */
export function runRequest(
  runtime: TaskRuntime,
  bridge: MrtrBridge,
  route: UpstreamRoute,
  req: ModernRequest,
  caller: CallerContext,
  hooks: ForwardHooks,
): Promise<Outcome> {
  // The runtime's own promise, not one more around it (a plain call's path).
  if (req.method === 'tools/call') return runtime.callTool(route, req, caller, hooks);
  const forwarded = bridge.forward(route, req, caller, hooks);
  if (req.method !== 'tools/list') return forwarded;
  // Job rules' plumbing tools are hidden and their start tools listed with their result tools' output schemas (docs/jobs.md).
  return forwarded.then(async (outcome) =>
    outcome.kind === 'result' ? { kind: 'result', result: await runtime.listTools(route, caller, outcome.result, hooks.signal) } : outcome,
  );
}

/** The request's 2026-07-28 routing headers, as the request's validation reads them. */
function modernHeadersOf(request: FastifyRequest): ModernHeaders {
  return {
    'mcp-protocol-version': singleHeader(request.headers, 'mcp-protocol-version'),
    'mcp-method': singleHeader(request.headers, 'mcp-method'),
    'mcp-name': singleHeader(request.headers, 'mcp-name'),
  };
}

/** The modern face of one endpoint, with the listen streams it holds open. */
export class ModernFace {
  /** `subscriptions/listen` streams open now. */
  listenStreams = 0;
  /** Open listen streams per principal (entries removed at zero: bounded by the streams open). */
  private readonly listensOf = new Tally();

  constructor(private readonly opts: ModernFaceOptions) {}

  /** Serves one modern request over `route`. */
  // biome-ignore lint/suspicious/noConfusingVoidType: fastify handlers answer with the reply or with nothing
  async handle(request: FastifyRequest, reply: FastifyReply, route: UpstreamRoute): Promise<FastifyReply | void> {
    const v = validateModernRequest(modernHeadersOf(request), request.body);
    const accept = singleHeader(request.headers, 'accept') ?? '';
    if (!v.ok) {
      const edge = failureToEdge(v.failure);
      // Through the response channel, as every later refusal: a refusal here (a requestState of the wrong type) is
      // byte for byte the refusal after it (a forged state), headers included.
      new ResponseChannel(reply, false, this.opts.keepAliveMs).error(v.failure.id, edge.error, edge.status);
      return reply;
    }
    const req = v.value;
    // 2026-07-28 basic/transports/streamable-http: a notification is accepted with 202; the core defines none a
    // modern client sends over HTTP.
    if (req.id === undefined) return reply.code(202).send();

    const traced = traceRequest(request, reply, 'modern-face', 'modern', route.name);
    const { principal, authorization, subject } = identityOf(request);
    // Assigned member by member: a spread of a conditional object per optional member costs an object each.
    const caller: CallerContext = { principal, capabilities: req.envelope.clientCapabilities };
    if (subject) caller.subject = subject;
    if (authorization) caller.authorization = authorization;
    if (req.envelope.clientInfo) caller.clientInfo = req.envelope.clientInfo;
    if (req.envelope.logLevel) caller.logLevel = req.envelope.logLevel;
    if (traced) caller.trace = traced.carrier;
    const channel = new ResponseChannel(reply, accept.includes('text/event-stream') || accept.includes('*/*'), this.opts.keepAliveMs);
    // Only what may outlive the client's patience (an upstream call, a listen stream) is stopped when it goes away;
    // requests the gateway answers from its own records skip the signal (creating one is costly on this path).
    const stoppable = req.policy.kind === 'forward' || req.policy.kind === 'forward-input' || req.policy.kind === 'listen';
    const aborter = stoppable ? new AbortController() : undefined;
    const unwatch = aborter ? stopWhenClientLeaves(reply, aborter) : undefined;
    const started = Date.now();
    let outcome: RequestOutcome = OK;
    let taskId = typeof req.params.taskId === 'string' ? req.params.taskId : undefined;
    try {
      const done = await this.dispatch(route, req, caller, channel, aborter?.signal);
      outcome = done.outcome;
      taskId ??= done.taskId;
      if (traced) annotateTrace(traced, { errorCode: spanErrorCode(outcome) });
    } catch (e) {
      const edge = exceptionToEdge(e);
      // An upstream that stopped answering, or refuses our era, may be down or replaced: learn it anew (at once;
      // a 4xx without a JSON-RPC body, such as a client's refused credentials, only at the spaced pace).
      // The upstream judging a caller's credentials (401/403) says nothing about the upstream.
      if (e instanceof UpstreamUnavailableError || e instanceof UpstreamTimeoutError) this.opts.availability.suspect(true);
      else if (e instanceof UpstreamHttpError && !e.refusedCredentials) this.opts.availability.suspect(e.status >= 500);
      outcome = errorOutcome(edge.error.code, e);
      if (traced) annotateTrace(traced, { errorCode: spanErrorCode(outcome), errorMessage: edge.error.message });
      if (edge.fault) request.log.error({ err: e, method: req.method, upstream: route.name }, 'request failed');
      if (aborter?.signal.aborted) channel.abandon();
      else {
        // The upstream's challenge goes on the reply before the channel ends it (Retry-After is the channel's).
        if (edge.challenge !== undefined) void reply.header('www-authenticate', edge.challenge);
        channel.error(req.id, edge.error, edge.status, edge.retryAfterSeconds);
      }
    } finally {
      unwatch?.();
      if (aborter?.signal.aborted) outcome = clientClosed(outcome.failure);
      if (traced && taskId) annotateTrace(traced, { taskId });
      if (infoEnabled(request)) {
        const line: Record<string, unknown> = { method: req.method, era: 'modern', upstream: route.name };
        if (taskId) line.taskId = taskId;
        line.outcome = outcomeText(outcome);
        line.ms = Date.now() - started;
        if (traced) line.traceId = traced.traceId;
        request.log.info(line, 'mcp request');
      }
      recordRequest(request, {
        upstream: route.name,
        method: req.method,
        clientEra: 'modern',
        upstreamEra: route.upstream.era,
        mode: 'gateway',
        outcome,
        ms: Date.now() - started,
      });
    }
    return reply;
  }

  /** Serves one validated request; returns how it ended. */
  private async dispatch(
    route: UpstreamRoute,
    req: ModernRequest,
    caller: CallerContext,
    channel: ResponseChannel,
    stopSignal: AbortSignal | undefined,
  ): Promise<Served> {
    const id = req.id as string | number;
    const { bridge, runtime } = this.opts;
    switch (req.policy.kind) {
      case 'discover': {
        const identity = await route.upstream.identity(caller);
        // The extension is advertised when the upstream runs tool tasks or the gateway wraps tools (docs/tasks.md).
        const tasksExtension = upstreamRunsTasks(route, identity.capabilities) || wrapsTools(route);
        channel.result(id, discoverResult(identity, { tasksExtension, cache: route.cache }));
        return { outcome: OK };
      }
      case 'forward':
      case 'forward-input': {
        const signal = stopSignal as AbortSignal;
        const hooks = { signal, notify: (n: JsonRpcNotification) => channel.notify(n) };
        // A federated endpoint's tool call is its member's, under the member's own name (docs/federation.md), from here
        // on: its held rounds and their states are the member route's wherever the retry lands.
        const on = route.federation && req.method === 'tools/call' ? await memberCall(route, req, caller, signal) : { route, req };
        // A retry whose held call another instance holds is answered there (2026-07-28 basic/patterns/mrtr). A request
        // that is neither a retry nor a federated member's runs at once (no closure or relay on the plain path).
        const outcome =
          on.route === route && !bridge.mayRelay(req)
            ? await runRequest(runtime, bridge, route, req, caller, hooks)
            : await onMember(
                route,
                on.route,
                async () => (await bridge.relay(on.route, on.req, caller, hooks)) ?? (await runRequest(runtime, bridge, on.route, on.req, caller, hooks)),
              );
        if (outcome.kind === 'error') {
          channel.error(id, outcome.error, upstreamErrorStatus(outcome.error));
          return { outcome: upstreamErrorOutcome(outcome.error.code) };
        }
        channel.result(id, outcome.result, outcome.text);
        const created = outcome.result.resultType === 'task' && typeof outcome.result.taskId === 'string' ? { taskId: outcome.result.taskId } : {};
        return { outcome: resultOutcome(outcome.result.resultType), ...created };
      }
      case 'listen':
        return this.listen(route, req, caller, channel, stopSignal as AbortSignal);
      case 'tasks': {
        const result =
          req.method === 'tasks/get'
            ? await runtime.get(route, req, caller)
            : req.method === 'tasks/update'
              ? await runtime.update(route, req, caller)
              : await runtime.cancel(route, req, caller);
        channel.result(id, result);
        return { outcome: taskStatusOutcome(result.status) };
      }
      case 'removed':
        // validateModernRequest already refused these; kept for exhaustiveness.
        channelError(channel, id, 'GW_METHOD_NOT_FOUND', { args: [req.method] });
        return { outcome: METHOD_NOT_FOUND };
    }
  }

  /** A `subscriptions/listen` stream, held within the endpoint's bound and the principal's share of it. */
  private async listen(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, channel: ResponseChannel, signal: AbortSignal): Promise<Served> {
    const id = req.id as string | number;
    // Both bounds are checked before anything reaches the upstream. The principal's share first: a caller at its
    // share is told so, and the others keep their streams (a legacy upstream's listen also holds an upstream
    // session, counted in that pool's bound and share).
    const mine = this.listensOf.of(caller.principal);
    if (mine >= this.opts.maxListenStreamsPerPrincipal) {
      throw new GatewayError('GW_PRINCIPAL_SHARE_EXHAUSTED', { args: ['open subscriptions', this.opts.maxListenStreamsPerPrincipal] });
    }
    if (this.listenStreams >= this.opts.maxListenStreams) {
      throw new GatewayError('GW_TOO_MANY_SUBSCRIPTIONS');
    }
    this.listenStreams++;
    this.listensOf.add(caller.principal);
    try {
      // The acknowledgement starts the stream (ResponseChannel.notify); refusals before it keep their HTTP status.
      const closing = await runListen(route, req, caller, { signal, send: (n) => channel.notify(n), tasks: this.opts.runtime });
      if (signal.aborted) channel.abandon();
      else channel.result(id, closing);
    } finally {
      this.listenStreams--;
      this.listensOf.remove(caller.principal);
    }
    return { outcome: SUBSCRIPTION_ENDED };
  }
}
