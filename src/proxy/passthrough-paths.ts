/**
 * Non-MCP paths passed through to an upstream with @fastify/http-proxy: its OAuth discovery documents (RFC 9728
 * protected-resource metadata, RFC 8414 authorization-server metadata, OpenID Connect discovery) and the paths the
 * operator lists (`upstreams[].passthrough.paths`, e.g. an authorization server's token endpoint). A client meets the
 * upstream's authorization as if it spoke to the upstream (2025-11-25 basic/authorization §Authorization Server
 * Discovery): request headers go on as http-proxy sends them (Authorization included, Host rewritten, hop-by-hop
 * headers dropped), and the answer comes back as the upstream gave it, status, headers and body, a 404 included.
 * The gateway's host check applies first; its own authentication does not (discovery happens before a client holds
 * a token).
 */
import httpProxy from '@fastify/http-proxy';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { OAUTH_WELL_KNOWN } from '../translate/index.js';
import { UpstreamTimeoutError, UpstreamUnavailableError } from '../upstream/index.js';
import { exceptionToEdge } from './errors.js';
import { infoEnabled } from './operator-log.js';

/** One HTTP upstream's non-MCP paths, as the composition root reads them from its configuration. */
export interface PassthroughUpstream {
  name: string;
  /** Where the gateway mounts its MCP endpoint (maps the path-suffixed documents). */
  mountPath: string;
  /** The upstream's MCP URL: its origin receives the passed requests, its path is the upstream's side of the map. */
  url: string;
  /** Bound on the upstream's answer (its headers, then each pause in its body). */
  timeoutMs: number;
  /** Extra paths passed on unchanged: exact, or a prefix ending in `/*` (the prefix and everything under it). */
  paths: readonly string[];
  /** Whether the root well-known documents go to this upstream (one upstream at most; see the config check). */
  wellKnownRoot: boolean;
}

/** One route: a gateway path (or prefix) and the upstream path it goes to. */
export interface PassthroughRoute {
  from: string;
  to: string;
  prefix: boolean;
}

/** A path without its trailing slash (`/` becomes empty: the root's documents are the bare well-known ones). */
function trimmed(path: string): string {
  return path.replace(/\/+$/, '');
}

/**
 * The routes of one upstream. The path-suffixed well-known documents map the gateway's mount path onto the upstream
 * URL's path (RFC 9728 §3.1 and RFC 8414 §3.1 insert the resource's or issuer's path after the well-known name; OpenID
 * Connect Discovery appends its name to the issuer): an upstream mounted at `/a` whose URL path is `/mcp` serves
 * the gateway's `/.well-known/oauth-protected-resource/a` from its `/.well-known/oauth-protected-resource/mcp`. The
 * root documents go to the root ones; configured paths go to the same path on the upstream's origin.
 */
function passthroughRoutes(u: PassthroughUpstream): PassthroughRoute[] {
  const mount = trimmed(u.mountPath);
  const upstreamPath = trimmed(new URL(u.url).pathname);
  const routes: PassthroughRoute[] = [];
  if (mount !== '') {
    for (const wk of OAUTH_WELL_KNOWN) routes.push({ from: `${wk}${mount}`, to: `${wk}${upstreamPath}`, prefix: false });
    routes.push({ from: `${mount}/.well-known/openid-configuration`, to: `${upstreamPath}/.well-known/openid-configuration`, prefix: false });
  }
  if (u.wellKnownRoot) for (const wk of OAUTH_WELL_KNOWN) routes.push({ from: wk, to: wk, prefix: false });
  for (const p of u.paths) {
    const prefix = p.endsWith('/*');
    const path = prefix ? p.slice(0, -2) : p;
    routes.push({ from: path, to: path, prefix });
  }
  return routes;
}

/** A failed pass-through as the client gets it: the catalog's JSON error, never an empty or HTML 500. */
function upstreamFailed(reply: FastifyReply, name: string, error: unknown): void {
  const why = error as { statusCode?: number; code?: string; cause?: { code?: unknown } };
  // The socket's own code (ECONNREFUSED, …) says more than reply-from's wrapper; never the upstream's address.
  const code = typeof why.cause?.code === 'string' ? why.cause.code : why.code;
  const e =
    why.statusCode === 504
      ? new UpstreamTimeoutError('upstream did not answer in time', { cause: error })
      : new UpstreamUnavailableError(`upstream ${name} did not answer${code ? ` (${code})` : ''}`, { cause: error });
  reply.log.warn({ upstream: name, err: error }, 'pass-through path: upstream failed');
  const edge = exceptionToEdge(e);
  void reply
    .code(edge.status)
    .type('application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', id: null, error: edge.error }));
}

/** Registers every pass-through route of `upstreams` (each in its own scope: its own proxy and connection pool). */
export async function registerPassthroughPaths(
  app: FastifyInstance,
  upstreams: readonly PassthroughUpstream[],
  opts: { bodyLimitBytes: number },
): Promise<void> {
  for (const u of upstreams) {
    const origin = new URL(u.url).origin;
    const host = new URL(u.url).host;
    for (const route of passthroughRoutes(u)) {
      await app.register(async (scope) => {
        // Bodies pass as the bytes that arrived (a form-encoded token request, JSON, anything), held to the gateway's
        // body limit; never parsed and serialized again.
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.bodyLimitBytes }, (_req, body, done) => done(null, body));
        // One operator line per request, as for MCP traffic: the route (never the request's own path or query, which
        // may carry an authorization code), the upstream, the status and the duration.
        scope.addHook('onResponse', (request, reply, done) => {
          if (infoEnabled(request)) {
            request.log.info(
              {
                method: request.method,
                route: route.prefix ? `${route.from}/*` : route.from,
                upstream: u.name,
                status: reply.statusCode,
                ms: Math.round(reply.elapsedTime),
              },
              'passed-through request',
            );
          }
          done();
        });
        await scope.register(httpProxy, {
          upstream: origin,
          prefix: route.from,
          rewritePrefix: route.to,
          routes: route.prefix ? ['/', '/*'] : ['/'],
          proxyPayloads: false,
          // A Location the upstream sends is its own business (an authorization redirect names the upstream's URLs).
          internalRewriteLocationHeader: false,
          // One operator log line per request (the one above), not reply-from's two more.
          disableRequestLogging: true,
          undici: { connections: 16, headersTimeout: u.timeoutMs, bodyTimeout: u.timeoutMs },
          handler: (request, reply, dest, options) => {
            const body = request.body;
            const bytes = Buffer.isBuffer(body) && body.length > 0 ? body : undefined;
            return reply.from(
              dest,
              bytes ? { ...options, body: bytes, contentType: String(request.headers['content-type'] ?? 'application/octet-stream') } : options,
            );
          },
          replyOptions: {
            rewriteRequestHeaders: (_request, headers) => {
              const out = { ...headers, host };
              // The client's Origin belongs to the gateway's origin check, not to the upstream's (as on the MCP path).
              delete out.origin;
              return out;
            },
            onError: (reply, { error }) => upstreamFailed(reply as FastifyReply, u.name, error),
          },
        });
      });
    }
  }
}
