/**
 * One modern response: a JSON body, or (once there is something to stream, and the client accepts it) an SSE stream
 * scoped to the request that carries notifications and then the response (2026-07-28 basic/transports/streamable-http
 * §Receiving Messages).
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { catalogAnswer, type JsonObject, type JsonRpcErrorObject, type JsonRpcMessage, type RequestId } from '../translate/index.js';

/**
 * Stops `work` when the client goes away before its answer is finished (the connection closes first); returns what
 * ends the watch, called once the request is done with.
 */
export function stopWhenClientLeaves(reply: FastifyReply, work: { abort(reason?: unknown): void }): () => void {
  const onClose = () => {
    if (!reply.raw.writableFinished) work.abort(new Error('client closed the request'));
  };
  reply.raw.on('close', onClose);
  return () => reply.raw.off('close', onClose);
}

/** The response channel of one request. */
export class ResponseChannel {
  private streaming = false;
  private ended = false;
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    private readonly reply: FastifyReply,
    private readonly canStream: boolean,
    private readonly keepAliveMs: number,
  ) {}

  /** Whether the SSE stream has started. */
  get isStreaming(): boolean {
    return this.streaming;
  }

  /** Starts the SSE stream now (listen streams start before their first message). */
  startStream(): void {
    if (this.streaming || this.ended) return;
    this.streaming = true;
    this.reply.hijack();
    this.keepAlive = openSse(this.reply.raw, this.keepAliveMs);
  }

  private write(message: JsonRpcMessage): void {
    writeSse(this.reply.raw, message);
  }

  /** Relays a notification; without SSE acceptance it is dropped (a JSON reply has room for one message). */
  notify(message: JsonRpcMessage): void {
    if (this.ended || !this.canStream) return;
    this.startStream();
    this.write(message);
  }

  /**
   * Sends the result and ends the response; `text`, when given, is the result's JSON text already, written as it is in
   * a JSON body (an SSE event's data must be one line, which an upstream's own text need not be).
   */
  result(id: RequestId, result: JsonObject, text?: string): void {
    if (text === undefined || this.ended || this.streaming) this.finish({ jsonrpc: '2.0', id, result }, 200);
    else this.finishText(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${text}}`, 200);
  }

  /**
   * Sends an error and ends the response; `status` and `retryAfterSeconds` (sent as `Retry-After`, RFC 9110 §10.2.3)
   * apply only if nothing was streamed yet.
   */
  error(id: RequestId | null, error: JsonRpcErrorObject, status: number, retryAfterSeconds?: number): void {
    if (!this.streaming && !this.ended && retryAfterSeconds !== undefined) void this.reply.header('retry-after', String(retryAfterSeconds));
    this.finish({ jsonrpc: '2.0', id, error }, status);
  }

  private finish(message: JsonRpcMessage, status: number): void {
    if (this.ended) return;
    // Serialized before anything is marked sent: a value that cannot be (nested too deep for the stack) still ends
    // the response, with an error in its place, instead of leaving it open.
    let text: string;
    try {
      text = JSON.stringify(message);
    } catch {
      const answer = catalogAnswer('GW_INTERNAL');
      text = JSON.stringify({ jsonrpc: '2.0', id: 'id' in message ? message.id : null, error: answer.error });
      status = answer.status;
    }
    this.finishText(text, status);
  }

  /** Ends the response with `text`, one JSON-RPC message serialized. */
  private finishText(text: string, status: number): void {
    if (this.ended) return;
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.streaming) {
      if (!this.reply.raw.destroyed && !this.reply.raw.writableEnded) this.reply.raw.write(`event: message\ndata: ${text}\n\n`);
      this.reply.raw.end();
      return;
    }
    // Written straight to the socket, as one write: the gateway registers no send hooks and the body is serialized
    // here once, so Fastify's serialization and hook chain would only cost time on every answer.
    // Encoded once: its length and the bytes written come from the same buffer (a large result is not scanned twice).
    const body = Buffer.from(text);
    // Fastify's getHeaders builds a fresh object: completed in place.
    const headers = this.reply.getHeaders() as OutgoingHttpHeaders;
    headers['content-type'] = 'application/json';
    headers['content-length'] = body.length;
    this.reply.hijack();
    this.reply.raw.writeHead(status, headers);
    this.reply.raw.end(body);
  }

  /** Releases timers if the client went away. */
  abandon(): void {
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.streaming && !this.reply.raw.writableEnded) this.reply.raw.end();
  }
}

/**
 * Sends an SSE stream's headers now (a stream may stay silent for long; 2026-07-28 basic/transports/streamable-http:
 * SSE responses SHOULD carry `X-Accel-Buffering: no`) and keeps it alive with comments. Returns the keep-alive
 * timer (unref'd), for the caller to clear when the stream ends.
 */
export function openSse(raw: ServerResponse, keepAliveMs: number): NodeJS.Timeout {
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();
  const keepAlive = setInterval(() => {
    if (!raw.destroyed) raw.write(': keep-alive\n\n');
  }, keepAliveMs);
  keepAlive.unref();
  return keepAlive;
}

/** Writes one JSON-RPC message as an SSE event; nothing once the stream is gone. */
export function writeSse(raw: ServerResponse, message: JsonRpcMessage): void {
  if (raw.destroyed || raw.writableEnded) return;
  raw.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}
