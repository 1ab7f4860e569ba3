/**
 * Incremental SSE reading for integration tests (not a test file): pull one JSON-RPC message at a time from a
 * streaming fetch Response, so a test can act after a given message and never waits on a timer.
 */
import http from 'node:http';
import { MODERN, envelope } from './modern.js';

/** How long a test waits for one SSE message before it fails. */
export const SSE_BOUND_MS = 15_000;

/**
 * Pulls the `data:` payloads of a text/event-stream response, one JSON message per call. A plain JSON response
 * (application/json) reads as its one message, so a test can accept either framing.
 */
export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly json: boolean;
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private readonly queued: unknown[] = [];
  /** Every comment line seen (`: keep-alive`), for tests that care. */
  readonly comments: string[] = [];

  constructor(response: Response) {
    if (!response.body) throw new Error('response has no body');
    this.reader = response.body.getReader();
    this.json = (response.headers.get('content-type') ?? '').startsWith('application/json');
  }

  private pending: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | undefined;

  /**
   * The next JSON message, or `undefined` once the stream has ended. Rejects when none arrives within
   * `timeoutMs`, so a missing message fails the test instead of hanging it (the read stays pending for later).
   */
  async next(timeoutMs = SSE_BOUND_MS): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.queued.length > 0) return this.queued.shift();
      this.pending ??= this.reader.read();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
      });
      const r = await Promise.race([this.pending, timeout]);
      clearTimeout(timer);
      if (r === 'timeout') throw new Error(`no SSE message within ${timeoutMs} ms`);
      this.pending = undefined;
      if (r.done) {
        this.parse(true);
        return this.queued.shift();
      }
      this.buffer += this.decoder.decode(r.value, { stream: true });
      this.parse(false);
    }
  }

  /** Reads messages until one matches, returning it and everything skipped before it. */
  async until(pred: (m: any) => boolean, timeoutMs = SSE_BOUND_MS): Promise<{ match: any; skipped: any[] }> {
    const deadline = Date.now() + timeoutMs;
    const skipped: any[] = [];
    for (;;) {
      const m = await this.next(Math.max(1, deadline - Date.now()));
      if (m === undefined) throw new Error(`stream ended before a matching message; saw ${JSON.stringify(skipped)}`);
      if (pred(m)) return { match: m, skipped };
      skipped.push(m);
    }
  }

  /** Cancels the stream (the client goes away). */
  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }

  private parse(flush: boolean): void {
    if (this.json) {
      if (flush && this.buffer.trim() !== '') this.queued.push(JSON.parse(this.buffer));
      if (flush) this.buffer = '';
      return;
    }
    const events = this.buffer.split(/\r?\n\r?\n/);
    this.buffer = flush ? '' : (events.pop() ?? '');
    for (const event of events) {
      const data: string[] = [];
      for (const line of event.split(/\r?\n/)) {
        if (line.startsWith(':')) this.comments.push(line);
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) this.queued.push(JSON.parse(data.join('\n')));
    }
  }
}

/** A raw HTTP exchange via node:http, which (unlike fetch) lets a test set the Host header. */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const u = new URL(url);
  const body = opts.body ?? '';
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? 'POST',
        headers: { ...(opts.headers ?? {}), 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An open `subscriptions/listen` stream. */
export interface Listening {
  response: Response;
  stream: SseReader;
  /** Closes the stream (the client goes away). */
  abort(): void;
}

/**
 * Opens a `subscriptions/listen` stream with the standard modern headers; the test reads it incrementally.
 * Closed at the test's teardown.
 */
export async function openListen(
  t: { teardown(fn: () => unknown): void },
  url: string,
  id: string | number,
  notifications: Record<string, unknown>,
  opts: { capabilities?: Record<string, unknown>; authorization?: string } = {},
): Promise<Listening> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'subscriptions/listen',
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: envelope(opts.capabilities ?? {}) } }),
    signal: controller.signal,
  });
  const stream = new SseReader(response);
  t.teardown(async () => {
    controller.abort();
    await stream.cancel();
  });
  return { response, stream, abort: () => controller.abort() };
}
