/**
 * A Fastify app that serves only the legacy face in front of a given `UpstreamClient`, on loopback port 0, and an
 * SDK 1.32.2 legacy client factory. Not a test file.
 */
import Fastify from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { LegacyFace, type LegacyFaceOptions } from '../../src/proxy/legacy-face/face.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { MrtrBridge, TaskRuntime, type TaskPolicy, type UpstreamRoute } from '../../src/tasks/index.js';
import type { UpstreamClient } from '../../src/upstream/index.js';
import { listenLocal } from './gateway.js';
import { routeOver } from './runtime-harness.js';

/** Re-exported: face tests built routes with it from here. */
export { routeOver };

/** A running face. */
export interface FaceStack {
  face: LegacyFace;
  runtime: TaskRuntime;
  route: UpstreamRoute;
  url: string;
  close(): Promise<void>;
}

/** Starts the face in front of `upstream`, with a runtime of its own; `tools` are the route's rules. */
export async function startFace(upstream: UpstreamClient, opts: LegacyFaceOptions = {}, tools: Record<string, TaskPolicy> = {}): Promise<FaceStack> {
  const bridge = new MrtrBridge({ stateKey: randomBytes(32), holdMs: 60_000, maxHeld: 100, gatherMs: 25 });
  // The store keeps the face's sessions on the face's clock (a test's own clock moves both); offset by one because
  // lru-cache reads an entry stored at time 0 as one without a TTL, and test clocks start at 0.
  const clock = opts.now;
  const store = new MemoryTaskStore({ maxTasks: 1000, ...(clock ? { now: () => clock() + 1 } : {}) });
  const runtime = new TaskRuntime({
    store,
    bridge,
    defaultTtlMs: 60_000,
    maxTtlMs: 600_000,
    defaultPollIntervalMs: 100,
    maxActivePerPrincipal: 50,
    toolSupportTtlMs: 60_000,
  });
  const route = routeOver(upstream, tools);
  const face = new LegacyFace({ runtime, routeFor: async () => route, routeOf: (era) => (era === route.upstream.era ? route : undefined) }, { store, ...opts });
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.post('/mcp', (req, reply) => face.post(req, reply));
  app.get('/mcp', (req, reply) => face.get(req, reply));
  app.delete('/mcp', (req, reply) => face.delete(req, reply));
  const { url } = await listenLocal(app);
  return {
    face,
    runtime,
    route,
    url,
    async close() {
      face.close();
      await app.close();
      bridge.close();
      runtime.close();
      await store.close();
    },
  };
}

/** Connects an SDK 1.32.2 client declaring `capabilities`. */
export async function legacyClient(
  url: string,
  capabilities: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'legacy-test-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

/**
 * Connects an SDK 1.32.2 client (as `legacyClient`) that the test closes at teardown; a GET stream the face ends is
 * not an error the tests assert on.
 */
export async function connectFace(
  t: { teardown(fn: () => unknown): void },
  url: string,
  capabilities: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const c = await legacyClient(url, capabilities, headers);
  c.client.onerror = () => {};
  t.teardown(() => c.client.close());
  return c;
}

/** Headers of a raw 2025-11-25 POST, for what the SDK client does not let a test do. */
export const LEGACY_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** Initializes a session on the raw wire; its id. */
export async function rawInitialize(url: string, capabilities: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: LEGACY_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await res.body?.cancel();
  return res.headers.get('mcp-session-id') as string;
}
