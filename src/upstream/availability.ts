/**
 * What the gateway knows about one upstream: which eras it speaks (the era probe's answer, or the operator's
 * pin) and whether it is reachable at all. Learned once and reused, re-learned when traffic says it changed
 * (the upstream restarted, or refuses what it used to accept). An upstream known to be down is not waited for:
 * callers are refused at once with a retry hint while the upstream is re-probed in the background with bounded
 * exponential backoff. An OAuth-protected upstream refuses the probe without a token (2025-11-25
 * basic/authorization): it is then reachable with its eras unknown ("refused"), and the first caller that brings
 * credentials has the probe asked again with its Authorization; that answer holds for everyone (eras belong to the
 * server, not the user).
 */
import { GatewayError, logFailure, NO_LOG, type Era, type LayerLogger } from '../translate/index.js';
import { downReason, UpstreamTimeoutError, UpstreamUnavailableError } from './errors.js';
import { probeLegacy, probeUpstream, type UpstreamEras } from './probe.js';

/** A `Retry-After` in whole seconds, at least 1 (RFC 9110 §10.2.3 takes no fractions). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The upstream is known to be down; the caller is answered at once, to retry after `retryAfterMs`
 * (GW_UPSTREAM_DOWN, 503 with `Retry-After` in whole seconds, at least 1).
 */
export class UpstreamDownError extends GatewayError {
  constructor(
    readonly upstream: string,
    readonly retryAfterMs: number,
    options?: { cause?: unknown },
  ) {
    super('GW_UPSTREAM_DOWN', { args: [upstream, wholeSeconds(retryAfterMs)], retryAfterSeconds: wholeSeconds(retryAfterMs), cause: options?.cause });
  }
}

/** How an upstream's availability is learned. */
export interface AvailabilityOptions {
  /** The upstream's name (for error messages). */
  name: string;
  /**
   * Asks the upstream which eras it speaks (the era probe); throws when it cannot be reached. For a pinned
   * upstream it serves as a liveness check only: its answer about eras is ignored. `authorization`: a caller's
   * credentials, sent with the questions (an OAuth-protected upstream refuses them without).
   */
  probe: (signal: AbortSignal, authorization?: string) => Promise<UpstreamEras>;
  /**
   * Asks an upstream that answered `server/discover` whether it also speaks 2025-11-25 (the probe leaves that
   * unasked, `legacyUnasked`); absent, such an upstream is taken as not speaking it.
   */
  probeLegacy?: (signal: AbortSignal, authorization?: string) => Promise<Pick<UpstreamEras, 'legacy' | 'identity'>>;
  /** Eras pinned by configuration: no probe until traffic says something is wrong. */
  pinned?: UpstreamEras;
  /** First wait before re-probing an upstream that is down; doubled after each failed probe. Default 1 s. */
  initialBackoffMs?: number;
  /** Upper bound of that wait. Default 30 s. */
  maxBackoffMs?: number;
  /**
   * Least time between the end of one probe and the start of a re-probe asked for by traffic, and between a
   * credentialed probe that was refused (a bad token) and the next one. Default 1 s.
   */
  minReprobeMs?: number;
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
  /**
   * A source of news about the upstream (an stdio upstream's process opened, or failed to): each piece of news
   * has it probed again at once, and a pinned upstream is probed at start too (a local process is cheap to ask, and
   * readiness must not say `up` for one that cannot open a session). Returns the unsubscribe.
   */
  watch?: (news: () => void) => () => void;
}

/** The outcome of one probe: the upstream answered (with what it speaks), or not (and when it is probed next). */
export type AvailabilityChange = { up: true; eras: UpstreamEras } | { up: false; error: unknown; retryInMs: number };

/**
 * What callers get while the eras are refused-unknown and their own probe is not to be made (no credentials, a
 * refused token, or one refused moments ago): the fallback's reading (2026-07-28 basic/transports/streamable-http
 * §Backward Compatibility), so their request goes out as it would have, and the upstream's own 401/403 with its
 * challenge reaches them. Never stored as the upstream's eras.
 */
const REFUSED: UpstreamEras = Object.freeze({ modern: false, legacy: false, refused: true }) as UpstreamEras;

