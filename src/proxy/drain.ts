/**
 * The edge's part of a graceful shutdown: once draining, the listening socket stops accepting connections and a request
 * arriving on a connection still open is refused with the catalog's `GW_SHUTTING_DOWN` (503, `Connection: close`), so
 * that a load balancer or client retries elsewhere; the requests already in flight are counted until they end. Streams
 * that only wait for notifications (a 2026-07-28 `subscriptions/listen`, a 2025-11-25 GET stream) are not waited for:
 * they have nothing to finish, and are ended cleanly last (`endOpen`), after whatever they should still hear (a task's
 * end) was written to them.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { catalogAnswer, isObject } from '../translate/index.js';
import type { TaskRuntime } from '../tasks/index.js';
import { InFlight } from '../upstream/index.js';

/** How long a shutdown waits for the last writes to open streams to be flushed before connections are closed. */
const STREAM_FLUSH_MS = 1_000;

/** A response not ended yet: a value of the drain's list. */
interface OpenResponse {
  readonly res: ServerResponse;
  /** A notification stream (not waited for). */
  stream: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's response in the drain's list (`null` before the drain's hook ran, or when refused by it). */
    gwOpen: OpenResponse | null;
  }
}

/** The edge during a shutdown. */
export class EdgeDrain {
  private draining = false;
  /**
   * Responses not ended yet, newest first, as an intrusive list rather than a `Map`. With a `Map` keyed by responses
   * (one insertion and one deletion per request) about a fifth of every young-generation collection survived and was
   * promoted, against under 3 % without it: scavenges took several times longer and pass-through lost about a fifth of
   * its throughput (docs/performance.md). The likely cause: the `Map` is rehashed every few dozen requests, each table
   * it leaves behind still points to the responses open at that moment, and once such a table sits in V8's old space
   * the young collections keep whatever it points to until a full collection finds it dead. An entry is unlinked, and
   * its own links cleared, when its response closes (`InFlight`, the list the modern upstream client keeps its exchanges in).
   */
  private readonly open = new InFlight<OpenResponse>();
  private readonly waiters = new Set<() => void>();

  /** Registers the hooks; call first, so that a refusal during a drain runs before any other hook. */
  constructor(private readonly app: FastifyInstance) {
    // Initialized by Fastify's request constructor: every request object keeps one shape.
    app.decorateRequest('gwOpen', null);
    app.addHook('onRequest', (request, reply, done) => {
      if (this.draining) {
        const answer = catalogAnswer('GW_SHUTTING_DOWN');
        void reply
          .code(answer.status)
          .header('connection', 'close')
          .type('application/json')
          .send(JSON.stringify({ jsonrpc: '2.0', id: null, error: answer.error }));
        return;
      }
      // A 2025-11-25 GET is the session's notification stream (2025-11-25 basic/transports §Listening for Messages).
      const entry: OpenResponse = { res: reply.raw, stream: request.method === 'GET' };
      const node = this.open.add(entry);
      request.gwOpen = entry;
      reply.raw.once('close', () => {
        this.open.remove(node);
        this.wake();
      });
      done();
    });
    app.addHook('preHandler', (request, _reply, done) => {
      const body = request.body;
      // A 2026-07-28 listen stream only carries notifications until the client leaves.
      if (isObject(body) && body.method === 'subscriptions/listen' && request.gwOpen) request.gwOpen.stream = true;
      done();
    });
  }

  /** Whether a drain has begun. */
  get active(): boolean {
    return this.draining;
  }

  /** Requests in flight that the drain waits for (notification streams excluded). */
  get inFlight(): number {
    let n = 0;
    for (const e of this.open.values()) if (!e.stream) n++;
    return n;
  }

  /** Refuses new requests from now on and stops accepting connections (idle keep-alive ones are closed). Idempotent. */
  start(): void {
    if (this.draining) return;
    this.draining = true;
    if (this.app.server.listening) this.app.server.close();
    this.app.server.closeIdleConnections?.();
  }

  /** Resolves at the next end of a request (or `wake()`), to look again at what is left. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.add(resolve));
  }

  /** Wakes whoever waits in `changed()` (something else the drain waits for has changed). */
  wake(): void {
    // Called at the end of every request: nothing to copy when no one waits (the drain alone waits).
    if (this.waiters.size === 0) return;
    for (const w of [...this.waiters]) w();
    this.waiters.clear();
  }

  /**
   * Ends every response still open (streams, and requests the deadline cut short) cleanly: what was written to them
   * is delivered, then they end; resolves once each is flushed, or after `boundMs`. Responses whose headers were not
   * sent yet are left to the close that follows (it closes their connections).
   */
  async endOpen(boundMs: number): Promise<void> {
    const flushing: Array<Promise<void>> = [];
    // Collected first (values): ending a response may unlink it (its close) while the list is walked.
    for (const { res } of this.open.values()) {
      if (!res.headersSent || res.writableEnded || res.destroyed) continue;
      flushing.push(new Promise<void>((resolve) => res.once('close', () => resolve())));
      // Whoever still writes to it (a relayed upstream stream, a handler finishing late) writes after its end: an
      // error Node emits on the response, harmless now, and fatal without a listener.
      res.on('error', () => {});
      res.end();
    }
    if (flushing.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(flushing), new Promise<void>((r) => (timer = setTimeout(r, boundMs)))]);
    clearTimeout(timer);
  }
}

/**
 * A graceful shutdown's steps: refuse new requests, let those in flight and the owned calls running here finish
 * within `graceMs`, stop what still runs, let open streams flush, then close.
 */
export async function drainThenClose(
  app: FastifyInstance,
  runtime: Pick<TaskRuntime, 'ownedRunning' | 'ownedIdle'>,
  graceMs: number,
  stopWork: () => Promise<void>,
  close: () => Promise<void>,
): Promise<void> {
  const drain = app.drain;
  drain.start();
  // Requests in flight and owned calls running here may finish within the grace; each end looks again.
  const deadline = Date.now() + graceMs;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  while ((drain.inFlight > 0 || runtime.ownedRunning > 0) && Date.now() < deadline) {
    await Promise.race([drain.changed(), runtime.ownedRunning > 0 ? runtime.ownedIdle() : new Promise<void>(() => {}), expired]);
  }
  clearTimeout(timer);
  drain.wake();
  if (drain.inFlight > 0 || runtime.ownedRunning > 0) {
    app.log.warn({ inFlight: drain.inFlight, ownedTasks: runtime.ownedRunning, graceMs }, 'shutdown grace over: stopping what still runs');
  }
  // What still runs stops now; clients still connected (listen streams, task result waits) are told here, and
  // their streams then end cleanly before the connections close.
  await stopWork();
  await drain.endOpen(STREAM_FLUSH_MS);
  await close();
}
