/**
 * Requests between gateway instances over the store's event channel: one instance asks the instance that holds a
 * live object (a held MRTR call, a running owned task) to act on it and gets the answer back, with notifications on
 * the way. Every instance keeps a heartbeat value in the store, so that a request to an instance that is gone fails
 * at once with `InstanceGoneError` instead of waiting for a reply that cannot come.
 *
 * Messages on topic `inst:<id>`: `req` (kind, payload), `ack` (the target has it), `note` (a notification for the
 * asker), `res` (the answer or an error message), `abort` (the asker gave up). Delivery is at most once: an asker
 * that hears no `ack` within `ackMs` treats the target as gone.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError, isObject, logFailure, NO_LOG, type JsonObject, type LayerLogger } from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';

/**
 * The instance a request was addressed to is gone (no heartbeat, or no acknowledgement in time). A client gets it when
 * its MRTR retry was for that instance (GW_INSTANCE_GONE); the task runtimes catch it and take the work over.
 */
export class InstanceGoneError extends GatewayError {
  constructor(readonly instance: string) {
    super('GW_INSTANCE_GONE');
  }
}

/**
 * The remote handler failed; its message, as the target reported it. Internal: the asker rebuilds the error it stands
 * for (see the MRTR bridge), so a plain Error; one that escaped would be GW_INTERNAL.
 */
export class RemoteError extends Error {
  constructor(
    message: string,
    readonly remoteName: string,
  ) {
    super(message);
    this.name = 'RemoteError';
  }
}

/** What a handler gets besides the payload. */
export interface BusContext {
  /** The asking instance. */
  from: string;
  /** Aborted when the asker gives up. */
  signal: AbortSignal;
  /** Sends a notification to the asker. */
  notify(payload: JsonObject): void;
}

/** A handler of one request kind; its resolved value is the answer, a rejection the remote error. */
export type BusHandler = (payload: JsonObject, ctx: BusContext) => Promise<JsonObject>;

/** Bus settings. */
export interface InstanceBusOptions {
  store: TaskStore;
  /** This instance's id (random per process). */
  instanceId: string;
  /** How long a heartbeat lives; renewed every third of it. */
  heartbeatMs: number;
  /** How long an asker waits for the target's acknowledgement. */
  ackMs?: number;
  /** Where failed publishes and heartbeats are logged (default nowhere). */
  log?: LayerLogger;
}

interface Pending {
  resolve(v: JsonObject): void;
  reject(e: Error): void;
  onNotify: ((p: JsonObject) => void) | undefined;
  acked: boolean;
  ackTimer: NodeJS.Timeout | undefined;
}

/** A new instance id (random per process, URL-safe). */
export function mintInstanceId(): string {
  return `gwi_${randomBytes(12).toString('base64url')}`;
}

const heartbeatKey = (id: string) => `inst:${id}`;
const topicOf = (id: string) => `inst:${id}`;

/** Requests between the instances sharing one store. */
export class InstanceBus {
  readonly instanceId: string;
  private readonly handlers = new Map<string, BusHandler>();
  private readonly pending = new Map<string, Pending>();
  /** Requests this instance serves, by `from:corr`: aborted when the asker gives up. */
  private readonly serving = new Map<string, AbortController>();
  private unsubscribe: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly ackMs: number;
  private closed = false;
  private readonly log: LayerLogger;

  constructor(private readonly o: InstanceBusOptions) {
    this.instanceId = o.instanceId;
    this.ackMs = o.ackMs ?? 2_000;
    this.log = o.log ?? NO_LOG;
  }

  /** Subscribes to this instance's topic and starts the heartbeat; resolves once both are in place. */
  async start(): Promise<void> {
    this.unsubscribe = await this.o.store.subscribe(topicOf(this.instanceId), (m) => this.onMessage(m));
    await this.beat();
    const missed = logFailure(this.log, 'warn', 'heartbeat not written; other instances may take this one for gone');
    this.heartbeat = setInterval(() => void this.beat().catch(missed), Math.max(100, Math.floor(this.o.heartbeatMs / 3)));
    this.heartbeat.unref();
  }