/** How often a probe that left one question unanswered is repeated before its guess stands. */
const MAX_INCOMPLETE_REASKS = 4;

interface Down {
  error: unknown;
  /** When the next background probe starts (epoch ms). */
  retryAt: number;
  delayMs: number;
}

/** One upstream's eras and reachability. */
export class UpstreamAvailability {
  private known: UpstreamEras | undefined;
  /** The probe in flight. Callers await it only while nothing is known yet (not while the upstream is down). */
  private pending: Promise<UpstreamEras> | undefined;
  private down: Down | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastProbeEnd = Number.NEGATIVE_INFINITY;
  /** The last probe was refused for want of credentials while nothing was known: reachable, eras unknown. */
  private refused = false;
  /** When the last credentialed probe that was itself refused ended (a bad-token flood is not a probe flood). */
  private lastRefusedCredentialed = Number.NEGATIVE_INFINITY;
  /**
   * A 2025-11-25 client has needed the 2025-11-25 side (legacyEras): every later probe that leaves it unasked has it
   * asked at once, so that a re-probe (the upstream restarted, maybe in another era) does not forget what those
   * clients depend on.
   */
  private legacyNeeded = false;
  /** The question about the 2025-11-25 side in flight (legacyEras), joined by concurrent callers. */
  private legacyAsking: Promise<UpstreamEras> | undefined;
  /** Probes in a row that left a question unanswered. */
  private incompleteStreak = 0;
  private readonly listeners = new Set<(change: AvailabilityChange) => void>();
  private readonly aborter = new AbortController();
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly minReprobeMs: number;

  /** Probes from now on send these static headers (a reload); set by `upstreamAvailability`, else a no-op. */
  useHeaders: (headers: Record<string, string>) => void = () => {};

  /** A background probe's failure is the upstream's state (down, re-probed with backoff), said here at debug. */
  private readonly probeFailed: (e: unknown) => void;
  private readonly unwatch: () => void;

  constructor(private readonly opts: AvailabilityOptions) {
    this.known = opts.pinned;
    this.unwatch = opts.watch?.(() => this.recheck()) ?? (() => {});
    this.probeFailed = logFailure(opts.log ?? NO_LOG, 'debug', 'background probe failed; the upstream is down until one succeeds', { upstream: opts.name });
    this.initialBackoffMs = opts.initialBackoffMs ?? 1_000;
    this.maxBackoffMs = Math.max(this.initialBackoffMs, opts.maxBackoffMs ?? 30_000);
    this.minReprobeMs = opts.minReprobeMs ?? 1_000;
  }

  /** What was last learned (or pinned), without I/O: the discover result and initialize identity among it. */
  get current(): UpstreamEras | undefined {
    return this.known;
  }

  /** Whether the upstream is known to be down right now. */
  get isDown(): boolean {
    return this.down !== undefined;
  }

  /**
   * For operators: `down`, `up` (its eras known or pinned, or it refused the probe for want of credentials: it
   * answered), or `unknown` (not asked yet).
   */
  get state(): 'up' | 'down' | 'unknown' {
    return this.down ? 'down' : this.known || this.refused ? 'up' : 'unknown';
  }

  /**
   * Why the upstream is down, for operators (`/healthz`): what it answered ("HTTP 404 text/html to server/discover and
   * initialize") or how it failed ("connection refused"); never an address. `undefined` while it is not down.
   */
  get downReason(): string | undefined {
    return this.down ? downReason(this.down.error) : undefined;
  }

  /**
   * The probe at start, in the background (nothing waits for it): an upstream that is dead or is no MCP server is known
   * before the first request. Callers arriving meanwhile join it. A pinned upstream is not probed (the pin's promise:
   * no probe until traffic says something is wrong), unless it is watched (`watch`).
   */
  start(): void {
    if ((this.opts.pinned && !this.opts.watch) || this.aborter.signal.aborted || this.pending || this.down) return;
    void this.probeNow().catch(this.probeFailed);
  }

  /** Whether the upstream refused the probe for want of credentials and its eras are not known yet. */
  get erasRefused(): boolean {
    return this.refused && !this.known && !this.down;
  }

