/**
 * The leases of one instance over a shared store: renews the leases of the work running here (owned calls, followed
 * upstream tasks) and, in a reaper round, claims the leases other instances let lapse and takes their work over.
 */
import { isTerminal, logFailure, type LayerLogger, type TaskId } from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';
import type { OwnedTasks } from '../kinds/owned-tasks.js';
import type { ProxiedTasks } from '../kinds/proxied-tasks.js';

/** How many lapsed leases one reaper round claims at most (the rest wait for the next round, or another instance). */
const CLAIM_BATCH = 16;

/** What the lease keeper works on. */
export interface LeaseKeeperOptions {
  store: TaskStore;
  /** This instance's id: the holder of its leases. */
  instanceId: string;
  /** How long a claim on running work lasts unless renewed. */
  leaseMs: number;
  owned: OwnedTasks;
  proxied: ProxiedTasks;
  log: LayerLogger;
}

/** Renews this instance's leases and reaps the lapsed leases of others. */
export class LeaseKeeper {
  private reaper: NodeJS.Timeout | undefined;
  private renewer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: LeaseKeeperOptions) {}

  /** Starts renewing and reaping. */
  start(): void {
    const renewing = logFailure(this.o.log, 'warn', 'lease renewal failed; the leases are renewed again shortly');
    this.renewer = setInterval(() => void this.renew().catch(renewing), Math.max(50, Math.floor(this.o.leaseMs / 3)));
    this.renewer.unref();
    this.scheduleReap();
  }

  /** Stops both loops; a lease a round in progress claims from now on is handed over at once. */
  stop(): void {
    this.stopped = true;
    if (this.reaper) clearTimeout(this.reaper);
    if (this.renewer) clearInterval(this.renewer);
    this.reaper = undefined;
  }

  /**
   * The reaper: every third of the lease time (jittered, so that instances started together do not ask together)
   * claims the leases other instances let lapse and takes their work over. A claim is exclusive: each lapsed lease
   * goes to one instance.
   */
  private scheduleReap(): void {
    if (this.stopped) return;
    const base = Math.max(50, this.o.leaseMs / 3);
    this.reaper = setTimeout(
      () => {
        void this.reap()
          .catch(logFailure(this.o.log, 'warn', 'lease reaper round failed; it runs again shortly'))
          .finally(() => this.scheduleReap());
      },
      Math.round(base * (0.75 + Math.random() * 0.5)),
    );
    this.reaper.unref();
  }

  private async reap(): Promise<void> {
    const { store, instanceId, log } = this.o;
    const claimed = await store.claimExpiredLeases(instanceId, this.o.leaseMs, CLAIM_BATCH);
    for (const { taskId } of claimed) {
      if (this.stopped) {
        // Claimed while shutting down: handed on at once, to whoever asks next.
        await store.releaseLease(taskId, instanceId, 'handover').catch(logFailure(log, 'debug', 'lease claimed on shutdown not handed over', { taskId }));
        continue;
      }
      await this.takeOver(taskId).catch(logFailure(log, 'warn', 'takeover of a task failed; its lease lapses again', { taskId }));
    }
  }

  /**
   * Renews the leases of all the work here, owned calls and followed upstream tasks, in one store round trip; work
   * whose lease another instance claimed meanwhile is given up here (its record is the new holder's to write).
   */
  private async renew(): Promise<void> {
    const owned = this.o.owned.leasedIds();
    const followed = this.o.proxied.liveIds();
    if (owned.length + followed.length === 0) return;
    const still = new Set(await this.o.store.renewLeases(this.o.instanceId, [...owned, ...followed], this.o.leaseMs));
    for (const id of owned) if (!still.has(id)) this.o.owned.leaseLost(id);
    for (const id of followed) if (!still.has(id)) this.o.proxied.leaseLost(id);
  }

  /** Takes over a task whose lease this instance claimed. */
  private async takeOver(taskId: TaskId): Promise<void> {
    const record = await this.o.store.get(taskId);
    if (!record || isTerminal(record.status)) {
      await this.o.store.releaseLease(taskId, this.o.instanceId, 'drop');
      return;
    }
    if (record.kind === 'owned') await this.o.owned.takeOver(record);
    else await this.o.proxied.takeOver(record);
  }
}
