/** The task runtime's options: what it is built with (`TaskRuntimeOptions`), and the part a reload may replace. */
import type { TaskStore } from '../store/index.js';
import type { AuditLog } from './audit.js';
import type { InstanceBus } from './instances/instance-bus.js';
import type { MrtrBridge } from './calls/mrtr-bridge.js';
import type { PollAdviceOptions } from './records/poll-advisor.js';
import type { UpstreamRoute } from './route.js';
import type { Sealer } from './instances/sealing.js';
import type { InputBounds } from './records/task-limits.js';
import type { LayerLogger } from '../translate/index.js';

/** The runtime limits a reload may replace (`TaskRuntime.setLimits`). */
export interface LiveTaskLimits {
  defaultTtlMs: number;
  defaultPollIntervalMs: number;
  maxActivePerPrincipal: number;
  maxResultBytes: number;
  pollBurst: number;
  inputBounds: InputBounds;
  pollAdvice: PollAdviceOptions;
}

/** Runtime limits and defaults. */
export interface TaskRuntimeOptions {
  store: TaskStore;
  /**
   * Requests between the instances sharing the store (started by the caller); absent: this runtime is the only
   * instance (a bus over the store is made and started by `start()`).
   */
  bus?: InstanceBus;
  /** Seals what another instance needs to take work over; absent: a random key (one instance). */
  sealer?: Sealer;
  /** How long a claim on running work lasts unless renewed (default 15 s). */
  leaseMs?: number;
  bridge: MrtrBridge;
  defaultTtlMs: number;
  maxTtlMs: number;
  defaultPollIntervalMs: number;
  /** How each read's `pollIntervalMs` is learned and bounded (default: learned, 100 ms to 30 s). */
  pollAdvice?: PollAdviceOptions;
  maxActivePerPrincipal: number;
  /** Largest outcome a task keeps, in bytes of JSON (`tasks.maxResultBytes`; default 4 MiB). */
  maxResultBytes?: number;
  /** Status polls of one task per its pollIntervalMs before 429 (`tasks.pollBurst`; default 3). */
  pollBurst?: number;
  /** How much input one call may ask (`input.maxRequestsPerRound`, `input.maxRoundsPerTask`). */
  inputBounds?: InputBounds;
  /** How long the upstream's tool list (task support) is trusted. */
  toolSupportTtlMs: number;
  /**
   * The routes this instance serves (`register` adds more): a task taken over from another instance is run against
   * its route by name.
   */
  routes?: Iterable<UpstreamRoute>;
  /** Where task events are recorded (created, input requested and answered, ended, expired); default none. */
  audit?: AuditLog;
  /** Where the runtime logs what it does not answer to a caller (failed background work); default none. */
  log?: LayerLogger;
}
