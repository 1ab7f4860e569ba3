/**
 * The parts of a task-runtime unit test harness (not a test file): a TaskRuntime over a memory store and an MRTR
 * bridge, closed at teardown, and a route over an upstream (a FakeUpstream or a real client).
 */
import { MemoryTaskStore } from '../../src/store/index.js';
import { MrtrBridge, TaskRuntime, type TaskPolicy, type UpstreamRoute } from '../../src/tasks/index.js';
import { globToRegExp } from '../../src/translate/index.js';
import type { UpstreamClient } from '../../src/upstream/index.js';

/**
 * A TaskRuntime whose polls and sweeps are far away, so every change a test sees is one the test itself causes;
 * runtime, bridge and store are closed when `t` ends.
 */
export function quietRuntime(
  t: { teardown(fn: () => unknown): void },
  opts: { maxTasks: number; maxActivePerPrincipal?: number },
): { runtime: TaskRuntime; bridge: MrtrBridge; store: MemoryTaskStore } {
  const store = new MemoryTaskStore({ maxTasks: opts.maxTasks });
  const bridge = new MrtrBridge({ stateKey: new Uint8Array(32).fill(7), holdMs: 60_000, maxHeld: 10, gatherMs: 5 });
  const runtime = new TaskRuntime({
    store,
    bridge,
    defaultTtlMs: 60_000,
    maxTtlMs: 3_600_000,
    defaultPollIntervalMs: 600_000,
    maxActivePerPrincipal: opts.maxActivePerPrincipal ?? 10,
    toolSupportTtlMs: 600_000,
  });
  t.teardown(async () => {
    bridge.close();
    runtime.close();
    await store.close();
  });
  return { runtime, bridge, store };
}

/**
 * A route over `upstream` with these tool rules (pattern → rule, first match wins) and no response cache. `at` is
 * where the route says the upstream is and its call budget (the runtime's windows depend on `timeoutMs`).
 */
export function routeOver(
  upstream: UpstreamClient,
  tools: Record<string, TaskPolicy> = {},
  at: { url: string; timeoutMs: number } = { url: 'http://upstream.invalid/mcp', timeoutMs: 10_000 },
): UpstreamRoute {
  return {
    name: upstream.name,
    url: at.url,
    staticHeaders: {},
    timeoutMs: at.timeoutMs,
    cache: { ttlMs: 0, scope: 'private' },
    upstream,
    rules: Object.entries(tools).map(([pattern, rule]) => [globToRegExp(pattern), rule] as const),
  };
}
