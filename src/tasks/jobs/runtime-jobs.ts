/**
 * The runtime's job plumbing (rule `task: job`, docs/jobs.md): a start tool's call that ends with the job as its task,
 * and a job, new or resumed from its record, as an upstream task polled at the interval the poll advisor suggests.
 */
import type { LayerLogger, TaskRecord } from '../../translate/index.js';
import type { UpstreamCall, UpstreamCaller, UpstreamTaskSnapshot } from '../../upstream/index.js';
import { jobRule, type JobRule, type JobSpec } from './job-rule.js';
import { JobTask, startAsJob } from './job-task.js';
import type { PollAdvisor } from '../records/poll-advisor.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from '../route.js';
import { nowIso, type TaskLimits } from '../records/task-limits.js';

/** What the job plumbing reads: the runtime's live limits, its poll advisor, its log. */
export interface RuntimeJobsOptions {
  limits: TaskLimits;
  advisor: PollAdvisor;
  log: LayerLogger;
}

/** Starts and resumes the jobs of `task: job` rules. */
export class RuntimeJobs {
  constructor(private readonly o: RuntimeJobsOptions) {}

  /** The start tool's call of a job rule, ending with the job as its task (`ttlMs`: the task's retention). */
  start(route: UpstreamRoute, caller: CallerContext, policy: TaskPolicy, tool: string, call: UpstreamCall, ttlMs: number): UpstreamCall {
    const rule = jobRule(tool, policy.job as JobSpec);
    const now = nowIso();
    const created: UpstreamTaskSnapshot = {
      status: 'working',
      ttlMs,
      createdAt: now,
      lastUpdatedAt: now,
      pollIntervalMs: policy.pollIntervalMs ?? this.o.limits.defaultPollIntervalMs,
    };
    return startAsJob(call, rule, (handle) => this.task(route, caller, policy, rule, handle, created), this.o.log);
  }

  /**
   * A job record's job for `caller`, from `snapshot` on: driven by the rule its record keeps, whatever this instance's
   * configuration says now. `undefined` for a record that is no job.
   */
  resume(record: TaskRecord, route: UpstreamRoute, caller: UpstreamCaller, policy: TaskPolicy, snapshot: UpstreamTaskSnapshot): JobTask | undefined {
    if (!record.job) return undefined;
    const rule = jobRule(record.tool, record.job.rule as unknown as JobSpec);
    return this.task(route, caller, policy, rule, record.job.handle, snapshot);
  }

  /**
   * A job as an upstream task, polled at the interval its readers are told (the poll advisor's, learned from the
   * tool's durations): the status tool is called at most once per that interval, whoever reads.
   */
  private task(route: UpstreamRoute, caller: UpstreamCaller, policy: TaskPolicy, rule: JobRule, handle: unknown, created: UpstreamTaskSnapshot): JobTask {
    const stored = created.pollIntervalMs;
    const createdAt = created.createdAt ?? nowIso();
    const view = {
      kind: 'proxied' as const,
      job: { handle, rule: {} },
      upstream: route.name,
      tool: rule.tool,
      createdAt,
      status: 'working' as const,
      ...(stored !== undefined ? { pollIntervalMs: stored } : {}),
    };
    return new JobTask(route.upstream, caller, rule, handle, created, { log: this.o.log, intervalMs: () => this.o.advisor.suggest(view, policy) });
  }
}
