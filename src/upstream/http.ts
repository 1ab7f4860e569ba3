/**
 * The HTTP hop to upstreams: undici's `request` over one keep-alive connection pool per origin, instead of the
 * global `fetch`. On the hot path of every forwarded call, fetch's WHATWG machinery costs more than the rest of the
 * gateway: it turns a string body into a stream written chunk by chunk (several socket writes per request where one
 * will do), wraps every response in web streams, and allocates a request/response object graph per exchange.
 * `request` writes headers and a string body in one corked write and hands the body back as a Node stream.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { Agent, type Dispatcher } from 'undici';
import { catalogError, GatewayError, jsonTooDeep, logFailure, NO_LOG, type LayerLogger } from '../translate/index.js';

/** Largest single SSE event or JSON body accepted from an upstream. */
/** How long an upstream's error answer (a non-2xx status) may take to end before it is dropped unread. */
const ERROR_BODY_WAIT_MS = 5_000;

export const MAX_UPSTREAM_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Deepest JSON nesting accepted in an upstream message. Parsing copes with any depth, but what walks the value
 * afterwards (translating it, serializing it to the client) recurses and exhausts the stack at a few thousand levels;
 * a message deeper than this fails its exchange (GW_UPSTREAM_BAD_MESSAGE) instead. Generous for real results (a
 * client's own requests are held to `server.maxJsonDepth`, at most 1000 too).
 */
const MAX_UPSTREAM_JSON_DEPTH = 1000;

/** Parses one upstream JSON text, refusing one nested deeper than MAX_UPSTREAM_JSON_DEPTH. */
export function parseUpstreamJson(text: string): unknown {
  if (jsonTooDeep(text, MAX_UPSTREAM_JSON_DEPTH)) throw tooDeep();
  return JSON.parse(text);
}

function tooDeep(): GatewayError {
  return new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [catalogError('GW_TOO_DEEP', { args: [MAX_UPSTREAM_JSON_DEPTH] }).message] });
}

/**
 * The connection pool of every upstream (one pool per origin inside). Idle connections are kept for a while, and a
 * socket with nothing in flight does not keep the process alive (undici unrefs idle sockets).
 */
const agent = new Agent({
  keepAliveTimeout: 10_000,
  keepAliveMaxTimeout: 60_000,
  // No body timeout: a streamed answer (SSE) may stay silent for as long as its consumer's budget allows.
  bodyTimeout: 0,
  // Bounded by the callers' own deadlines (an abort signal per exchange), which say which budget ran out.
  headersTimeout: 0,
});

type Body = Dispatcher.ResponseData['body'];

/** One upstream answer: status, headers, and a body read once (as text, as messages, or discarded). */
export class UpstreamResponse {
  private readonly head: IncomingHttpHeaders;
  private body: Body | undefined;
  /** The body stream, kept to drop it even once a reader took it. */
  private readonly stream: Body | undefined;
  /** The body already read as text (an answer that was inspected and handed on). */
  private buffered: string | undefined;

  constructor(
    readonly status: number,
    headers: IncomingHttpHeaders,
    body: Body | undefined,
    buffered?: string,
  ) {
    this.head = headers;
    this.body = body;
    this.stream = body;
    this.buffered = buffered;
  }

  /** Drops the body wherever it is being read (its reader ends with an error); the connection is not reused. */
  cancel(): void {
    this.body = undefined;
    if (this.stream && !this.stream.readableEnded) this.stream.destroy();
  }

  /** The body as it arrives, for a caller that passes it on unread (what was read of it already, as it was). */
  takeBody(): Readable {
    const body = this.body;
    this.body = undefined;
    if (body) return body;
    const text = this.buffered ?? '';
    this.buffered = undefined;
    return Readable.from(text === '' ? [] : [Buffer.from(text)]);
  }

  /** A 2xx status. */
  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  /** One response header (the first value of a repeated one). */
  header(name: string): string | undefined {
    const v = this.head[name];
    return Array.isArray(v) ? v[0] : v;
  }

  /** The `WWW-Authenticate` header as it arrived (several values when repeated), for a 401 or 403 to pass on. */
  get challenge(): string | string[] | undefined {
    return this.head['www-authenticate'];
  }

  /** Whether the answer is an SSE stream (2025-11-25 and 2026-07-28 basic/transports §Sending Messages). */
  get isEventStream(): boolean {
    return (this.header('content-type') ?? '').includes('text/event-stream');
  }

  /** The same answer with its body replaced by text already read from it. */
  withText(text: string): UpstreamResponse {
    return new UpstreamResponse(this.status, this.head, undefined, text);
  }

