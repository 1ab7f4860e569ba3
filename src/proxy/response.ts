/**
 * One modern response: a JSON body, or (once there is something to stream, and the client accepts it) an SSE stream
 * scoped to the request that carries notifications and then the response (2026-07-28 basic/transports/streamable-http
 * §Receiving Messages).
 */
import type { FastifyReply } from 'fastify';
import type { JsonObject, JsonRpcErrorObject, JsonRpcMessage, RequestId } from '../translate/index.js';

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
    const raw = this.reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.flushHeaders();
    this.keepAlive = setInterval(() => {
      if (!raw.destroyed) raw.write(': keep-alive\n\n');
    }, this.keepAliveMs);
    this.keepAlive.unref();
  }

  private write(message: JsonRpcMessage): void {
    const raw = this.reply.raw;
    if (raw.destroyed || raw.writableEnded) return;
    raw.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /** Relays a notification; without SSE acceptance it is dropped (a JSON reply has room for one message). */
  notify(message: JsonRpcMessage): void {
    if (this.ended || !this.canStream) return;
    this.startStream();
    this.write(message);
  }

  /** Sends the result and ends the response. */
  result(id: RequestId, result: JsonObject): void {
    this.finish({ jsonrpc: '2.0', id, result }, 200);
  }

  /** Sends an error and ends the response; `status` applies only if nothing was streamed yet. */
  error(id: RequestId | null, error: JsonRpcErrorObject, status: number): void {
    this.finish({ jsonrpc: '2.0', id, error }, status);
  }

  private finish(message: JsonRpcMessage, status: number): void {
    if (this.ended) return;
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.streaming) {
      this.write(message);
      this.reply.raw.end();
      return;
    }
    void this.reply.code(status).header('content-type', 'application/json').send(message);
  }

  /** Releases timers if the client went away. */
  abandon(): void {
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.streaming && !this.reply.raw.writableEnded) this.reply.raw.end();
  }
}
