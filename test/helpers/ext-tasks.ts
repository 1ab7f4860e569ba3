/**
 * The host-owned raw request path that @modelcontextprotocol/ext-tasks needs for a 2026-07-28 server
 * (SDK-NOTES §5.2): one JSON-RPC POST per request with the modern routing headers (lower-cased, so that a
 * mixed-case `Mcp-Name` from ext-tasks replaces ours instead of doubling it, §5.4), JSON-RPC replies read from
 * any HTTP status (JSON or SSE), transport failures as a retryable DispatchError.
 */
import { DispatchError } from '@modelcontextprotocol/ext-tasks/client';
import { MODERN } from './modern.js';

/** One request the dispatcher sent, and what came back. */
export interface DispatchRecord {
  method: string;
  headers: Record<string, string>;
  params: any;
  status: number;
  reply: any;
}

/** Reads the JSON-RPC response with `id` from a JSON or SSE body. */
function findResponse(contentType: string, text: string, id: string): any {
  const messages = contentType.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5).trim()))
    : text
      ? [JSON.parse(text)]
      : [];
  return messages.find((m) => m && typeof m === 'object' && m.id === id && ('result' in m || 'error' in m));
}

let seq = 0;

/** A rawDispatch for `createTaskSessionFromClient` that POSTs to `url` and records each exchange in `log`. */
export function fetchDispatch(url: string, log: DispatchRecord[]) {
  return async (request: any, options?: { signal?: AbortSignal; context?: { headers?: Readonly<Record<string, string>> } }) => {
    const id = `ext-${++seq}`;
    const method = String(request?.method);
    const params = (request?.params ?? {}) as Record<string, unknown>;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
    };
    const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
    if (name !== undefined) headers['mcp-name'] = name;
    for (const [k, v] of Object.entries(options?.context?.headers ?? {})) headers[k.toLowerCase()] = v;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        ...(options?.signal ? { signal: options.signal } : {}),
      });
    } catch (cause) {
      throw new DispatchError(`POST ${method} failed: ${(cause as Error).message}`, true, { cause });
    }
    const text = await res.text();
    let reply: any;
    try {
      reply = findResponse(res.headers.get('content-type') ?? '', text, id);
    } catch (cause) {
      throw new DispatchError(`unreadable reply to ${method} (HTTP ${res.status})`, false, { cause });
    }
    log.push({ method, headers, params, status: res.status, reply });
    if (!reply) throw new DispatchError(`no JSON-RPC reply to ${method} (HTTP ${res.status})`, res.status >= 500);
    return 'error' in reply ? { kind: 'error' as const, error: reply.error } : { kind: 'result' as const, result: reply.result };
  };
}
