/**
 * The client the official suite's client scenarios drive (`conformance client --command …`), in two modes:
 *
 *   tsx scripts/conformance-client-driver.ts direct  <server-url>   an SDK client of the scenario's own era
 *   tsx scripts/conformance-client-driver.ts gateway <server-url>   the gateway in front of <server-url>, and an SDK
 *                                                                   client of the OTHER era talking to the gateway
 *
 * The suite sets MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_PROTOCOL_VERSION (2026-07-28 for scenarios introduced
 * then, 2025-11-25 otherwise) and scores what reaches its scenario server; in `gateway` mode that is what the gateway
 * sends as a client. Each scenario's script below is what a user of that client would do (list, call, answer a
 * question); scripts/conformance-client.ts runs both modes and compares them check by check.
 *
 * Clients: 2025-11-25 is the SDK 1.32.2 `Client`; 2026-07-28 is the v2 `Client` with `versionNegotiation: auto`
 * (its default stays on 2025-11-25, SDK-NOTES §2.6), and plain fetch for what it refuses (MRTR rounds by hand).
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { startGateway } from '../test/helpers/gateway.js';

type Era = 'legacy' | 'modern';
type Json = Record<string, any>;

const MODERN = '2026-07-28';
const INFO = { name: 'gateway-conformance-client', version: '1.0.0' };

/** One scenario's user: lists, calls and answers through whatever client `connect` gives. */
type Script = (c: ScenarioClient) => Promise<void>;

/** The few things a scenario's user does, the same for a client of either era. */
interface ScenarioClient {
  listTools(): Promise<Json[]>;
  callTool(name: string, args: Json): Promise<Json>;
  /** Sends a request as is (no MRTR or task handling): the answer's result, or throws on an error. */
  request(method: string, params: Json): Promise<Json>;
  close(): Promise<void>;
}

/** How a question from the server (elicitation/create) is answered: accept, taking every default offered. */
function answerElicitation(params: Json): Json {
  const properties = (params?.requestedSchema?.properties ?? {}) as Record<string, Json>;
  const content: Json = {};
  for (const [k, v] of Object.entries(properties)) {
    if (v?.default !== undefined) content[k] = v.default;
    else if (v?.type === 'boolean') content[k] = true;
  }
  if (Object.keys(properties).length === 0) content.confirmed = true;
  return { action: 'accept', content };
}

async function legacyClient(url: string, elicitation: boolean): Promise<ScenarioClient> {
  const client = new LegacyClient(INFO, { capabilities: elicitation ? { elicitation: { form: { applyDefaults: true } } } : {} });
  if (elicitation) client.setRequestHandler(ElicitRequestSchema, async (req) => answerElicitation(req.params as Json) as never);
  const transport = new LegacyTransport(new URL(url));
  await client.connect(transport);
  return {
    listTools: async () => (await client.listTools()).tools as Json[],
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as Json,
    request: async (method, params) => (await client.request({ method, params } as never, (await import('zod')).z.any() as never)) as Json,
    close: () => transport.close(),
  };
}

/**
 * A 2026-07-28 client: the v2 SDK client for discovery and lists, and plain requests with the envelope for calls, so
 * that an MRTR round (`resultType: input_required`) is answered by hand and the call retried with `inputResponses`
 * and the `requestState` echoed (2026-07-28 basic/mrtr).
 */
async function modernClient(url: string, elicitation: boolean, sdkCalls = false): Promise<ScenarioClient> {
  const capabilities = elicitation ? { elicitation: { form: { applyDefaults: true } } } : {};
  const client = new ModernClient(INFO, { versionNegotiation: { mode: 'auto' }, capabilities });
  const transport = new ModernTransport(new URL(url));
  await client.connect(transport);
  let id = 1;
  const post = async (method: string, params: Json): Promise<Json> => {
    const body = {
      jsonrpc: '2.0',
      id: id++,
      method,
      params: {
        ...params,
        _meta: {
          ...(params._meta ?? {}),
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientInfo': INFO,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
    };
    if (typeof params.name === 'string') headers['mcp-name'] = params.name;
    else if (typeof params.uri === 'string') headers['mcp-name'] = params.uri;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => JSON.parse(l.slice(5)) as Json)
      : text
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l) as Json);
    const answer = messages.find((m) => m.id === body.id);
    if (!answer) throw new Error(`${method}: no answer (HTTP ${res.status})`);
    if (answer.error) throw new Error(`${method}: ${answer.error.code} ${answer.error.message}`);
    return answer.result as Json;
  };
  return {
    listTools: async () => (await client.listTools()).tools as Json[],
    async callTool(name, args) {
      if (sdkCalls) return (await client.callTool({ name, arguments: args })) as Json;
      let params: Json = { name, arguments: args };
      for (let round = 0; round < 5; round++) {
        const result = await post('tools/call', params);
        if (result.resultType !== 'input_required') return result;
        const inputResponses: Json = {};
        for (const [key, req] of Object.entries((result.inputRequests ?? {}) as Record<string, Json>)) {
          if (req.method === 'elicitation/create') inputResponses[key] = answerElicitation(req.params);
        }
        params = { name, arguments: args, inputResponses, ...(result.requestState !== undefined ? { requestState: result.requestState } : {}) };
      }
      throw new Error(`${name}: still asking after 5 rounds`);
    },
    request: post,
    close: () => client.close(),
  };
}