  /** Serves requests of `kind` with `handler`. */
  handle(kind: string, handler: BusHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Whether an instance has a live heartbeat (this one always has). */
  async alive(instance: string): Promise<boolean> {
    if (instance === this.instanceId) return true;
    return (await this.o.store.getValue(heartbeatKey(instance))) !== undefined;
  }

  /**
   * Asks `to` to run its `kind` handler with `payload`. Rejects with `InstanceGoneError` when `to` has no heartbeat
   * or does not acknowledge within `ackMs`, `RemoteError` when the handler failed, the signal's reason when aborted.
   */
  async request(to: string, kind: string, payload: JsonObject, opts: { signal?: AbortSignal; onNotify?: (p: JsonObject) => void } = {}): Promise<JsonObject> {
    if (!(await this.alive(to))) throw new InstanceGoneError(to);
    opts.signal?.throwIfAborted();
    const corr = randomBytes(12).toString('base64url');
    return new Promise<JsonObject>((resolve, reject) => {
      const cleanup = () => {
        const p = this.pending.get(corr);
        if (p?.ackTimer) clearTimeout(p.ackTimer);
        this.pending.delete(corr);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        cleanup();
        void this.o.store
          .publish(topicOf(to), { t: 'abort', corr, from: this.instanceId })
          .catch(logFailure(this.log, 'debug', 'abort not sent to the serving instance', { kind }));
        reject(opts.signal?.reason ?? new Error('aborted'));
      };
      const entry: Pending = {
        resolve: (v) => {
          cleanup();
          resolve(v);
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
        onNotify: opts.onNotify,
        acked: false,
        ackTimer: undefined,
      };
      entry.ackTimer = setTimeout(() => {
        if (!entry.acked) entry.reject(new InstanceGoneError(to));
      }, this.ackMs);
      entry.ackTimer.unref();
      this.pending.set(corr, entry);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.o.store.publish(topicOf(to), { t: 'req', corr, from: this.instanceId, kind, payload }).catch((e: unknown) => entry.reject(e as Error));
    });
  }

  /** Stops serving and asking: pending requests fail, served ones are aborted, the heartbeat is removed. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.unsubscribe?.();
    for (const p of [...this.pending.values()]) p.reject(new Error('gateway shutting down'));
    for (const c of this.serving.values()) c.abort(new Error('gateway shutting down'));
    this.serving.clear();
    await this.o.store.deleteValue(heartbeatKey(this.instanceId)).catch(logFailure(this.log, 'debug', 'heartbeat not removed on close; it lapses'));
  }

  private beat(): Promise<boolean> {
    return this.o.store.putValue(heartbeatKey(this.instanceId), { at: Date.now() }, this.o.heartbeatMs);
  }

  private onMessage(m: JsonObject): void {
    const corr = typeof m.corr === 'string' ? m.corr : undefined;
    const from = typeof m.from === 'string' ? m.from : undefined;
    if (!corr || !from) return;
    switch (m.t) {
      case 'req':
        void this.serve(corr, from, typeof m.kind === 'string' ? m.kind : '', isObject(m.payload) ? m.payload : {});
        return;
      case 'abort':
        this.serving.get(`${from}:${corr}`)?.abort(new Error('the asking instance gave up'));
        return;
      case 'ack': {
        const p = this.pending.get(corr);
        if (p) {
          p.acked = true;
          if (p.ackTimer) clearTimeout(p.ackTimer);
        }
        return;
      }
      case 'note':
        if (isObject(m.payload)) this.pending.get(corr)?.onNotify?.(m.payload);
        return;
      case 'res': {
        const p = this.pending.get(corr);
        if (!p) return;
        if (m.ok === true && isObject(m.payload)) p.resolve(m.payload);
        else p.reject(new RemoteError(typeof m.message === 'string' ? m.message : 'remote failure', typeof m.name === 'string' ? m.name : 'Error'));
        return;
      }
    }
  }

  private async serve(corr: string, from: string, kind: string, payload: JsonObject): Promise<void> {
    const reply = (msg: JsonObject) =>
      this.o.store
        .publish(topicOf(from), { ...msg, corr, from: this.instanceId })
        .catch(logFailure(this.log, 'warn', 'bus reply not sent to the asking instance', { kind }));
    const handler = this.handlers.get(kind);
    if (this.closed) return; // no ack: the asker treats this instance as gone
    await reply({ t: 'ack' });
    if (!handler) {
      await reply({ t: 'res', ok: false, message: `no handler for ${kind}`, name: 'Error' });
      return;
    }
    const aborter = new AbortController();
    const key = `${from}:${corr}`;
    this.serving.set(key, aborter);
    try {
      const payloadOut = await handler(payload, { from, signal: aborter.signal, notify: (p) => void reply({ t: 'note', payload: p }) });
      await reply({ t: 'res', ok: true, payload: payloadOut });
    } catch (e) {
      const err = e as Error;
      await reply({ t: 'res', ok: false, message: err?.message ?? String(e), name: err?.name ?? 'Error' });
    } finally {
      this.serving.delete(key);
    }
  }
}