  /** The body as text, at most `limit` bytes of it (the rest is dropped; a broken body reads as what arrived). */
  /**
   * The body as text, or `''` when it has not ended within `ms` (the body is then dropped): an error answer is read
   * for its JSON-RPC error, and one that never ends must not hold the connection, or the request, open.
   */
  async textWithin(ms: number = ERROR_BODY_WAIT_MS): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => {
        this.cancel();
        resolve('');
      }, ms);
      timer.unref();
    });
    try {
      return await Promise.race([this.text().catch(() => ''), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async text(limit = MAX_UPSTREAM_MESSAGE_BYTES): Promise<string> {
    if (this.buffered !== undefined) return this.buffered.slice(0, limit);
    const body = this.take();
    if (!body) return '';
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= limit) break;
      }
    } catch {
      // a broken body reads as what arrived
    } finally {
      if (!body.readableEnded) body.destroy();
    }
    const all = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    return all.subarray(0, limit).toString('utf8');
  }

  /**
   * Drops the body (the connection is reused when the body is short, closed otherwise); a body that breaks while it is
   * dropped is gone anyway (said at debug to `log`).
   */
  async discard(log: LayerLogger = NO_LOG): Promise<void> {
    this.buffered = undefined;
    const body = this.take();
    if (body) await body.dump({ limit: 64 * 1024 }).catch(logFailure(log, 'debug', 'upstream body broke while it was dropped'));
  }

  /**
   * Yields each JSON-RPC message in the answer, in order: a JSON body (one value, or JSON lines as each line arrives),
   * or the events of an SSE stream (non-JSON and non-`message` events skipped). Stopping early drops the rest of the
   * body. `cursor` follows where an SSE stream got to, for resuming it (see SseCursor).
   */
  async *messages(cursor?: SseCursor): AsyncGenerator<unknown> {
    if (this.buffered !== undefined) {
      yield* jsonTextMessages(this.buffered, this);
      return;
    }
    if (!this.isEventStream) {
      yield* this.jsonMessages();
      return;
    }
    const body = this.take();
    if (!body) return;
    yield* sseMessages(body, cursor);
  }

  /**
   * The messages of a non-SSE body. One with a declared length is finite: undici's own collector reads it whole, which
   * is cheaper than iterating the stream chunk by chunk (the pass-through hot path). One without (chunked) may be JSON
   * lines that stay open, as a 2026-07-28 server may answer `subscriptions/listen`: read line by line.
   */
  private async *jsonMessages(): AsyncGenerator<unknown> {
    const body = this.take();
    if (!body) return;
    const declared = Number(this.header('content-length'));
    if (declared > MAX_UPSTREAM_MESSAGE_BYTES) {
      body.destroy();
      throw tooLarge();
    }
    if (declared >= 0) {
      yield* jsonTextMessages(await body.text(), this);
      return;
    }
    yield* chunkedJsonMessages(body, this);
  }

  /**
   * The messages of a JSON answer of declared length (one value, or JSON lines), read whole by undici's own collector;
   * `undefined` for any other answer (SSE, a chunked body, one already taken), which `messages` reads as it arrives.
   * What the hot path of a plain call takes: no async generators between the body and the call.
   */
  wholeMessages(): Promise<WholeMessages> | undefined {
    if (this.body === undefined || this.isEventStream) return undefined;
    const declared = Number(this.header('content-length'));
    if (!(declared >= 0) || declared > MAX_UPSTREAM_MESSAGE_BYTES) return undefined;
    const body = this.take() as Body;
    return body.text().then((text) => {
      const messages = [...jsonTextMessages(text, this)];
      // One object: the text is that message's own (a batch or JSON lines is not).
      const single = messages.length === 1 && typeof messages[0] === 'object' && messages[0] !== null && !Array.isArray(messages[0]);
      return new WholeMessages(messages, single && text.trimStart().startsWith('{') ? text : undefined);
    });
  }

  /** The answer's media type, for an error that names the framing it could not read. */
  get framing(): string {
    const type = (this.header('content-type') ?? '').split(';')[0]?.trim();
    return type ? `Content-Type ${type}` : 'no Content-Type';
  }

  private take(): Body | undefined {
    const b = this.body;
    this.body = undefined;
    return b;
  }
}

/**
 * The messages of an answer read whole (`UpstreamResponse.wholeMessages`), iterable as they are, and the answer's
 * text when it was one message (a translation may splice it).
 */
export class WholeMessages implements Iterable<unknown> {
  constructor(
    readonly messages: unknown[],
    readonly text?: string,
  ) {}

