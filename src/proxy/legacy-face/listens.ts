/**
 * The legacy face's session streams: the session's GET stream (2025-11-25 basic/transports §Listening for Messages
 * from the Server) and its `resources/subscribe`/`unsubscribe`, both served from one upstream `subscriptions/listen`
 * per session whose filter follows what the session needs; what that listen carries goes to the GET stream, or to a
 * bounded backlog while none is open. Each session's share (its stream, subscriptions and listen) is its own
 * SessionStream, made here and ended with the session.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  canonicalJson,
  isObject,
  offersSubscriptions,
  sessionListenFilter,
  singleHeader,
  withoutSubscriptionId,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type ListenFilter,
  Tally,
} from '../../translate/index.js';
import type { UpstreamListen } from '../../upstream/index.js';
import { inBandError, refuse } from '../errors.js';
import type { RequestOutcome } from '../request-outcome.js';
import { openSse, stopWhenClientLeaves, writeSse } from '../response.js';
import { idKey } from './calls.js';
import { answer, failInBand } from './replies.js';
import type { BackgroundFailure, ClientSession } from './session.js';
import type { StreamSink } from './tasks.js';

/** Longest wait of a GET stream's headers for its upstream listen's acknowledgement. */
const GET_LISTEN_WAIT_MS = 1_000;

/** Resolves when `p` settles or `ms` have passed, whichever is first; never rejects. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.then(noop, noop), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function noop(): void {}

/** What the session streams work with. */
export interface FaceListensOptions {
  /** SSE keep-alive comment interval. */
  keepAliveMs: number;
  /** Notifications kept for a session whose GET stream is not open (oldest dropped first). */
  maxBacklog: number;
  /** Open GET streams one principal may hold. */
  maxStreamsPerPrincipal: number;
  /** Background failures of a session. */
  failed: BackgroundFailure;
  /** A session's GET stream opened: what waited for a stream (task input) may go out. */
  streamOpened: (s: ClientSession) => void;
}

/** One session's GET stream, resource subscriptions and the upstream listen that serves them. */
export class SessionStream {
  private readonly subscriptions = new Set<string>();
  /** The open GET stream, if any. */
  private raw: ServerResponse | undefined;
  /** A GET stream is open or opening: the upstream listen carries list changes. */
  private wanted = false;
  private readonly backlog: JsonRpcNotification[] = [];
  /** The upstream listen serving the session and the filter it was opened with. */
  private listen: AbortController | undefined;
  private listenKey = '';
  /** What the upstream's acknowledgement granted of that filter. */
  private listenAccepted: ListenFilter | undefined;
  /** Orders listen changes (subscribe, unsubscribe, GET open and close). */
  private listenChain: Promise<void> = Promise.resolve();
  /** The change still setting up its listen, if any: a newer change supersedes it (refresh). */
  private listenSetup: AbortController | undefined;
  /** What the latest change's caller awaits; a superseded change's caller awaits it too. */
  private listenLatest: Promise<void> = Promise.resolve();
  private listenFailures = 0;

  constructor(
    private readonly s: ClientSession,
    private readonly o: FaceListensOptions,
  ) {}

  /** Whether a GET stream is open or opening (a session has one at a time). */
  get busy(): boolean {
    return this.raw !== undefined || this.wanted;
  }

  /**
   * Serves an admitted GET stream on `raw` (already hijacked): the upstream listen is normally in place before the
   * stream's headers go out; the backlog goes out first. False when the stream closed or the session ended before it
   * opened.
   */
  async serve(raw: ServerResponse): Promise<boolean> {
    const s = this.s;
    let keepAlive: NodeJS.Timeout | undefined;
    raw.once('close', () => {
      if (keepAlive) clearInterval(keepAlive);
      if (this.raw === raw) this.raw = undefined;
      this.wanted = false;
      if (!s.ended.aborted) void this.refresh().catch(this.o.failed('debug', 'listen not refreshed as the GET stream closed', s));
    });
    // The upstream listen is normally in place before the stream's headers go out, so a client that sees its GET
    // stream open misses no list change after that. An upstream slow to acknowledge holds the headers no longer than
    // GET_LISTEN_WAIT_MS: the stream opens and the listen attaches when it is acknowledged.
    this.wanted = true;
    const listening = this.refresh();
    listening.catch((e: unknown) => this.o.failed(s.ended.aborted || raw.destroyed ? 'debug' : 'warn', 'upstream listen failed', s)(e));
    await settledWithin(listening, GET_LISTEN_WAIT_MS);
    if (raw.destroyed || s.ended.aborted) {
      if (!raw.destroyed) raw.end();
      return false;
    }
    keepAlive = openSse(raw, this.o.keepAliveMs);
    this.raw = raw;
    for (const n of this.backlog.splice(0)) writeSse(raw, n);
    return true;
  }