  /**
   * The eras a client of `clientEra` is served by when they are known without asking anything (`eras` and
   * `legacyEras` start here and resolve to them at once), else `undefined`: the request path then awaits those. Saves
   * every request a promise while the upstream is known.
   */
  knownEras(clientEra: Era): UpstreamEras | undefined {
    const known = this.known;
    if (this.down || !known) return undefined;
    if (clientEra === 'legacy') {
      this.legacyNeeded = true;
      if (known.legacyUnasked && this.opts.probeLegacy) return undefined;
    }
    return known;
  }

  /**
   * The upstream's eras. Known → at once. Not known yet → the one shared probe is awaited; if it fails, its own
   * error is thrown (the first callers wait at most one probe timeout). Known to be down → UpstreamDownError at
   * once, without touching the upstream. Refused for want of credentials → a probe with the caller's
   * `authorization` (one at a time, joined; after a refused one, none for `minReprobeMs`); without credentials, or
   * when that probe is refused too, the caller gets a `refused` answer that is not remembered (see REFUSED).
   */
  eras(authorization?: string): Promise<UpstreamEras> {
    // A 2026-07-28 client's reading: known and not down (the 2025-11-25 side is legacyEras' question).
    const known = this.knownEras('modern');
    if (known) return Promise.resolve(known);
    if (this.down) return Promise.reject(this.downError(this.down));
    if (this.refused && !this.pending) return this.probeWith(authorization);
    return this.probeNow().then((eras) => (eras.refused ? this.probeWith(authorization) : eras));
  }

  /**
   * The eras with the 2025-11-25 side known, for a 2025-11-25 client: an upstream the probe found modern, its
   * 2025-11-25 side unasked, is asked now (one question, joined by concurrent callers) and the answer is kept with the
   * rest. A question that gets no answer reads as "no" for this caller (the legacy face serves it) and stays unasked.
   */
  async legacyEras(authorization?: string): Promise<UpstreamEras> {
    this.legacyNeeded = true;
    const known = this.knownEras('legacy');
    if (known) return known;
    const eras = await this.eras(authorization);
    const ask = this.opts.probeLegacy;
    if (!eras.legacyUnasked || !ask) return eras;
    this.legacyAsking ??= ask(this.aborter.signal, authorization)
      .then(
        (learned) => {
          const next = withLegacySide(eras, learned);
          // Kept only if nothing was learned meanwhile (a re-probe's answer is newer).
          if (this.known === eras) this.known = next;
          return next;
        },
        (e: unknown) => {
          logFailure(this.opts.log ?? NO_LOG, 'debug', "the upstream's 2025-11-25 side could not be asked; served as 2026-07-28 only", {
            upstream: this.opts.name,
          })(e);
          return eras;
        },
      )
      .finally(() => {
        this.legacyAsking = undefined;
      });
    return this.legacyAsking;
  }

  /** The credentialed probe, when there are credentials and no refused one ended within `minReprobeMs`. */
  private probeWith(authorization: string | undefined): Promise<UpstreamEras> {
    if (this.known) return Promise.resolve(this.known);
    if (this.pending) return this.pending;
    if (!authorization || Date.now() - this.lastRefusedCredentialed < this.minReprobeMs) return Promise.resolve(REFUSED);
    return this.probeNow(authorization);
  }

  /**
   * Traffic says the upstream may have changed: it restarted, refused a request in a way that says the era is
   * wrong, or failed to answer. The eras are re-learned by a background probe; meanwhile callers keep what is
   * known (a caller's bad request must not make others wait), and if the probe fails the upstream is down.
   * A suspicion drawn from an answer (`failed` false: a status a client's own mistake may also cause) starts at
   * most one probe per `minReprobeMs`; one drawn from a failure of the upstream itself probes at once. Nothing
   * happens while a probe is running or due.
   */
  suspect(failed = false): void {
    if (this.aborter.signal.aborted || this.down || this.pending) return;
    this.reprobeAfter(failed ? 0 : Math.max(0, this.lastProbeEnd + this.minReprobeMs - Date.now()));
  }

  /** News from `watch`: probed again at once, down or not, unless a probe is running. */
  private recheck(): void {
    if (this.aborter.signal.aborted || this.pending) return;
    this.reprobeAfter(0);
  }