/** Lists the tools and calls the first with two numbers (the suite's add_numbers). */
const basic: Script = async (c) => {
  const tools = await c.listTools();
  const first = tools[0];
  if (first) await c.callTool(first.name, { a: 2, b: 3 });
};

/** Calls every tool the server offers, in its order: each asks a question or checks how it was called. */
const everyTool: Script = async (c) => {
  for (const tool of await c.listTools()) await c.callTool(tool.name, {}).catch((e: unknown) => console.error(`${tool.name}: ${String(e)}`));
};

/** Lists the tools, then makes the calls the scenario's context names (MCP_CONFORMANCE_CONTEXT), with their arguments. */
const contextCalls: Script = async (c) => {
  await c.listTools();
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as { toolCalls?: Array<{ name: string; arguments: Json }> };
  for (const call of context.toolCalls ?? []) await c.callTool(call.name, call.arguments).catch((e: unknown) => console.error(`${call.name}: ${String(e)}`));
};

/** Lists the tools, then sends the focal tool's schema back to the echo tool as observed. */
const schemaEcho: Script = async (c) => {
  const tools = await c.listTools();
  const focal = tools.find((t) => t.name === 'json_schema_2020_12_tool');
  if (!focal) throw new Error('json_schema_2020_12_tool not listed');
  await c.callTool('json_schema_echo', { schema: focal.inputSchema });
};

/**
 * `elicitation`: the client declares form elicitation and answers questions. `sdkCalls`: the 2026-07-28 client calls
 * tools through the v2 SDK (which mirrors `x-mcp-header` parameters into `Mcp-Param-*` headers) rather than by hand.
 * `gateway`: configuration the gateway runs with besides its defaults; `upstream`: the same for its upstream entry.
 */
const SCRIPTS: Record<string, { script: Script; elicitation?: boolean; sdkCalls?: boolean; gateway?: Json; upstream?: Json }> = {
  initialize: { script: basic },
  tools_call: { script: basic },
  // Its server serves one client: it answers a resumed call on whichever GET comes next, whatever the session, so the
  // gateway keeps one session to it (two sessions' GET streams would race for the answer).
  'sse-retry': { script: basic, gateway: { sessions: { maxPerUpstream: 1, warmIdle: 0 } } },
  'elicitation-sep1034-client-defaults': { script: everyTool, elicitation: true },
  'json-schema-2020-12-preservation': { script: schemaEcho },
  'json-schema-ref-no-deref': { script: async (c) => void (await c.listTools()) },
  // These servers score every POST as a 2026-07-28 client's. With `era: auto` the first 2025-11-25 client makes the
  // gateway ask whether the upstream serves that era itself, with the initialize a 2025-11-25 client sends (no
  // 2026-07-28 _meta or headers: a dual-era server routes by them), which they would score as this client's. Their
  // upstream is known to speak 2026-07-28 alone, so the gateway is told so, as an operator would.
  'request-metadata': { script: async (c) => void (await c.listTools()), upstream: { era: 'modern' } },
  'http-standard-headers': { script: everyTool, upstream: { era: 'modern' } },
  'http-custom-headers': { script: contextCalls, sdkCalls: true },
  'http-invalid-tool-headers': { script: everyTool, sdkCalls: true },
  'sep-2322-client-request-state': { script: everyTool, elicitation: true },
};

async function main(): Promise<void> {
  const [mode, serverUrl] = [process.argv[2], process.argv.at(-1)];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const entry = SCRIPTS[scenario];
  if ((mode !== 'direct' && mode !== 'gateway') || !serverUrl || !entry) {
    throw new Error(`usage: MCP_CONFORMANCE_SCENARIO=<${Object.keys(SCRIPTS).join('|')}> conformance-client-driver.ts direct|gateway <server-url>`);
  }
  const own: Era = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION === MODERN ? 'modern' : 'legacy';
  let url = serverUrl;
  let era = own;
  let stop = async (): Promise<void> => {};
  if (mode === 'gateway') {
    const upstreams = [{ ...entry.upstream, name: 'scenario', path: '/mcp', url: serverUrl }];
    const gateway = await startGateway({ ...entry.gateway, upstreams }, { deps: { logger: { level: 'warn' } } });
    url = gateway.url;
    era = own === 'modern' ? 'legacy' : 'modern';
    stop = gateway.close;
  }
  const elicitation = entry.elicitation ?? false;
  const client = era === 'modern' ? await modernClient(url, elicitation, entry.sdkCalls) : await legacyClient(url, elicitation);
  try {
    await entry.script(client);
  } finally {
    await client.close().catch(() => {});
    await stop();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
