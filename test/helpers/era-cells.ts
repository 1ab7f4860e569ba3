/**
 * One cell of the era matrix (not a test file): an upstream fixture of one era, running its task tools natively
 * or as plain synchronous tools, and one real gateway in front of it with two routes: `/mcp` (ordinary retention)
 * and `/short` (every task's retention capped at `SHORT_RETENTION_MS`, so that the expiry scenario sees a task
 * disappear). All on loopback port 0.
 */
import type { Gateway } from '../../src/app.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway as startListening } from './gateway.js';

/** Which era the upstream fixture speaks: 2025-11-25 only, 2026-07-28 only, or both on one endpoint. */
export type UpstreamEra = 'legacy' | 'modern' | 'dual';

/** `native`: the fixture runs its task tools as its own tasks; `wrapped`: sync tools the gateway's rules wrap. */
export type TaskKind = 'native' | 'wrapped';

/** Retention cap on the `/short` route (and the ttl a legacy client asks for there). */
export const SHORT_RETENTION_MS = 500;

/** pollInterval of the fixture's own tasks and of the gateway's, so that clients poll fast. */
export const POLL_MS = 50;

/** A running cell: the fixture and the gateway, with the gateway's two client-facing URLs. */
export interface Cell {
  /** The gateway route with ordinary retention. */
  url: string;
  /** The gateway route whose tasks expire after `SHORT_RETENTION_MS`. */
  shortUrl: string;
  gateway: Gateway;
  close(): Promise<void>;
}

/**
 * The tool rules of a route. Wrapped cells wrap every tool into a gateway-owned task at once (`always`, README
 * "Wrapped tools"), so each scenario gets a task from a sync tool; native cells leave the upstream's own tasks
 * alone (`native`).
 */
export function cellRules(kind: TaskKind, extra: Record<string, unknown> = {}): Record<string, Record<string, unknown>> {
  return kind === 'wrapped' ? { '*': { task: 'always', pollIntervalMs: POLL_MS, ...extra } } : { '*': { task: 'native', ...extra } };
}

/** A running fixture. */
export interface Fixture {
  url: string;
  close(): Promise<void>;
}

/** Starts the fixture of `upstream`, its task tools `native` or sync (`wrapped`); `ttlMs` caps a modern fixture's task retention. */
export async function startFixture(upstream: UpstreamEra, kind: TaskKind, ttlMs?: number): Promise<Fixture> {
  const tasks = kind === 'native' ? 'native' : 'sync';
  const timing = { taskPollIntervalMs: POLL_MS, taskJobDelayMs: 100 };
  if (upstream === 'legacy') return startLegacyFixture({ tasks, ...timing });
  return startModernFixture({ mode: upstream, tasks, ...timing, ...(ttlMs !== undefined && { taskTtlMs: ttlMs }) });
}

/** Starts a gateway (fast task polling) with `upstreams` on loopback port 0; `base` is its http://host:port. */
export async function startGateway(upstreams: Array<Record<string, unknown>>): Promise<{ gateway: Gateway; base: string }> {
  const { gateway, origin } = await startListening({ tasks: { pollIntervalMs: POLL_MS }, upstreams });
  return { gateway, base: origin };
}

/**
 * Starts the fixture for `upstream`/`kind` and a gateway with the `/mcp` and `/short` routes. The legacy fixture
 * keeps each task for the `ttl` its client asks for, so `/short` reaches the same fixture; a modern client asks
 * for no retention (tasks extension §Task Creation: the receiver sets `ttlMs`), so behind `/short` runs a second
 * modern fixture whose tasks live `SHORT_RETENTION_MS`.
 */
export async function startCell(upstream: UpstreamEra, kind: TaskKind): Promise<Cell> {
  const fixture = await startFixture(upstream, kind);
  let short: Fixture | undefined;
  try {
    if (upstream !== 'legacy') short = await startFixture(upstream, kind, SHORT_RETENTION_MS);
    const { gateway, base } = await startGateway([
      { name: 'main', path: '/mcp', url: fixture.url, tools: cellRules(kind) },
      { name: 'short', path: '/short', url: (short ?? fixture).url, tools: cellRules(kind, { maxTtlMs: SHORT_RETENTION_MS }) },
    ]);
    return {
      url: `${base}/mcp`,
      shortUrl: `${base}/short`,
      gateway,
      async close() {
        await gateway.close();
        await short?.close();
        await fixture.close();
      },
    };
  } catch (e) {
    await short?.close();
    await fixture.close();
    throw e;
  }
}
