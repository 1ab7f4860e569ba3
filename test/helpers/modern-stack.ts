/**
 * Test stacks in front of the modern fixture (test/fixtures/modern-server.ts, mode `modern` or `dual`): the real
 * gateway from `buildGateway(parseConfig(…))` with the era probe left on `auto`, both on loopback port 0, plus an
 * SDK 1.32.2 legacy client factory that reports when its GET stream is open. Not a test file.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Gateway } from '../../src/app.js';
import { startModernFixture, type ModernFixture, type ModernFixtureMode, type ModernFixtureOptions } from '../fixtures/modern-server.js';
import { startGateway } from './gateway.js';

/** A running modern fixture + gateway. */
export interface ModernStack {
  fixture: ModernFixture;
  gateway: Gateway;
  /** The gateway's MCP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  /** The gateway's /healthz body. */
  health(): Promise<HealthBody>;
  close(): Promise<void>;
}

/** What /healthz says about one upstream (the fields these tests read). */
export interface UpstreamHealth {
  name: string;
  clientSessions: number;
  state: string;
  modern?: boolean;
  legacy?: boolean;
}

/** The /healthz body (the fields these tests read). */
export interface HealthBody {
  status: string;
  upstreams: UpstreamHealth[];
}

/**
 * Starts a modern fixture in `mode` and a gateway in front of it; `config` is merged into the gateway config,
 * `fixtureOptions` go to the fixture (e.g. `{ jsonLines: true }`), `upstream` into its one upstream entry (e.g.
 * `{ tools: {…} }`).
 */
export async function startModernStack(
  mode: ModernFixtureMode,
  config: Record<string, unknown> = {},
  fixtureOptions: Omit<ModernFixtureOptions, 'mode'> = {},
  upstream: Record<string, unknown> = {},
): Promise<ModernStack> {
  const fixture = await startModernFixture({ ...fixtureOptions, mode });
  const { gateway, url, origin } = await startGateway({
    ...config,
    upstreams: [{ name: 'fixture', path: '/mcp', url: fixture.url, ...upstream }],
  });
  return {
    fixture,
    gateway,
    url,
    async health() {
      return (await (await fetch(`${origin}/healthz`)).json()) as HealthBody;
    },
    async close() {
      await gateway.close();
      await fixture.close();
    },
  };
}

/** A connected SDK 1.32.2 client; `getStreamOpen` resolves once a GET stream of it was answered 200. */
export interface LegacyConnection {
  client: Client;
  transport: StreamableHTTPClientTransport;
  getStreamOpen: Promise<void>;
}

/** Connects an SDK 1.32.2 `Client` declaring `capabilities` to `url`. */
export async function connectLegacy(url: string, capabilities: Record<string, unknown> = {}, client?: Client): Promise<LegacyConnection> {
  let opened!: () => void;
  const getStreamOpen = new Promise<void>((resolve) => (opened = resolve));
  // The transport's GET stream opens in the background after `initialized`; watching its answer is the only way a
  // test knows that what the server sends from now on reaches the client.
  const watching: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && res.status === 200) opened();
    return res;
  };
  const c = client ?? new Client({ name: 'legacy-test-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: watching });
  await c.connect(transport);
  return { client: c, transport, getStreamOpen };
}
