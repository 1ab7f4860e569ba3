/**
 * Reads JSON-RPC messages from an upstream HTTP response: a JSON body or an SSE stream (2025-11-25 basic/transports
 * §Sending Messages).
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';

/** Largest single SSE event or JSON body accepted from an upstream. */
export const MAX_UPSTREAM_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Yields each JSON-RPC message in the response, in order; non-JSON SSE events are skipped. */
export async function* readMessages(response: Response): AsyncGenerator<unknown> {
  const type = response.headers.get('content-type') ?? '';
  if (!response.body) return;
  if (type.includes('text/event-stream')) {
    const events = response.body
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream({ maxBufferSize: MAX_UPSTREAM_MESSAGE_BYTES }));
    for await (const event of events) {
      if (event.event !== undefined && event.event !== 'message') continue;
      if (!event.data) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(event.data);
      } catch {
        continue;
      }
      if (Array.isArray(parsed)) yield* parsed;
      else yield parsed;
    }
    return;
  }
  const text = await response.text();
  if (text.length > MAX_UPSTREAM_MESSAGE_BYTES) throw new Error('upstream message too large');
  if (text.trim() === '') return;
  const parsed: unknown = JSON.parse(text);
  if (Array.isArray(parsed)) yield* parsed;
  else yield parsed;
}
