/**
 * The loopback HTTP side of an stdio host (host.ts): the SSE streams it answers on, its JSON answers and refusals,
 * and request bodies read within the upstream message bound.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { catalogAnswer, type ErrorKind, type GatewayErrorOptions, type RequestId } from '../../translate/index.js';
import { MAX_UPSTREAM_MESSAGE_BYTES } from '../http.js';

/** One SSE response stream a request (or a session's GET) is answered on. */
export interface SseStream {
  send(message: unknown): void;
  end(): void;
  readonly ended: boolean;
}

/** Opens `res` as an SSE stream; `onClientGone` when the client closes it first. */
export function openSse(res: ServerResponse, headers: Record<string, string>, onClientGone: () => void): SseStream {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  res.flushHeaders();
  let ended = false;
  res.on('close', () => {
    if (ended) return;
    ended = true;
    onClientGone();
  });
  return {
    get ended() {
      return ended;
    },
    send(message) {
      if (!ended) res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    },
    end() {
      if (ended) return;
      ended = true;
      res.end();
    },
  };
}

/** A JSON answer. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** A catalog error as the whole JSON answer (its status, and `Retry-After` when it has one). */
export function refuse(res: ServerResponse, kind: ErrorKind, opts: GatewayErrorOptions, id: RequestId | undefined): void {
  const a = catalogAnswer(kind, opts);
  const headers: Record<string, string> = a.retryAfterSeconds !== undefined ? { 'retry-after': String(a.retryAfterSeconds) } : {};
  json(res, a.status, { jsonrpc: '2.0', id: id ?? null, error: a.error }, headers);
}

/** The body as text; `undefined` past the message bound. */
export async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_UPSTREAM_MESSAGE_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
