/**
 * The MCP endpoint of one upstream, for both eras on one URL (translation.md §3.1). Modern requests in front of
 * a legacy upstream are translated; traffic whose era matches the upstream's passes through unchanged
 * (sessions, GET streams and DELETE included) with @fastify/reply-from.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import replyFrom from '@fastify/reply-from';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ErrorCode,
  classifyEra,
  discoverResult,
  isObject,
  legacySupportsToolTasks,
  requestIdOf,
  singleHeader,
  validateModernRequest,
  type JsonRpcNotification,
  type Era,
  type ModernHeaders,
  type ModernRequest,
} from '../translate/index.js';
import { runListen, wrapsTools, type CallerContext, type MrtrBridge, type TaskRuntime, type UpstreamRoute } from '../tasks/index.js';
import { probeEra } from '../upstream/index.js';
import { exceptionToEdge, failureToEdge, upstreamErrorStatus } from './errors.js';
import type { LegacyFace } from './legacy-face.js';
import { principalOf } from './principal.js';
import { ResponseChannel } from './response.js';

/** What the endpoint needs. */
export interface EndpointOptions {
  route: UpstreamRoute;
  path: string;
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  keepAliveMs: number;
  maxListenStreams: number;
  /** Serves legacy clients when the upstream speaks 2026-07-28 only (absent: they are refused). */
  legacyFace?: LegacyFace;
}

function header(req: FastifyRequest, name: string): string | undefined | null {
  return singleHeader(req.headers, name);
}