  /** The open GET stream as a place to send to, if one is open. */
  sink(): StreamSink | undefined {
    const raw = this.raw;
    if (!raw || raw.destroyed || raw.writableEnded) return undefined;
    return { alive: () => !raw.destroyed && !raw.writableEnded, send: (m) => writeSse(raw, m) };
  }

  /** A listen notification → the GET stream, or the bounded backlog while none is open. */
  deliver(n: JsonRpcNotification): void {
    if (n.method === 'notifications/resources/updated') {
      const uri = isObject(n.params) ? n.params.uri : undefined;
      if (typeof uri !== 'string' || !this.subscriptions.has(uri)) return;
    }
    if (this.raw && !this.raw.destroyed) {
      writeSse(this.raw, n);
      return;
    }
    this.backlog.push(n);
    if (this.backlog.length > this.o.maxBacklog) this.backlog.shift();
  }

  /** Whether the session is subscribed to `uri`. */
  subscribed(uri: string): boolean {
    return this.subscriptions.has(uri);
  }

  /** Adds or drops a subscription (the listen follows at the next refresh). */
  want(uri: string, subscribed: boolean): void {
    if (subscribed) this.subscriptions.add(uri);
    else this.subscriptions.delete(uri);
  }

  /** Whether the upstream's acknowledgement of the current listen granted `uri`. */
  grants(uri: string): boolean {
    return this.listenAccepted?.resourceSubscriptions?.includes(uri) ?? false;
  }

  /**
   * Makes the session's upstream listen match what the session needs: list changes while its GET stream is open,
   * and its resource subscriptions. The new listen is opened before the old one is closed, so nothing is missed; the
   * old one stays in place if the new one fails. A change still waiting for its acknowledgement is superseded by a
   * newer one (whose filter, computed from the session's state when it runs, covers the older wish): the older setup
   * is aborted and its caller is answered by the newer change, so one stuck setup holds up nobody.
   */
  refresh(): Promise<void> {
    const s = this.s;
    this.listenSetup?.abort(new Error('superseded by a newer listen change'));
    const setup = new AbortController();
    this.listenSetup = setup;
    const run = this.listenChain.then(async () => {
      if (setup.signal.aborted) throw setup.signal.reason;
      if (s.ended.aborted) return;
      const caps = s.route.upstream.knownIdentity?.capabilities ?? {};
      const filter = sessionListenFilter(caps, { lists: this.wanted, resources: [...this.subscriptions] });
      const key = filter ? canonicalJson(filter) : '';
      if (key === this.listenKey) return;
      const old = this.listen;
      if (!filter) {
        this.listen = undefined;
        this.listenKey = '';
        this.listenAccepted = undefined;
        old?.abort();
        return;
      }
      const controller = new AbortController();
      const stop = (e: Event) => controller.abort((e.target as AbortSignal).reason);
      // Only while it sets up: once acknowledged, the listen is the session's, whoever asked for it.
      setup.signal.addEventListener('abort', stop, { once: true });
      let l: UpstreamListen;
      try {
        l = await s.route.upstream.listen(s.callerOf(), filter, AbortSignal.any([controller.signal, s.ended]));
      } finally {
        setup.signal.removeEventListener('abort', stop);
      }
      this.listen = controller;
      this.listenKey = key;
      this.listenAccepted = l.accepted;
      void this.readListen(l, controller);
      old?.abort();
    });
    const done = () => {
      if (this.listenSetup === setup) this.listenSetup = undefined;
    };
    const next: Promise<void> = run.then(done, (e: unknown) => {
      done();
      // Superseded: the newer change answers for it (and its failure is the newer caller's to report).
      if (setup.signal.aborted && !s.ended.aborted && this.listenLatest !== next) return this.listenLatest;
      throw e;
    });
    this.listenLatest = next;
    // The chain only orders the changes (on the work itself, never on a caller's wait): a failure is the caller's.
    const logged = this.o.failed('debug', 'listen change failed', s);
    this.listenChain = run.catch((e: unknown) => {
      if (!setup.signal.aborted) logged(e);
    });
    return next;
  }

  /** The session ended: its upstream listen closes, its GET stream ends. */
  end(): void {
    this.listen?.abort();
    if (this.raw && !this.raw.writableEnded) this.raw.end();
    this.raw = undefined;
  }

  private async readListen(l: UpstreamListen, controller: AbortController): Promise<void> {
    const s = this.s;
    try {
      for await (const n of l.notifications) {
        if (controller.signal.aborted) break;
        this.listenFailures = 0;
        // A listen stream's tag means nothing to a legacy client (the upstream client may have removed it already).
        this.deliver(withoutSubscriptionId(n));
      }
    } catch {
      // the upstream ended the stream; handled below
    }
    if (controller.signal.aborted || s.ended.aborted || this.listen !== controller) return;
    // The upstream ended a listen the session still needs: open it again, a bounded number of times in a row.
    this.listen = undefined;
    this.listenKey = '';
    if (++this.listenFailures > 5) return;
    const timer = setTimeout(() => void this.refresh().catch(this.o.failed('debug', 'listen retry failed', s)), 500 * this.listenFailures);
    timer.unref();
  }
}

