/**
 * The legacy face's session streams: the session's GET stream (2025-11-25 basic/transports §Listening for Messages
 * from the Server) and its `resources/subscribe`/`unsubscribe`, both served from one upstream `subscriptions/listen`
 * per session whose filter follows what the session needs; what that listen carries goes to the GET stream, or to a
 * bounded backlog while none is open.
 */
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
  Tally,
} from '../../translate/index.js';
import type { UpstreamListen } from '../../upstream/index.js';
import { inBandError, refuse } from '../errors.js';
import { answer, failInBand } from './replies.js';
import { callerOf, idKey, type BackgroundFailure, type FaceSession } from './session.js';
import type { RequestOutcome } from '../request-outcome.js';
import { openSse, writeSse } from '../response.js';

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
  streamOpened: (s: FaceSession) => void;
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

  /**
   * Serves a session's GET stream, or refuses it (one stream per session, within its principal's share of streams);
   * `admitted` is called once the stream is taken on.
   */
  async serveStream(request: FastifyRequest, reply: FastifyReply, s: FaceSession, admitted: () => void): Promise<FastifyReply> {
    if (!(singleHeader(request.headers, 'accept') ?? '').includes('text/event-stream')) {
      return refuse(reply, 'GW_STREAM_NOT_ACCEPTABLE', null);
    }
    if (s.stream || s.streamWanted) return refuse(reply, 'GW_STREAM_CONFLICT', null);
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
    let keepAlive: NodeJS.Timeout | undefined;
    raw.once('close', () => {
      this.streamsOf.remove(s.principal);
      this.openStreams--;
      if (keepAlive) clearInterval(keepAlive);
      if (s.stream === raw) s.stream = undefined;
      s.streamWanted = false;
      if (!s.ended.signal.aborted) void this.refreshListen(s).catch(this.o.failed('debug', 'listen not refreshed as the GET stream closed', s));
    });
    // The upstream listen is normally in place before the stream's headers go out, so a client that sees its GET
    // stream open misses no list change after that. An upstream slow to acknowledge holds the headers no longer than
    // GET_LISTEN_WAIT_MS: the stream opens and the listen attaches when it is acknowledged.
    s.streamWanted = true;
    const listening = this.refreshListen(s);
    listening.catch((e: unknown) => this.o.failed(s.ended.signal.aborted || raw.destroyed ? 'debug' : 'warn', 'upstream listen failed', s)(e));
    await settledWithin(listening, GET_LISTEN_WAIT_MS);
    if (raw.destroyed || s.ended.signal.aborted) {
      if (!raw.destroyed) raw.end();
      return reply;
    }
    keepAlive = openSse(raw, this.o.keepAliveMs);
    s.stream = raw;
    for (const n of s.backlog.splice(0)) writeSse(raw, n);
    // Task input that waited for a stream (2025-11-25 basic/utilities/tasks §Input Required Status: any SSE stream).
    this.o.streamOpened(s);
    return reply;
  }

  /** `resources/subscribe` and `resources/unsubscribe`; returns the request's outcome. */
  async subscription(reply: FastifyReply, s: FaceSession, req: JsonRpcRequest, params: JsonObject): Promise<RequestOutcome> {
    // An upstream that does not offer subscriptions is not asked (the face does not advertise them either).
    if (!offersSubscriptions(s.route.upstream.knownIdentity?.capabilities ?? {})) {
      return failInBand(reply, req.id, inBandError('GW_METHOD_NOT_SERVED', { args: [req.method] }));
    }
    if (typeof params.uri !== 'string') return failInBand(reply, req.id, inBandError('GW_URI_REQUIRED'));
    const uri = params.uri;
    const had = s.subscriptions.has(uri);
    if (req.method === 'resources/subscribe') s.subscriptions.add(uri);
    else s.subscriptions.delete(uri);
    let failed = false;
    // A repeated subscribe to a URI already held is not the client's only claim to it: giving it up drops nothing.
    const watched = req.method === 'resources/subscribe' && !had ? this.dropWhenGone(s, reply, req.id, uri) : undefined;
    try {
      // Answered once the upstream listen carries the new filter, so that no update after the answer is lost.
      await this.refreshListen(s);
    } catch (e) {
      failed = true;
      this.o.failed(s.ended.signal.aborted || watched?.signal.aborted ? 'debug' : 'warn', 'upstream listen failed', s)(e);
    } finally {
      watched?.done();
    }
    // Success only for a URI the upstream's acknowledgement granted.
    if (req.method === 'resources/subscribe' && (failed || !s.listenAccepted?.resourceSubscriptions?.includes(uri))) {
      s.subscriptions.delete(uri);
      return failInBand(reply, req.id, inBandError('GW_SUBSCRIBE_FAILED'));
    }
    return answer(reply, req.id, {});
  }

  /** A listen notification → the session's GET stream, or its bounded backlog while none is open. */
  deliver(s: FaceSession, n: JsonRpcNotification): void {
    if (n.method === 'notifications/resources/updated') {
      const uri = isObject(n.params) ? n.params.uri : undefined;
      if (typeof uri !== 'string' || !s.subscriptions.has(uri)) return;
    }
    if (s.stream && !s.stream.destroyed) {
      writeSse(s.stream, n);
      return;
    }
    s.backlog.push(n);
    if (s.backlog.length > this.o.maxBacklog) s.backlog.shift();
  }

  /**
   * A subscribe whose client closes the request or cancels it (notifications/cancelled) before it is answered: the
   * subscription is dropped (the client never learned it succeeded) and a newer listen change supersedes the pending
   * setup. With no other request waiting on that setup, it is simply aborted (the session's filter is the established
   * one again); others waiting are answered from the listen of the session's state without the dropped URI.
   */
  private dropWhenGone(s: FaceSession, reply: FastifyReply, id: JsonRpcRequest['id'], uri: string): { signal: AbortSignal; done(): void } {
    const key = idKey(id);
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort(new Error('client closed the request'));
    };
    const onGone = () => {
      s.subscriptions.delete(uri);
      void this.refreshListen(s).catch(this.o.failed('debug', 'listen not refreshed as a subscribe was given up', s));
    };
    s.inflight.set(key, gone);
    reply.raw.on('close', onClose);
    gone.signal.addEventListener('abort', onGone, { once: true });
    return {
      signal: gone.signal,
      done: () => {
        reply.raw.off('close', onClose);
        gone.signal.removeEventListener('abort', onGone);
        if (s.inflight.get(key) === gone) s.inflight.delete(key);
      },
    };
  }

  /**
   * Makes the session's upstream listen match what the session needs: list changes while its GET stream is open,
   * and its resource subscriptions. The new listen is opened before the old one is closed, so nothing is missed; the
   * old one stays in place if the new one fails. A change still waiting for its acknowledgement is superseded by a
   * newer one (whose filter, computed from the session's state when it runs, covers the older wish): the older setup
   * is aborted and its caller is answered by the newer change, so one stuck setup holds up nobody.
   */
  private refreshListen(s: FaceSession): Promise<void> {
    s.listenSetup?.abort(new Error('superseded by a newer listen change'));
    const setup = new AbortController();
    s.listenSetup = setup;
    const run = s.listenChain.then(async () => {
      if (setup.signal.aborted) throw setup.signal.reason;
      if (s.ended.signal.aborted) return;
      const caps = s.route.upstream.knownIdentity?.capabilities ?? {};
      const filter = sessionListenFilter(caps, { lists: s.streamWanted, resources: [...s.subscriptions] });
      const key = filter ? canonicalJson(filter) : '';
      if (key === s.listenKey) return;
      const old = s.listen;
      if (!filter) {
        s.listen = undefined;
        s.listenKey = '';
        s.listenAccepted = undefined;
        old?.abort();
        return;
      }
      const controller = new AbortController();
      const stop = (e: Event) => controller.abort((e.target as AbortSignal).reason);
      // Only while it sets up: once acknowledged, the listen is the session's, whoever asked for it.
      setup.signal.addEventListener('abort', stop, { once: true });
      let l: UpstreamListen;
      try {
        l = await s.route.upstream.listen(callerOf(s), filter, AbortSignal.any([controller.signal, s.ended.signal]));
      } finally {
        setup.signal.removeEventListener('abort', stop);
      }
      s.listen = controller;
      s.listenKey = key;
      s.listenAccepted = l.accepted;
      void this.readListen(s, l, controller);
      old?.abort();
    });
    const done = () => {
      if (s.listenSetup === setup) s.listenSetup = undefined;
    };
    const next: Promise<void> = run.then(done, (e: unknown) => {
      done();
      // Superseded: the newer change answers for it (and its failure is the newer caller's to report).
      if (setup.signal.aborted && !s.ended.signal.aborted && s.listenLatest !== next) return s.listenLatest;
      throw e;
    });
    s.listenLatest = next;
    // The chain only orders the changes (on the work itself, never on a caller's wait): a failure is the caller's.
    const logged = this.o.failed('debug', 'listen change failed', s);
    s.listenChain = run.catch((e: unknown) => {
      if (!setup.signal.aborted) logged(e);
    });
    return next;
  }

  private async readListen(s: FaceSession, l: UpstreamListen, controller: AbortController): Promise<void> {
    try {
      for await (const n of l.notifications) {
        if (controller.signal.aborted) break;
        s.listenFailures = 0;
        // A listen stream's tag means nothing to a legacy client (the upstream client may have removed it already).
        this.deliver(s, withoutSubscriptionId(n));
      }
    } catch {
      // the upstream ended the stream; handled below
    }
    if (controller.signal.aborted || s.ended.signal.aborted || s.listen !== controller) return;
    // The upstream ended a listen the session still needs: open it again, a bounded number of times in a row.
    s.listen = undefined;
    s.listenKey = '';
    if (++s.listenFailures > 5) return;
    const timer = setTimeout(() => void this.refreshListen(s).catch(this.o.failed('debug', 'listen retry failed', s)), 500 * s.listenFailures);
    timer.unref();
  }
}
