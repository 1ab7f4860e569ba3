/**
 * Test stacks: a real legacy fixture server and a real gateway, both listening on loopback port 0.
 * Not a test file (tap runs only *.test.ts).
 */
import type { Gateway } from '../../src/app.js';
import { startLegacyFixture, type LegacyFixture, type LegacyFixtureOptions } from '../fixtures/legacy-server.js';
import { startGateway, type RunningGateway } from './gateway.js';

/** A running fixture + gateway. */
export interface Stack {
  fixture: LegacyFixture;
  gateway: Gateway;
  /** The gateway's MCP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a legacy fixture and a gateway in front of it; `config` is merged into the gateway config, `upstream`
 * into its one upstream entry (e.g. `{ tools: {…} }`), `fixtureOptions` go to the fixture (e.g. `{ tasks: 'sync' }`).
 */
export async function startStack(
  config: Record<string, unknown> = {},
  upstream: Record<string, unknown> = {},
  fixtureOptions: LegacyFixtureOptions = {},
): Promise<Stack> {
  const fixture = await startLegacyFixture(fixtureOptions);
  let running: RunningGateway;
  try {
    running = await startGateway({ ...config, upstreams: [{ name: 'fixture', path: '/mcp', url: fixture.url, ...upstream }] });
  } catch (e) {
    // A refused configuration must not leave the fixture listening: the test file would never end.
    await fixture.close();
    throw e;
  }
  const { gateway, url } = running;
  return {
    fixture,
    gateway,
    url,
    async close() {
      await gateway.close();
      await fixture.close();
    },
  };
}
