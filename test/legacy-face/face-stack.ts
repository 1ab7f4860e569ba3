/**
 * A Fastify app that serves only the legacy face in front of a given `UpstreamClient`, on loopback port 0, and an
 * SDK 1.32.2 legacy client factory. Not a test file.
 */
import Fastify from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LegacyFace, type LegacyFaceOptions } from '../../src/proxy/index.js';
import type { UpstreamClient } from '../../src/upstream/index.js';

/** A running face. */
export interface FaceStack {
  face: LegacyFace;
  url: string;
  close(): Promise<void>;
}

/** Starts the face in front of `upstream`. */
export async function startFace(upstream: UpstreamClient, opts: LegacyFaceOptions = {}): Promise<FaceStack> {
  const face = new LegacyFace(upstream, opts);
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.post('/mcp', (req, reply) => face.post(req, reply));
  app.get('/mcp', (req, reply) => face.get(req, reply));
  app.delete('/mcp', (req, reply) => face.delete(req, reply));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    face,
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      face.close();
      await app.close();
    },
  };
}

/** Connects an SDK 1.32.2 client declaring `capabilities`. */
export async function legacyClient(url: string, capabilities: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'legacy-test-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}