  [Symbol.iterator](): Iterator<unknown> {
    return this.messages[Symbol.iterator]();
  }
}

/** The messages of one parsed JSON value: a batch (array) is its elements, in order. */
function* spread(parsed: unknown): Generator<unknown> {
  if (Array.isArray(parsed)) yield* parsed;
  else yield parsed;
}

function tooLarge(): GatewayError {
  return new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`message larger than ${MAX_UPSTREAM_MESSAGE_BYTES} bytes`] });
}

/** What names an answer's framing in an error, read only when one is raised. */
interface Framed {
  readonly framing: string;
}

/** Text that is JSON neither as one value nor as JSON lines: named by its framing, not as a broken stream. */
function notJsonOrLines(framing: string): GatewayError {
  return new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`the answer is not JSON or JSON lines (${framing})`] });
}

/** One JSON value parsed, or `undefined` when the text is not JSON; one nested too deep is refused (tooDeep). */
function tryJson(text: string): { value: unknown } | undefined {
  try {
    return { value: parseUpstreamJson(text) };
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    return undefined;
  }
}

/** The messages of one JSON value or line, refused naming the framing when it is not JSON. */
function framedMessages(text: string, framed: Framed): Generator<unknown> {
  const parsed = tryJson(text);
  if (!parsed) throw notJsonOrLines(framed.framing);
  return spread(parsed.value);
}

/** The messages of a JSON body read whole: one value (parsed once), else newline-delimited JSON messages. */
function* jsonTextMessages(text: string, framed: Framed): Generator<unknown> {
  if (text.trim() === '') return;
  const whole = tryJson(text);
  if (whole) {
    yield* spread(whole.value);
    return;
  }
  for (const line of text.split('\n')) if (line.trim() !== '') yield* framedMessages(line, framed);
}

const NEWLINE = 0x0a;

/**
 * The messages of a chunked JSON body, as they arrive: JSON lines are yielded line by line (a listen's body stays open
 * after its acknowledgement; a call's notification lines come before its result line, the last line possibly
 * unterminated), one JSON value is parsed once at its end. The first complete line decides: one that parses starts
 * JSON lines, one that does not begins a value spread over lines. Bytes are joined once per line (a newline byte
 * never occurs inside a UTF-8 sequence), so a long body costs no repeated copying; each message is bounded by
 * MAX_UPSTREAM_MESSAGE_BYTES.
 */
async function* chunkedJsonMessages(body: Body, framed: Framed): AsyncGenerator<unknown> {
  /** The bytes not yet parsed: of the current line (JSON lines), or of the whole body (undecided, one value). */
  let pending: Buffer[] = [];
  let size = 0;
  let lines: boolean | undefined;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = lines === false ? -1 : chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        if (size + nl - start > MAX_UPSTREAM_MESSAGE_BYTES) throw tooLarge();
        const line = joined(pending, chunk.subarray(start, nl)).toString('utf8');
        if (line.trim() !== '') {
          const parsed = tryJson(line);
          if (!parsed && lines === undefined) {
            lines = false; // a value spread over lines: kept whole, parsed at the end
            break;
          }
          if (!parsed) throw notJsonOrLines(framed.framing);
          lines = true;
          yield* spread(parsed.value);
        }
        pending = [];
        size = 0;
        start = nl + 1;
      }
      const rest = start === 0 ? chunk : chunk.subarray(start);
      size += rest.length;
      if (size > MAX_UPSTREAM_MESSAGE_BYTES) throw tooLarge();
      if (rest.length > 0) pending.push(rest);
    }
  } finally {
    if (!body.readableEnded) body.destroy();
  }
  const last = joined(pending).toString('utf8');
  if (last.trim() !== '') yield* framedMessages(last, framed);
}

/** The parts as one buffer, copying only when there are several. */
function joined(parts: Buffer[], tail?: Buffer): Buffer {
  if (tail === undefined) return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  return parts.length === 0 ? tail : Buffer.concat([...parts, tail]);
}

/**
 * Where an SSE stream got to, for resuming it with GET and `Last-Event-ID` (2025-11-25 basic/transports §Resumability
 * and Redelivery): the id of its last event that had one, the reconnection delay its `retry` field last asked for,
 * and how many events it delivered (a priming event with empty data included). Updated as the stream is read.
 */
export interface SseCursor {
  lastEventId?: string | undefined;
  retryMs?: number | undefined;
  events: number;
}