  /** Probes in the background after `wait` ms (at once for 0); a probe already due keeps its time. */
  private reprobeAfter(wait: number): void {
    if (wait === 0) {
      this.clearTimer();
      void this.probeNow().catch(this.probeFailed);
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.probeNow().catch(this.probeFailed);
    }, wait);
    this.timer.unref();
  }

  /** Calls `listener` after each probe, once its outcome is in effect; returns the unsubscribe. */
  onChange(listener: (change: AvailabilityChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops background probes. Idempotent. */
  close(): void {
    this.unwatch();
    this.clearTimer();
    this.aborter.abort(new Error('the gateway is closing'));
    this.listeners.clear();
  }

  /**
   * Starts the one probe (or joins it); settles the state from its outcome. A refusal for want of credentials
   * teaches nothing about eras: what is known stays (a re-probe without a token must not forget what a caller's
   * token learned), and with nothing known the eras are refused-unknown.
   */
  private probeNow(authorization?: string): Promise<UpstreamEras> {
    if (this.pending) return this.pending;
    const probing = this.probeAll(authorization).then(
      (eras) => {
        this.settle(probing);
        const wasDown = this.down !== undefined;
        this.down = undefined;
        if (eras.refused && !this.opts.pinned) {
          if (authorization) this.lastRefusedCredentialed = Date.now();
          this.incompleteStreak = 0;
          if (this.known) {
            this.emit({ up: true, eras: this.known });
            return this.known;
          }
          if (!this.refused || wasDown) {
            (this.opts.log ?? NO_LOG).debug(
              { upstream: this.opts.name },
              'the upstream refused the era probe for want of credentials; its eras are learned with the first caller that brings a token',
            );
          }
          this.refused = true;
          this.emit({ up: true, eras: REFUSED });
          return REFUSED;
        }
        this.refused = false;
        const known = this.opts.pinned ?? eras;
        this.known = known;
        this.emit({ up: true, eras: known });
        // A question left unanswered is asked again rather than taken as a "no": a few times, each wait twice the
        // last (an upstream that never answers one of them costs a bounded number of probes).
        this.incompleteStreak = eras.incomplete ? this.incompleteStreak + 1 : 0;
        if (eras.incomplete && this.incompleteStreak <= MAX_INCOMPLETE_REASKS) {
          this.reprobeAfter(Math.min(this.minReprobeMs * 2 ** (this.incompleteStreak - 1), this.maxBackoffMs));
        }
        return known;
      },
      (error: unknown) => {
        this.settle(probing);
        if (!this.aborter.signal.aborted) this.markDown(error);
        throw error;
      },
    );
    this.pending = probing;
    return probing;
  }

  /**
   * The probe, and, once a 2025-11-25 client has needed it (`legacyNeeded`), the 2025-11-25 side of an upstream the
   * probe found modern, in the same outcome: a re-probe does not forget what those clients depend on. A question
   * about that side that gets no answer leaves it unasked.
   */
  private async probeAll(authorization: string | undefined): Promise<UpstreamEras> {
    const eras = await this.opts.probe(this.aborter.signal, authorization);
    const ask = this.opts.probeLegacy;
    if (!eras.legacyUnasked || !this.legacyNeeded || !ask) return eras;
    const learned = await ask(this.aborter.signal, authorization).catch(() => undefined);
    return learned ? withLegacySide(eras, learned) : eras;
  }

  private settle(probing: Promise<UpstreamEras>): void {
    if (this.pending === probing) this.pending = undefined;
    this.lastProbeEnd = Date.now();
  }

  /** Remembers the failure and schedules the next probe, each wait twice the last, up to the bound. */
  private markDown(error: unknown): void {
    const delayMs = this.down ? Math.min(this.down.delayMs * 2, this.maxBackoffMs) : this.initialBackoffMs;
    this.down = { error, retryAt: Date.now() + delayMs, delayMs };
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.probeNow().catch(this.probeFailed);
    }, delayMs);
    this.timer.unref();
    this.emit({ up: false, error, retryInMs: delayMs });
  }

  private emit(change: AvailabilityChange): void {
    for (const l of [...this.listeners]) {
      try {
        l(change);
      } catch (e) {
        // a listener's fault is its own
        logFailure(this.opts.log ?? NO_LOG, 'warn', 'availability listener failed', { upstream: this.opts.name })(e);
      }
    }
  }

  private downError(down: Down): UpstreamDownError {
    return new UpstreamDownError(this.opts.name, Math.max(0, down.retryAt - Date.now()), { cause: down.error });
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** An era pinned by configuration (`upstreams[].era`); `auto` means "probe". */
export type EraSetting = 'auto' | 'modern' | 'legacy' | 'dual';

/** The eras a pinned setting stands for; `undefined` for `auto`. */
function pinnedEras(setting: EraSetting): UpstreamEras | undefined {
  switch (setting) {
    case 'auto':
      return undefined;
    case 'modern':
      return { modern: true, legacy: false };
    case 'legacy':
      return { modern: false, legacy: true };
    case 'dual':
      return { modern: true, legacy: true };
  }
}

/** What one configured upstream's availability is built from. */
export interface UpstreamAvailabilityConfig {
  name: string;
  url: string;
  headers: Record<string, string>;
  era: EraSetting;
  /** Bound on each probe question. */
  probeTimeoutMs: number;
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
  /** The process of an stdio upstream (stdio/host.ts), served at `url`. */
  process?: UpstreamProcessHealth;
}

/** What availability asks of an stdio upstream's process. */
export interface UpstreamProcessHealth {
  /** Why it cannot serve now (could not start, exited, refused its pinned era's handshake); `undefined` when it serves. */
  failure(): Promise<string | undefined>;
  /** Calls `listener` each time a process has opened (or failed to); returns the unsubscribe. */
  onOpened(listener: () => void): () => void;
}

/**
 * The availability of one configured upstream, probed with `probeUpstream` unless its era is pinned. An stdio
 * upstream's process answers first: one that cannot serve is down for the reason it gives (its command and the OS
 * error, its exit, its refused handshake) rather than for the loopback's 503; a pinned one that serves is up without
 * a question over the loopback (its opening exchange was its pinned era's handshake).
 */
export function upstreamAvailability(c: UpstreamAvailabilityConfig): UpstreamAvailability {
  const target = { url: c.url, headers: { ...c.headers }, timeoutMs: c.probeTimeoutMs, ...(c.log ? { log: c.log } : {}) };
  const pinned = pinnedEras(c.era);
  const proc = c.process;
  const probe = (signal: AbortSignal, authorization?: string): Promise<UpstreamEras> => probeUpstream(target, signal, authorization);
  const availability = new UpstreamAvailability({
    name: c.name,
    probe: proc ? (signal, authorization) => probeProcess(proc, c.probeTimeoutMs, pinned, () => probe(signal, authorization)) : probe,
    probeLegacy: (signal, authorization) => probeLegacy(target, signal, authorization),
    ...(pinned ? { pinned } : {}),
    ...(c.log ? { log: c.log } : {}),
    ...(proc ? { watch: (news: () => void) => proc.onOpened(news) } : {}),
  });
  availability.useHeaders = (headers) => {
    target.headers = { ...headers };
  };
  return availability;
}

/** The probe of an stdio upstream: its process's failure first (bounded), then the pinned eras or the loopback probe. */
async function probeProcess(
  proc: UpstreamProcessHealth,
  timeoutMs: number,
  pinned: UpstreamEras | undefined,
  probe: () => Promise<UpstreamEras>,
): Promise<UpstreamEras> {
  const failed = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UpstreamTimeoutError('the process did not answer its opening exchange')), timeoutMs);
    });
    const reason = await Promise.race([proc.failure(), bound]).finally(() => clearTimeout(timer));
    if (reason !== undefined) throw new UpstreamUnavailableError(reason, { reason });
  };
  await failed();
  if (pinned) return pinned;
  try {
    return await probe();
  } catch (e) {
    // The process may have gone while the probe ran: its reason says more than the loopback's.
    await failed();
    throw e;
  }
}

/** The eras with the answer about the 2025-11-25 side folded in: no longer unasked. */
function withLegacySide(eras: UpstreamEras, learned: Pick<UpstreamEras, 'legacy' | 'identity'>): UpstreamEras {
  const { legacyUnasked: _asked, ...rest } = eras;
  return { ...rest, ...learned };
}
