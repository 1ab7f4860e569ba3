/**
 * A passed-through `application/json` answer that may be JSON lines. The conformance project's reference
 * everything-server, in its 2026-07-28-only mode, answers a tool call that reports progress with one JSON message per
 * line in an `application/json` body, the notifications first and the result last, which a 2026-07-28 client (the v2
 * SDK) cannot read. The modern face re-frames that answer. A federated call passed through to such a member must do the
 * same, or the member's progress tools stop working when the call skips the face. An answer whose first line is a
 * notification or a request becomes an SSE stream, one event per line, as each line arrives. Any other answer is one
 * message (or one document over several lines) and passes on as it came.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, RawServerBase, RouteGenericInterface } from 'fastify';

const NL = 10;
const EMPTY: Buffer = Buffer.alloc(0);

/** Whether `line` is a JSON-RPC notification or request: a message that a tool's answer carries before its result. */
function leadsMore(line: Buffer): boolean {
  try {
    const m: unknown = JSON.parse(line.toString('utf8'));
    return typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string';
  } catch {
    // Not one message on its line (a document over several lines, or no JSON at all): not JSON lines.
    return false;
  }
}

/** Relays `stream`, the upstream's `application/json` answer, on `rep`; JSON lines go on as SSE events. */
export function relayJsonAnswer(
  rep: FastifyReply<RouteGenericInterface, RawServerBase>,
  stream: NodeJS.ReadableStream & { destroy(): void; destroyed?: boolean },
  atClose: Array<() => void>,
): FastifyReply<RouteGenericInterface, RawServerBase> {
  const raw = rep.raw as ServerResponse;
  const chunks: Buffer[] = [];
  let size = 0;
  let decided = false;
  let lines = false;
  let partial: Buffer = EMPTY;
  /** Writes each whole line of `buf` as an event; returns what is left after the last newline. */
  const events = (buf: Buffer): Buffer => {
    let start = 0;
    for (let nl = buf.indexOf(NL); nl >= 0; nl = buf.indexOf(NL, start)) {
      event(buf.subarray(start, nl));
      start = nl + 1;
    }
    return buf.subarray(start);
  };
  const event = (line: Buffer) => {
    const text = line.toString('utf8').trim();
    if (text !== '') raw.write(`event: message\ndata: ${text}\n\n`);
  };
  stream.on('data', (chunk: Buffer) => {
    if (lines) {
      partial = events(partial.length ? Buffer.concat([partial, chunk]) : chunk);
      return;
    }
    chunks.push(chunk);
    size += chunk.length;
    if (decided || chunk.indexOf(NL) < 0) return;
    decided = true;
    const all = Buffer.concat(chunks, size);
    if (!leadsMore(all.subarray(0, all.indexOf(NL)))) return;
    lines = true;
    rep.hijack();
    const headers: OutgoingHttpHeaders = { ...(rep.getHeaders() as OutgoingHttpHeaders), 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    raw.writeHead(rep.statusCode, headers);
    partial = events(all);
  });
  stream.on('end', () => {
    if (lines) {
      event(partial);
      raw.end();
      return;
    }
    rep.removeHeader('transfer-encoding');
    rep.send(Buffer.concat(chunks, size));
  });
  stream.on('error', () => raw.destroy());
  atClose.push(() => {
    if (!stream.destroyed) stream.destroy();
  });
  return rep;
}