/** Registers the endpoint's routes in an encapsulated scope. */
export async function registerMcpEndpoint(app: FastifyInstance, opts: EndpointOptions): Promise<void> {
  const { route, bridge, runtime } = opts;
  const upstreamUrl = new URL(route.url);
  let era: Promise<Era> | undefined;
  let listenStreams = 0;

  // The upstream's era is probed once and cached; a failed probe is retried by the next request.
  const upstreamEra = (): Promise<Era> => {
    if (!era) {
      era = probeEra(route.url, route.staticHeaders, Math.min(route.timeoutMs, 30_000));
      era.catch(() => {
        era = undefined;
      });
    }
    return era;
  };

  await app.register(async (scope) => {
    await scope.register(replyFrom, {
      base: upstreamUrl.origin,
      undici: { connections: 128, pipelining: 1, bodyTimeout: 0, headersTimeout: route.timeoutMs },
    });

    const passThrough = (request: FastifyRequest, reply: FastifyReply) => {
      const started = Date.now();
      reply.raw.once('finish', () => {
        request.log.info({ method: request.method === 'POST' && isObject(request.body) ? request.body.method ?? 'response' : request.method, era: 'pass-through', upstream: route.name, status: reply.statusCode, ms: Date.now() - started }, 'mcp request');
      });
      return reply.from(upstreamUrl.pathname + upstreamUrl.search, {
        rewriteRequestHeaders: (_req, headers) => {
          const out: Record<string, string | string[] | undefined> = { ...headers, ...route.staticHeaders, host: upstreamUrl.host };
          // The client's Origin belongs to the gateway's origin check, not to the upstream's.
          delete out.origin;
          return out;
        },
        onResponse: (_req, rep, res) => {
          // An SSE answer (a GET stream, a POST stream) may stay silent for a long time: send its headers now, not
          // with the first body byte (Fastify sets stream headers lazily, and Node sends them with the first write).
          if (!String(rep.getHeader('content-type') ?? '').startsWith('text/event-stream')) return rep.send(res.stream);
          rep.hijack();
          rep.raw.writeHead(rep.statusCode, rep.getHeaders() as OutgoingHttpHeaders);
          (rep.raw as ServerResponse).flushHeaders();
          pipeline(res.stream, rep.raw, () => {});
          return rep;
        },
      });
    };

    const unavailable = (reply: FastifyReply, e: unknown, body?: unknown) => {
      const edge = exceptionToEdge(e);
      reply.log.warn({ err: e, upstream: route.name }, 'upstream era probe failed');
      return reply.code(edge.status).send({ jsonrpc: '2.0', id: requestIdOf(body), error: edge.error });
    };

    scope.route({
      method: ['GET', 'DELETE'],
      url: opts.path,
      handler: async (request, reply) => {
        let upstream: Era;
        try {
          upstream = await upstreamEra();
        } catch (e) {
          return unavailable(reply, e);
        }
        // H2: GET and DELETE are gone in the modern era; a modern upstream would answer 405 itself.
        if (upstream === 'legacy') return passThrough(request, reply);
        if (opts.legacyFace) return request.method === 'GET' ? opts.legacyFace.get(request, reply) : opts.legacyFace.delete(request, reply);
        return reply.code(405).header('allow', 'POST').send();
      },
    });

    scope.post(opts.path, async (request, reply) => {
      const clientEra = classifyEra({
        httpMethod: 'POST',
        protocolVersionHeader: header(request, 'mcp-protocol-version') ?? undefined,
        body: request.body,
      });
      let upstream: Era;
      try {
        upstream = await upstreamEra();
      } catch (e) {
        return unavailable(reply, e, request.body);
      }
      if (clientEra === upstream) return passThrough(request, reply);
      if (clientEra === 'legacy') {
        if (opts.legacyFace) return opts.legacyFace.post(request, reply);
        // Legacy clients in front of modern upstreams arrive with a later issue.
        return reply.code(400).send({
          jsonrpc: '2.0',
          id: requestIdOf(request.body),
          error: { code: ErrorCode.InvalidRequest, message: 'This upstream speaks MCP 2026-07-28 only; 2025-11-25 clients are not bridged to it yet' },
        });
      }
      return handleModern(request, reply);
    });

    async function handleModern(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
      const headers: ModernHeaders = {
        'mcp-protocol-version': header(request, 'mcp-protocol-version'),
        'mcp-method': header(request, 'mcp-method'),
        'mcp-name': header(request, 'mcp-name'),
      };
      const v = validateModernRequest(headers, request.body);
      if (!v.ok) {
        const edge = failureToEdge(v.failure);
        return reply.code(edge.status).send({ jsonrpc: '2.0', id: v.failure.id, error: edge.error });
      }
      const req = v.value;
      // H2: a notification is accepted with 202; the core defines none a modern client sends over HTTP.
      if (req.id === undefined) return reply.code(202).send();

      const authorization = header(request, 'authorization') ?? undefined;
      const caller: CallerContext = {
        principal: principalOf(authorization),
        capabilities: req.envelope.clientCapabilities,
        ...(authorization ? { authorization } : {}),
        ...(req.envelope.clientInfo ? { clientInfo: req.envelope.clientInfo } : {}),
        ...(req.envelope.logLevel ? { logLevel: req.envelope.logLevel } : {}),
      };
      const accept = header(request, 'accept') ?? '';
      const channel = new ResponseChannel(reply, accept.includes('text/event-stream') || accept.includes('*/*'), opts.keepAliveMs);
      const aborter = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
      };
      reply.raw.on('close', onClose);
      const started = Date.now();
      let outcome = 'ok';
      let taskId = typeof req.params.taskId === 'string' ? req.params.taskId : undefined;
      try {
        const done = await dispatch(req, caller, channel, aborter.signal);
        outcome = done.outcome;
        taskId ??= done.taskId;
      } catch (e) {
        const edge = exceptionToEdge(e);
        outcome = `error ${edge.error.code}`;
        if (edge.fault) request.log.error({ err: e, method: req.method, upstream: route.name }, 'request failed');
        if (aborter.signal.aborted) channel.abandon();
        else channel.error(req.id, edge.error, edge.status);
      } finally {
        reply.raw.off('close', onClose);
        if (aborter.signal.aborted) outcome = 'client closed';
        request.log.info({ method: req.method, era: 'modern', upstream: route.name, ...(taskId ? { taskId } : {}), outcome, ms: Date.now() - started }, 'mcp request');
      }
      return reply;
    }

    /** Serves one validated request; returns what the operator log says about it. */
    async function dispatch(req: ModernRequest, caller: CallerContext, channel: ResponseChannel, signal: AbortSignal): Promise<{ outcome: string; taskId?: string }> {
      const id = req.id as string | number;
      switch (req.policy.kind) {
        case 'discover': {
          const identity = await route.upstream.identity(caller, signal);
          // The extension is advertised when the upstream runs tool tasks or the gateway wraps tools (§4.1).
          const tasksExtension = legacySupportsToolTasks(identity.capabilities) || wrapsTools(route);
          channel.result(id, discoverResult(identity, { tasksExtension, cache: route.cache }));
          return { outcome: 'ok' };
        }
        case 'forward':
        case 'forward-input': {
          const hooks = { signal, notify: (n: JsonRpcNotification) => channel.notify(n) };
          const outcome = req.method === 'tools/call'
            ? await runtime.callTool(route, req, caller, hooks)
            : await bridge.forward(route, req, caller, hooks);
          if (outcome.kind === 'error') {
            channel.error(id, outcome.error, upstreamErrorStatus(outcome.error));
            return { outcome: `upstream error ${outcome.error.code}` };
          }
          channel.result(id, outcome.result);
          const created = outcome.result.resultType === 'task' && typeof outcome.result.taskId === 'string' ? { taskId: outcome.result.taskId } : {};
          return { outcome: String(outcome.result.resultType ?? 'complete'), ...created };
        }
        case 'listen': {
          if (listenStreams >= opts.maxListenStreams) {
            channel.error(id, { code: ErrorCode.InternalError, message: 'Too many open subscriptions; try again later' }, 503);
            return { outcome: 'refused: too many subscriptions' };
          }
          listenStreams++;
          try {
            // The acknowledgement starts the stream (ResponseChannel.notify); refusals before it keep their HTTP status.
            const closing = await runListen(route, req, caller, { signal, send: (n) => channel.notify(n), tasks: runtime });
            if (signal.aborted) channel.abandon();
            else channel.result(id, closing);
          } finally {
            listenStreams--;
          }
          return { outcome: 'subscription ended' };
        }
        case 'tasks': {
          const result = req.method === 'tasks/get'
            ? await runtime.get(route, req, caller)
            : req.method === 'tasks/update'
              ? await runtime.update(route, req, caller)
              : await runtime.cancel(route, req, caller);
          channel.result(id, result);
          return { outcome: typeof result.status === 'string' ? result.status : 'ok' };
        }
        case 'removed':
          // validateModernRequest already refused these; kept for exhaustiveness.
          channel.error(id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${req.method}` }, 404);
          return { outcome: 'method not found' };
      }
    }
  });
}
