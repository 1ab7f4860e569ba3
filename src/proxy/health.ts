/**
 * Readiness (`/readyz`): whether this instance can serve now, cheaply and without revealing anything sensitive. Two
 * checks: the task store answers (a ping bounded by the store's command timeout, its answer reused briefly and shared
 * by concurrent callers), and each upstream's era is known and it is not down (what `UpstreamAvailability` already
 * knows; readiness asks for a re-probe at most once per interval per upstream, in the background, so that an
 * upstream that went away while no traffic reached it is noticed, and never probes on the caller's time).
 * The answer names upstreams, their states and, for one that is down, why (`downReason`: what it answered or how it
 * failed, as `/healthz` says it: an stdio command that could not start, a pinned era's handshake refused); no URL, no
 * principal.
 */
import type { FastifyBaseLogger } from 'fastify';
import { errorSummary } from '../translate/index.js';
import { downReason, type AvailabilityChange, type UpstreamAvailability } from '../upstream/index.js';

/** What readiness checks. */
export interface ReadinessOptions {
  /** The task store (absent: no store check). */
  store?: { ping(): Promise<void> };
  upstreams: ReadonlyArray<{ name: string; availability: UpstreamAvailability }>;
  /** How long one store answer is reused (concurrent and frequent checks share one ping). */
  cacheMs: number;
  /** Least time between two re-probes of one upstream that readiness asks for. */
  upstreamCheckMs: number;
  /** Backstop on the store ping, should a store not bound its own (the Redis store bounds it by its command timeout). */
  storeTimeoutMs?: number;
}

/** The answer of `/readyz`. */
export interface ReadinessReport {
  status: 'ready' | 'not ready';
  /** The checks that failed: `store`, `upstream:<name>`. */
  failed: string[];
  checks: { store: 'ok' | 'unreachable' | 'none'; upstreams: Array<{ name: string; state: 'up' | 'down' | 'unknown'; reason?: string }> };
}

const DEFAULT_STORE_TIMEOUT_MS = 5_000;

/** The readiness of one gateway instance. */
export class Readiness {
  private storeAnswer: { ok: boolean; at: number } | undefined;
  private storePing: Promise<boolean> | undefined;
  private readonly kicked = new Map<string, number>();

  constructor(private readonly opts: ReadinessOptions) {}

  /** Checks now (from what is known, plus at most one bounded store ping); never waits for an upstream. */
  async check(): Promise<ReadinessReport> {
    const failed: string[] = [];
    const storeOk = this.opts.store ? await this.storeReachable() : undefined;
    if (storeOk === false) failed.push('store');
    const now = Date.now();
    const upstreams = this.opts.upstreams.map(({ name, availability }) => {
      const state = availability.state;
      // An upstream is re-asked at most once per interval: one that went away unnoticed is found down by the next check.
      if (state !== 'down' && now - (this.kicked.get(name) ?? Number.NEGATIVE_INFINITY) >= this.opts.upstreamCheckMs) {
        this.kicked.set(name, now);
        if (state === 'up') availability.suspect();
        else void availability.eras().catch(() => {});
      }
      if (state !== 'up') failed.push(`upstream:${name}`);
      const reason = availability.downReason;
      return { name, state, ...(reason !== undefined ? { reason } : {}) };
    });
    return {
      status: failed.length === 0 ? 'ready' : 'not ready',
      failed,
      checks: { store: storeOk === undefined ? 'none' : storeOk ? 'ok' : 'unreachable', upstreams },
    };
  }

  private storeReachable(): Promise<boolean> {
    const cached = this.storeAnswer;
    if (cached && Date.now() - cached.at < this.opts.cacheMs) return Promise.resolve(cached.ok);
    this.storePing ??= this.pingStore().then((ok) => {
      this.storeAnswer = { ok, at: Date.now() };
      this.storePing = undefined;
      return ok;
    });
    return this.storePing;
  }

  private async pingStore(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.opts.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS);
      timer.unref();
    });
    try {
      return await Promise.race([
        (this.opts.store as { ping(): Promise<void> }).ping().then(
          () => true,
          () => false,
        ),
        bound,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Says an upstream's availability in the operator log once per outcome, not once per probe or request: the first
 * outcome (the probe at start) at info when the upstream answered, at warn when it is down, naming what it answered;
 * then a line only when the outcome changes (down for another reason, back up, other eras). Returns the unsubscribe.
 */
export function logAvailability(upstream: string, availability: UpstreamAvailability, log: FastifyBaseLogger): () => void {
  let last: string | undefined;
  let wasDown = false;
  return availability.onChange((c) => {
    const outcome = outcomeOf(c);
    if (outcome === last) return;
    last = outcome;
    if (!c.up) log.warn({ upstream, reason: downReason(c.error), err: errorSummary(c.error), retryInMs: c.retryInMs }, 'upstream is down');
    else if (c.eras.refused)
      log.info({ upstream }, "upstream refused the era probe for want of credentials; its eras are learned with the first caller's token");
    else
      log.info(
        { upstream, modern: c.eras.modern, ...(c.eras.legacyUnasked ? {} : { legacy: c.eras.legacy }) },
        wasDown ? 'upstream is back' : 'upstream is up',
      );
    wasDown = !c.up;
  });
}

/** One probe's outcome as compared between probes: down and why, refused, or up with which eras. */
function outcomeOf(c: AvailabilityChange): string {
  if (!c.up) return `down: ${downReason(c.error)}`;
  if (c.eras.refused) return 'refused';
  return `up: modern ${c.eras.modern}, legacy ${c.eras.legacyUnasked ? 'unasked' : c.eras.legacy}`;
}