/** GET streams, resource subscriptions, and the upstream listen of each session that serves them. */
export class FaceListens {
  /** Open GET streams per principal (entries removed at zero). */
  private readonly streamsOf = new Tally();
  /** GET streams open (all principals), for the metrics. */
  private openStreams = 0;

  constructor(private readonly o: FaceListensOptions) {}

  /** GET streams open here (an operator gauge). */
  get streamCount(): number {
    return this.openStreams;
  }

  /** A new session's streams part. */
  open(s: ClientSession): SessionStream {
    return new SessionStream(s, this.o);
  }

  /**
   * Serves a session's GET stream, or refuses it (one stream per session, within its principal's share of streams);
   * `admitted` is called once the stream is taken on.
   */
  async serveStream(request: FastifyRequest, reply: FastifyReply, s: ClientSession, admitted: () => void): Promise<FastifyReply> {
    if (!(singleHeader(request.headers, 'accept') ?? '').includes('text/event-stream')) {
      return refuse(reply, 'GW_STREAM_NOT_ACCEPTABLE', null);
    }
    if (s.stream.busy) return refuse(reply, 'GW_STREAM_CONFLICT', null);
    // The principal's share of streams (each also holds an upstream listen), checked before that listen is opened.
    const open = this.streamsOf.of(s.principal);
    if (open >= this.o.maxStreamsPerPrincipal) {
      return refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', null, { args: ['open GET streams', this.o.maxStreamsPerPrincipal] });
    }
    this.streamsOf.add(s.principal);
    this.openStreams++;
    admitted();

    reply.hijack();
    const raw = reply.raw;
    raw.once('close', () => {
      this.streamsOf.remove(s.principal);
      this.openStreams--;
    });
    // Task input that waited for a stream (2025-11-25 basic/utilities/tasks §Input Required Status: any SSE stream).
    if (await s.stream.serve(raw)) this.o.streamOpened(s);
    return reply;
  }

  /** `resources/subscribe` and `resources/unsubscribe`; returns the request's outcome. */
  async subscription(reply: FastifyReply, s: ClientSession, req: JsonRpcRequest, params: JsonObject): Promise<RequestOutcome> {
    // An upstream that does not offer subscriptions is not asked (the face does not advertise them either).
    if (!offersSubscriptions(s.route.upstream.knownIdentity?.capabilities ?? {})) {
      return failInBand(reply, req.id, inBandError('GW_METHOD_NOT_SERVED', { args: [req.method] }));
    }
    if (typeof params.uri !== 'string') return failInBand(reply, req.id, inBandError('GW_URI_REQUIRED'));
    const uri = params.uri;
    const had = s.stream.subscribed(uri);
    s.stream.want(uri, req.method === 'resources/subscribe');
    let failed = false;
    // A repeated subscribe to a URI already held is not the client's only claim to it: giving it up drops nothing.
    const watched = req.method === 'resources/subscribe' && !had ? this.dropWhenGone(s, reply, req.id, uri) : undefined;
    try {
      // Answered once the upstream listen carries the new filter, so that no update after the answer is lost.
      await s.stream.refresh();
    } catch (e) {
      failed = true;
      this.o.failed(s.ended.aborted || watched?.signal.aborted ? 'debug' : 'warn', 'upstream listen failed', s)(e);
    } finally {
      watched?.done();
    }
    // Success only for a URI the upstream's acknowledgement granted.
    if (req.method === 'resources/subscribe' && (failed || !s.stream.grants(uri))) {
      s.stream.want(uri, false);
      return failInBand(reply, req.id, inBandError('GW_SUBSCRIBE_FAILED'));
    }
    return answer(reply, req.id, {});
  }

  /**
   * A subscribe whose client closes the request or cancels it (notifications/cancelled) before it is answered: the
   * subscription is dropped (the client never learned it succeeded) and a newer listen change supersedes the pending
   * setup. With no other request waiting on that setup, it is simply aborted (the session's filter is the established
   * one again); others waiting are answered from the listen of the session's state without the dropped URI.
   */
  private dropWhenGone(s: ClientSession, reply: FastifyReply, id: JsonRpcRequest['id'], uri: string): { signal: AbortSignal; done(): void } {
    const gone = new AbortController();
    const onGone = () => {
      s.stream.want(uri, false);
      void s.stream.refresh().catch(this.o.failed('debug', 'listen not refreshed as a subscribe was given up', s));
    };
    const release = s.calls.track(idKey(id), gone);
    const unwatch = stopWhenClientLeaves(reply, gone);
    gone.signal.addEventListener('abort', onGone, { once: true });
    return {
      signal: gone.signal,
      done: () => {
        unwatch();
        gone.signal.removeEventListener('abort', onGone);
        release();
      },
    };
  }
}
