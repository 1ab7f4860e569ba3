/** One per-tool rule of an upstream (`upstreams[].tools`): the task mode, its windows and bounds, and a job's rule. */
import { z } from 'zod';
import { compile as compileJmesPath } from '@jmespath-community/jmespath';
import { DEFAULT_TASK_MODE, globCovers, modesWhere, modeTraits, TASK_MODES, type TaskMode } from '../translate/index.js';
import { doc, positiveInt } from './schema-parts.js';

/** Task modes per tool: how the gateway treats a tool's long calls (the table in translate/task-modes.ts). */
export { TASK_MODES };

/** The task statuses a job rule maps its server's states onto (a job cannot ask for input). */
export const JOB_STATUSES = ['working', 'completed', 'failed', 'cancelled'] as const;

/** The modes that need `afterMs`, take it as a window, refuse it; the modes that drive a job. */
const AFTER_MS_NEEDED = modesWhere((t) => t.afterMs === 'needed');
const AFTER_MS_WINDOW = modesWhere((t) => t.afterMs === 'window');
const AFTER_MS_REFUSED = modesWhere((t) => typeof t.afterMs === 'object');
const DRIVEN = modesWhere((t) => t.task === 'driven');

/** Modes as the reference writes them: `a`, `b` and `c` (or `a`, `b` or `c`). */
function codes(modes: TaskMode[], conjunction = 'and'): string {
  const quoted = modes.map((m) => `\`${m}\``);
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} ${conjunction} ${quoted.at(-1)}`;
}

/** A JMESPath expression (jmespath.org), checked by compiling it. */
const jmesPath = (what: string) =>
  z
    .string()
    .min(1)
    .superRefine((expr, ctx) => {
      try {
        compileJmesPath(expr);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `not a JMESPath expression (${e instanceof Error ? e.message : String(e)})` });
      }
    })
    .describe(what);

/** One call of a job's own tool: its name and arguments, where the string `{{id}}` stands for the job's handle. */
const JobCallSchema = z.strictObject({
  tool: z.string().min(1).describe('the tool to call'),
  arguments: z
    .record(z.string(), z.unknown())
    .default({})
    .describe(
      'its arguments; a value `"{{id}}"` is the handle as the start tool returned it (a number stays a number), `{{id}}` inside a longer string its text',
    ),
});

/**
 * How a `task: job` rule reads a hand-rolled async job (docs/jobs.md): where the start tool's result holds the handle,
 * which tool reports the state and how its states map onto task statuses, where the outcome comes from, which tool
 * cancels. Paths are JMESPath over the tool's result, whose `structuredContent` is the first text content parsed as
 * JSON when the result has none.
 */
export const JobSchema = z.strictObject({
  id: jmesPath("where the handle is in the start tool's result, e.g. `structuredContent.jobId`"),
  status: z.strictObject({
    tool: z.string().min(1).describe("the tool that reports the job's state"),
    arguments: JobCallSchema.shape.arguments,
    state: jmesPath("where the state is in the status tool's result"),
    states: z
      .record(z.string(), z.enum(JOB_STATUSES))
      .refine((m) => Object.keys(m).length > 0, 'name at least one state')
      .describe(
        'each state the server reports → `working`, `completed`, `failed` or `cancelled`; a state not named here fails the task (GW_JOB_UNKNOWN_STATE)',
      ),
    message: jmesPath('where a progress message is')
      .optional()
      .meta(doc("where a progress message is (→ the task's statusMessage, and progress notifications to a client that takes no task)", 'unset: no message')),
    error: jmesPath("where a failed job's message is")
      .optional()
      .meta(doc("where a failed job's message is", 'unset: `message`, else the text of the status result')),
  }),
  result: JobCallSchema.optional().describe("the tool whose result is the job's outcome once it completed (unset: the status tool's final result is)"),
  cancel: JobCallSchema.optional().describe('the tool that stops the job (unset: a cancelled task stops being polled and the upstream job runs on)'),
  hide: z.array(z.string().min(1)).default([]).describe("tools not listed to clients and refused when called directly (the job's plumbing)"),
});

/** One per-tool rule. */
export const ToolRuleSchema = z
  .strictObject({
    task: z
      .enum(TASK_MODES)
      .default(DEFAULT_TASK_MODE)
      .describe(TASK_MODES.map((m) => `\`${m}\` (${modeTraits(m).doc})`).join(', ')),
    afterMs: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .meta(
        doc(
          `${codes(AFTER_MS_NEEDED)}: how long a call runs before the answer is a task; ${codes(AFTER_MS_WINDOW)}: the window in which a first ` +
            `question or result is answered within the creating call; not with ${codes(AFTER_MS_REFUSED, 'or')}`,
          `unset (required with ${codes(AFTER_MS_NEEDED, 'or')})`,
        ),
      ),
    ttlMs: positiveInt
      .optional()
      .meta(doc("retention of the tool's gateway-owned tasks when the client asks for none (at most `maxTtlMs`)", 'unset: `tasks.defaultTtlMs`')),
    maxTtlMs: positiveInt
      .optional()
      .meta(doc("upper bound on the tool's task retention, a client's requested `ttl` included (never above `tasks.maxTtlMs`)", 'unset: `tasks.maxTtlMs`')),
    pollIntervalMs: positiveInt.optional().meta(doc("the `pollIntervalMs` suggested for the tool's tasks", 'unset: learned, or `tasks.pollIntervalMs`')),
    timeoutMs: positiveInt.optional().meta(doc('budget of a wrapped call', "unset: the upstream's `timeoutMs`")),
    /**
     * When the instance running a wrapped call is lost, another instance starts the call again instead of failing the
     * task. Only for idempotent tools (`idempotentHint: true`): the upstream may see the call twice.
     */
    retryOnLoss: z
      .boolean()
      .optional()
      .meta(doc('another instance runs a wrapped call again when its instance is lost; only for tools whose `idempotentHint` is true', 'unset (`false`)')),
    job: JobSchema.optional().meta(
      doc(
        `with ${DRIVEN.map((m) => `\`task: ${m}\``).join(' or ')}: how the job is read and driven (docs/jobs.md)`,
        `unset (required with ${codes(DRIVEN, 'or')})`,
      ),
    ),
  })
  .superRefine((rule, ctx) => {
    const traits = modeTraits(rule.task);
    const mode = JSON.stringify(rule.task);
    if (traits.afterMs === 'needed' && rule.afterMs === undefined) {
      ctx.addIssue({ code: 'custom', path: ['afterMs'], message: `task ${mode} needs afterMs (milliseconds to wait before answering with a task)` });
    }
    // Where afterMs is a window, it is the one in which a first question or result is answered within the creating
    // call; a mode that refuses it says why (one that never makes a task, one whose task exists at once).
    if (typeof traits.afterMs === 'object' && rule.afterMs !== undefined) {
      const takers = modesWhere((m) => typeof m.afterMs !== 'object').map((m) => JSON.stringify(m));
      const message = `afterMs applies to task ${takers.slice(0, -1).join(', ')} and ${takers.at(-1)}, not ${mode} (${traits.afterMs.refused})`;
      ctx.addIssue({ code: 'custom', path: ['afterMs'], message });
    }
    const driven = traits.task === 'driven';
    if (driven && rule.job === undefined) {
      ctx.addIssue({ code: 'custom', path: ['job'], message: `task ${mode} needs job (how to read the handle and drive the job: id, status)` });
    }
    if (!driven && rule.job !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['job'], message: `job applies to task ${DRIVEN.map((m) => JSON.stringify(m)).join(' or ')} only` });
    }
    // A job's start tool is not idempotent: it is called once, and a lost instance's job is polled again, never restarted.
    if (typeof traits.retryOnLoss === 'object' && rule.retryOnLoss !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['retryOnLoss'], message: `retryOnLoss does not apply to task ${mode}: ${traits.retryOnLoss.refused}` });
    }
    if (rule.ttlMs !== undefined && rule.maxTtlMs !== undefined && rule.ttlMs > rule.maxTtlMs) {
      ctx.addIssue({ code: 'custom', path: ['ttlMs'], message: 'ttlMs must not exceed maxTtlMs' });
    }
  });

/**
 * Tool rules are first-match in the order written: a rule after one whose glob covers every name it matches (most
 * often anything after `"*"`) can never apply. That is a mistake, not a wish, so it is refused, naming both rules.
 */
export function checkRuleOrder(tools: Record<string, unknown>, at: Array<string | number>, ctx: z.RefinementCtx): void {
  const patterns = Object.keys(tools);
  patterns.forEach((later, j) => {
    const earlier = patterns.slice(0, j).find((p) => globCovers(p, later));
    if (earlier === undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: [...at, later],
      message:
        `rule "${later}" can never apply: the earlier rule "${earlier}" matches every tool it names (rules are first-match; put "${later}" above ` +
        `"${earlier}")`,
    });
  });
}

/** One validated tool rule. */
export type ToolRule = z.infer<typeof ToolRuleSchema>;
