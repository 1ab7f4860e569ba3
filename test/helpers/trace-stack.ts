/**
 * Gateways for the trace tests (not a test file): a real fixture upstream (legacy or modern) behind a recording relay,
 * so that a test reads the `traceparent`/`tracestate` headers and `params._meta` each upstream request carried, and a
 * raw legacy (2025-11-25) client whose headers the test controls.
 */
import { Writable } from 'node:stream';
import type { Gateway } from '../../src/app.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture, type ModernFixtureMode } from '../fixtures/modern-server.js';
import { startGateway } from './gateway.js';
import { readReply, type RawReply } from './modern.js';
import { startRelay, within, type Seen } from './relay.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A gateway in front of a relayed fixture. */
export interface TraceStack {
  url: string;
  gateway: Gateway;
  /** Resolves with the first upstream request `p` matches (bounded: rejects after 5 s). */
  upstreamRequest(p: (s: Seen) => boolean): Promise<Seen>;
  seen: Seen[];
}

/**
 * Starts a fixture (`legacy` with its task tools synchronous, `legacy-native` with 2025-11-25 tasks, or the modern
 * fixture in `modern`/`dual` mode), a relay and a gateway in front.
 */
export async function traceStack(
  t: Teardown,
  upstream: 'legacy' | 'legacy-native' | ModernFixtureMode,
  config: Record<string, unknown> = {},
  entry: Record<string, unknown> = {},
  logTo?: Writable,
): Promise<TraceStack> {
  const fixture =
    upstream === 'legacy' || upstream === 'legacy-native'
      ? await startLegacyFixture({ tasks: upstream === 'legacy' ? 'sync' : 'native', taskJobDelayMs: 0, taskPollIntervalMs: 50 })
      : await startModernFixture({ mode: upstream });
  t.teardown(() => fixture.close());
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const cfg = {
    ...config,
    tasks: { pollBurst: 1_000_000, ...((config.tasks as object | undefined) ?? {}) },
    upstreams: [{ name: 'fixture', path: '/mcp', url: relay.url, ...entry }],
  };
  const { url, gateway } = await startGateway(cfg, { t, deps: { logger: logTo ? { level: 'info', stream: logTo } : false } });
  return {
    url,
    gateway,
    seen: relay.seen,
    async upstreamRequest(p) {
      const hit = await within(relay.waitFor(p), 5_000);
      if (!hit) throw new Error('the upstream never saw the expected request');
      return hit;
    },
  };
}

/**
 * A raw 2025-11-25 client: `initialize` declaring `capabilities` (+ `notifications/initialized`), then requests with
 * headers of its choice; each reply with its HTTP headers.
 */
export async function legacySession(
  url: string,
  capabilities: Record<string, unknown> = {},
): Promise<{ request(method: string, params: Record<string, unknown>, headers?: Record<string, string>): Promise<RawReply & { headers: Headers }> }> {
  let id = 1;
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, {
    method: 'POST',
    headers: base,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: id++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'trace-test', version: '1.0.0' } },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await readReply(init);
  if (!sessionId) throw new Error('no session id from initialize');
  const session = { ...base, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return {
    async request(method, params, headers = {}) {
      const res = await fetch(url, { method: 'POST', headers: { ...session, ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) });
      return { ...(await readReply(res)), headers: res.headers };
    },
  };
}

/** An operator log kept in memory: its lines parsed, and the raw text (to check what never appears in it). */
export function memoryLog(): { stream: Writable; lines: Array<Record<string, unknown>>; text(): string } {
  const raw: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const text of String(chunk).split('\n')) {
        if (!text.trim()) continue;
        raw.push(text);
        lines.push(JSON.parse(text) as Record<string, unknown>);
      }
      done();
    },
  });
  return { stream, lines, text: () => raw.join('\n') };
}