/**
 * The messages of an SSE body, parsed as chunks arrive (eventsource-parser's push parser over the Node stream, with
 * no web-stream adapters in between). Bounded: a partial event larger than MAX_UPSTREAM_MESSAGE_BYTES, or one nested
 * deeper than MAX_UPSTREAM_JSON_DEPTH, ends the stream with an error. `cursor`, when given, follows event ids and
 * `retry`.
 */
async function* sseMessages(body: Body, cursor?: SseCursor): AsyncGenerator<unknown> {
  // undici's body yields Buffers whatever the encoding set: decode here, keeping split UTF-8 sequences whole.
  const decoder = new StringDecoder('utf8');
  let out: unknown[] = [];
  let failure: Error | undefined;
  const parser = createParser({
    maxBufferSize: MAX_UPSTREAM_MESSAGE_BYTES,
    onEvent: (e) => {
      if (cursor && !failure) follow(cursor, e.id);
      if (failure || (e.event !== undefined && e.event !== 'message') || !e.data) return;
      // An event too deep to handle fails the stream: skipping it could drop the one answer the call waits for.
      if (jsonTooDeep(e.data, MAX_UPSTREAM_JSON_DEPTH)) {
        failure ??= tooDeep();
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(e.data);
      } catch {
        return;
      }
      if (Array.isArray(parsed)) out.push(...parsed);
      else out.push(parsed);
    },
    onError: (e) => {
      if (e.type === 'max-buffer-size-exceeded') failure ??= new Error('upstream event too large', { cause: e });
    },
    onRetry: (ms) => {
      if (cursor && Number.isFinite(ms) && ms >= 0) cursor.retryMs = ms;
    },
  });
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      parser.feed(decoder.write(chunk));
      // What came before a failure is still delivered, in order; nothing after it.
      if (out.length > 0) {
        const ready = out;
        out = [];
        for (const m of ready) yield m;
      }
      if (failure) throw failure;
    }
  } finally {
    if (!body.readableEnded) body.destroy();
  }
}

/** Moves `cursor` past one dispatched event; an empty `id` clears the last event id (HTML §9.2.6 "id" field). */
function follow(cursor: SseCursor, id: string | undefined): void {
  cursor.events++;
  if (id !== undefined) cursor.lastEventId = id === '' ? undefined : id;
}

/**
 * A stop for one exchange that costs no AbortController: undici takes an EventEmitter that emits `abort` as a request's
 * signal. For a passed-through request's hot path, where a controller (and its signal's listeners) per request showed
 * as twice the collector's work in the profile.
 */
export class ExchangeStop extends EventEmitter {
  aborted = false;
  reason: unknown;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/**
 * Where a URL's requests go, as undici's dispatcher takes them (origin, path and query), parsed once per URL: undici's
 * own `request(url)` parses it again for every exchange. Keyed by the upstreams' URLs, a handful; cleared when full.
 */
const targets = new Map<string, { origin: string; path: string }>();

function targetOf(url: string): { origin: string; path: string } {
  let t = targets.get(url);
  if (t === undefined) {
    const u = new URL(url);
    t = { origin: u.origin, path: `${u.pathname}${u.search}` };
    if (targets.size >= 256) targets.clear();
    targets.set(url, t);
  }
  return t;
}

/** What one exchange sends. */
export interface HttpExchange {
  method: 'POST' | 'GET' | 'DELETE';
  headers: Record<string, string>;
  body?: string;
  /** A caller's own signal (or stop), when it has one. */
  signal?: AbortSignal | ExchangeStop | undefined;
  /**
   * Bound on the wait for the answer's headers (undici's own timer: no controller or timer per exchange); it fails
   * with undici's HeadersTimeoutError, which `fetchFailure` reads as a timeout. Absent: unbounded (callers then
   * bound the exchange with `signal`).
   */
  headersTimeoutMs?: number;
}

/**
 * Sends one request to `url` and resolves once the answer's headers have arrived. Rejects with undici's error when
 * the upstream cannot be reached, or with the signal's reason when it aborts first; callers map both
 * (`fetchFailure`).
 */
export async function exchange(url: string, x: HttpExchange): Promise<UpstreamResponse> {
  const { origin, path } = targetOf(url);
  const res = await agent.request({
    origin,
    path,
    method: x.method,
    headers: x.headers,
    ...(x.body !== undefined ? { body: x.body } : {}),
    ...(x.signal ? { signal: x.signal } : {}),
    ...(x.headersTimeoutMs !== undefined ? { headersTimeout: x.headersTimeoutMs } : {}),
  });
  return new UpstreamResponse(res.statusCode, res.headers, res.body);
}
