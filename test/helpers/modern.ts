/** A raw modern (2026-07-28) HTTP client for tests that need byte-level control. */
import type { Test } from 'tap';

export const MODERN = '2026-07-28';

/** The standard per-request envelope. */
export function envelope(capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'test-client', version: '1.0.0' },
    ...extra,
  };
}

/** What came back: status, content type, the final JSON-RPC message and any SSE messages before it. */
export interface RawReply {
  status: number;
  contentType: string;
  body: any;
  messages: any[];
}

let nextId = 1;

/**
 * POSTs one modern request with correct headers (override or delete them via `headers`, value `null` deletes).
 * `params._meta` defaults to `envelope(capabilities)`.
 */
export async function post(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  opts: { id?: string | number | null; capabilities?: Record<string, unknown>; headers?: Record<string, string | null>; rawBody?: string } = {},
): Promise<RawReply> {
  const id = opts.id === undefined ? nextId++ : opts.id;
  const p: Record<string, unknown> = { ...params };
  if (!('_meta' in p)) p._meta = envelope(opts.capabilities ?? {});
  const body: Record<string, unknown> = { jsonrpc: '2.0', method, params: p };
  if (id !== null) body.id = id;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
  };
  const name = typeof p.name === 'string' ? p.name : typeof p.uri === 'string' ? p.uri : typeof p.taskId === 'string' ? p.taskId : undefined;
  if (name !== undefined) headers['mcp-name'] = name;
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === null) delete headers[k.toLowerCase()];
    else headers[k.toLowerCase()] = v;
  }
  const res = await fetch(url, { method: 'POST', headers, body: opts.rawBody ?? JSON.stringify(body) });
  return readReply(res);
}

/** Reads a JSON or SSE reply to the end. */
export async function readReply(res: Response): Promise<RawReply> {
  const contentType = res.headers.get('content-type') ?? '';
  const text = await res.text();
  if (contentType.includes('text/event-stream')) {
    const messages = text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5).trim()));
    const last = messages.at(-1);
    return { status: res.status, contentType, body: last, messages: messages.slice(0, -1) };
  }
  return { status: res.status, contentType, body: text ? JSON.parse(text) : undefined, messages: [] };
}

/**
 * A 2026-07-28 client's call of an `ask_name` tool (it elicits a `name`, answers "Hello, <name>"): the MRTR round
 * asks for the name with `elicitation/create`, the retry with the answer "Grace" gets the greeting.
 */
export async function askNameOverMrtr(t: Test, url: string, capabilities: Record<string, unknown>): Promise<void> {
  const first = await post(url, 'tools/call', { name: 'ask_name', arguments: {} }, { capabilities });
  t.equal(first.body.result?.resultType, 'input_required', JSON.stringify(first.body));
  const [key, asked] = Object.entries(first.body.result?.inputRequests ?? {})[0] as [string, any];
  t.equal(asked?.method, 'elicitation/create', 'the elicitation is an MRTR round');
  const answer = { [key]: { action: 'accept', content: { name: 'Grace' } } };
  const done = await post(
    url,
    'tools/call',
    { name: 'ask_name', arguments: {}, inputResponses: answer, requestState: first.body.result?.requestState },
    { capabilities },
  );
  t.equal(done.body.result?.content?.[0]?.text, 'Hello, Grace', JSON.stringify(done.body));
}
