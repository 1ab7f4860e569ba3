/**
 * A gateway listening on loopback port 0, its address read back (not a test file): the one way tests, benchmarks and
 * scripts start a gateway's HTTP side. `listenLocal` does the same for a bare Fastify app (a face without the rest).
 */
import type { FastifyInstance } from 'fastify';
import { buildGateway, type Gateway, type GatewayDeps } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** An app listening on 127.0.0.1. */
export interface Listening {
  port: number;
  /** http://127.0.0.1:PORT */
  origin: string;
  /** The MCP endpoint at `/mcp`: http://127.0.0.1:PORT/mcp */
  url: string;
  close(): Promise<void>;
}

/** A gateway listening on 127.0.0.1; `close` is the gateway's own, ordered and idempotent. */
export interface RunningGateway extends Listening {
  gateway: Gateway;
}

/** Options of `startGateway`. */
export interface StartOptions {
  /** Given to `buildGateway` (a logger, a store, a state key…); without a logger the gateway logs nothing. */
  deps?: GatewayDeps;
  /** Closes the gateway at `t`'s teardown, registered as soon as it is built (so a failed listen closes it too). */
  t?: Teardown;
}

/** Listens `app` on 127.0.0.1, port 0; its address. `close` closes the app. */
export async function listenLocal(app: FastifyInstance): Promise<Listening> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const origin = `http://127.0.0.1:${port}`;
  return { port, origin, url: `${origin}/mcp`, close: () => app.close() };
}

/**
 * Starts a gateway on 127.0.0.1, port 0: `from` is either a configuration as a file has it (parsed here, its
 * `server.port` 0 unless it says otherwise) or a gateway already built. A gateway whose listen fails is closed.
 */
export async function startGateway(from: Record<string, unknown> | Gateway, opts: StartOptions = {}): Promise<RunningGateway> {
  const gateway = isGateway(from)
    ? from
    : await buildGateway(parseConfig({ ...from, server: { port: 0, ...((from.server as object | undefined) ?? {}) } }), opts.deps);
  opts.t?.teardown(() => gateway.close());
  try {
    const listening = await listenLocal(gateway.app);
    return { ...listening, gateway, close: () => gateway.close() };
  } catch (e) {
    await gateway.close();
    throw e;
  }
}

function isGateway(from: Record<string, unknown> | Gateway): from is Gateway {
  return typeof from.close === 'function' && typeof from.app === 'object' && from.app !== null;
}
