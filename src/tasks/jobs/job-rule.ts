/**
 * A `task: job` rule (docs/jobs.md): how a hand-rolled async job is read and driven with the server's own tools. The
 * start tool's result holds a handle; a status tool reports a state that the rule maps onto a task status; a result
 * tool (or the final status) holds the outcome; a cancel tool stops it. Paths into results are JMESPath
 * (jmespath.org, `@jmespath-community/jmespath`): a small, specified, side-effect-free language with a compliance
 * suite, evaluated synchronously over the tool's result, whose `structuredContent` is the first text content parsed as
 * JSON when the result has none (servers older than structured content answer with JSON text).
 *
 * The configuration validates the rule (config/schema.ts `JobSchema`); this module compiles it once per rule object
 * and reads results with it. A record keeps the rule as configured when its job started, so that any instance drives
 * it the same way.
 */
import { compile, TreeInterpreter, type JSONValue } from '@jmespath-community/jmespath';
import { isObject, type JsonObject, type TaskStatus } from '../../translate/index.js';

/** One call of a job's own tool. */
export interface JobToolCall {
  tool: string;
  /** Arguments; the string `{{id}}` stands for the handle. */
  arguments?: JsonObject;
}

/** A job rule as configured (config `tools.<name>.job`). */
export interface JobSpec {
  id: string;
  status: JobToolCall & {
    state: string;
    states: Record<string, 'working' | 'completed' | 'failed' | 'cancelled'>;
    message?: string;
    error?: string;
  };
  result?: JobToolCall;
  cancel?: JobToolCall;
  hide?: string[];
}

/** What a status result says, read by the rule. */
export type JobState =
  | { status: 'working'; message?: string }
  | { status: 'completed'; message?: string }
  | { status: 'failed'; message: string }
  | { status: 'cancelled'; message?: string }
  /** The state read is one the rule does not map (or none was found): `read` says what was there. */
  | { status: 'unknown'; read: string };

type Expression = ReturnType<typeof compile>;

/** A compiled job rule. */
export class JobRule {
  private readonly id: Expression;
  private readonly state: Expression;
  private readonly message: Expression | undefined;
  private readonly error: Expression | undefined;

  constructor(
    /** The start tool the rule is for (named in errors). */
    readonly tool: string,
    readonly spec: JobSpec,
  ) {
    this.id = compile(spec.id);
    this.state = compile(spec.status.state);
    this.message = spec.status.message !== undefined ? compile(spec.status.message) : undefined;
    this.error = spec.status.error !== undefined ? compile(spec.status.error) : undefined;
  }

  /** The handle in the start tool's result (a string or a number as the tool gave it), or `undefined`. */
  handle(result: JsonObject): string | number | boolean | JsonObject | unknown[] | undefined {
    const v = evaluate(this.id, result);
    if (v === null || v === undefined || v === '') return undefined;
    return v as string | number | boolean | JsonObject | unknown[];
  }

  /** The job's state in a status tool's result. */
  read(result: JsonObject): JobState {
    const raw = evaluate(this.state, result);
    const key = typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
    const status = key !== undefined && Object.hasOwn(this.spec.status.states, key) ? this.spec.status.states[key] : undefined;
    if (!status)
      return { status: 'unknown', read: raw === null || raw === undefined ? `nothing at ${this.spec.status.state}` : JSON.stringify(raw).slice(0, 200) };
    const message = text(this.message && evaluate(this.message, result));
    if (status !== 'failed') return message !== undefined ? { status, message } : { status };
    const error = text(this.error && evaluate(this.error, result)) ?? message ?? contentText(result) ?? `the job ended in state ${key}`;
    return { status: 'failed', message: error };
  }

  /** The arguments of one of the job's tools, with the handle in place of `{{id}}`. */
  argumentsFor(call: JobToolCall, handle: unknown): JsonObject {
    return fill(call.arguments ?? {}, handle) as JsonObject;
  }

  /** The tools the rule hides from clients. */
  get hidden(): readonly string[] {
    return this.spec.hide ?? [];
  }
}

const compiled = new WeakMap<object, JobRule>();

/** The compiled rule for a spec object (compiled once per object: a reload brings new objects). */
export function jobRule(tool: string, spec: JobSpec): JobRule {
  let rule = compiled.get(spec);
  if (!rule || rule.tool !== tool) {
    rule = new JobRule(tool, spec);
    compiled.set(spec, rule);
  }
  return rule;
}

/** Whether a status result is a tool error (`isError`), whose text is the reason. */
export function isToolError(result: JsonObject): boolean {
  return result.isError === true;
}

/** The text of a result's text contents, joined (a tool error's reason), or `undefined`. */
export function contentText(result: JsonObject): string | undefined {
  if (!Array.isArray(result.content)) return undefined;
  const parts = result.content
    .filter((c): c is { type: 'text'; text: string } => isObject(c) && c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text);
  return parts.length > 0 ? parts.join('\n').slice(0, 1_000) : undefined;
}

/** The document a path reads: the result, with its first text content parsed as JSON for a missing `structuredContent`. */
function documentOf(result: JsonObject): JSONValue {
  const parsed = textJson(result);
  return (parsed === undefined ? result : { ...result, structuredContent: parsed }) as JSONValue;
}

/**
 * A job's result as its caller receives it: one without `structuredContent` (and no tool error) gets its first text
 * content parsed as JSON, when that is an object (both eras' `structuredContent`), as paths read it — so that the result
 * tool's listed `outputSchema`, which the start tool is listed with (job-listing.ts), finds the structured result it
 * demands from a server that answers with JSON text only.
 */
export function withStructuredContent(result: JsonObject): JsonObject {
  if (result.isError === true) return result;
  const parsed = textJson(result);
  return isObject(parsed) ? { ...result, structuredContent: parsed } : result;
}

/** A result's first text content parsed as JSON when it has no `structuredContent` (else, or unparsable: `undefined`). */
function textJson(result: JsonObject): unknown {
  if (result.structuredContent !== undefined || !Array.isArray(result.content)) return undefined;
  const first = result.content.find((c) => isObject(c) && c.type === 'text' && typeof c.text === 'string') as { text: string } | undefined;
  if (!first) return undefined;
  try {
    return JSON.parse(first.text) as unknown;
  } catch {
    return undefined;
  }
}

const interpreter = TreeInterpreter;

function evaluate(expression: Expression, result: JsonObject): unknown {
  try {
    return interpreter.search(expression, documentOf(result));
  } catch {
    // A function applied to a value of the wrong type (e.g. to_string of nothing): nothing read.
    return undefined;
  }
}

function text(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 0 ? s.slice(0, 1_000) : undefined;
}

/** `{{id}}` replaced by the handle: a whole-string value by the handle itself (its JSON type kept), inside text by its text. */
function fill(v: unknown, handle: unknown): unknown {
  if (typeof v === 'string') {
    if (v === '{{id}}') return handle;
    return v.includes('{{id}}') ? v.split('{{id}}').join(typeof handle === 'string' ? handle : JSON.stringify(handle)) : v;
  }
  if (Array.isArray(v)) return v.map((x) => fill(x, handle));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, handle)]));
  return v;
}

/** The task status a job's state stands for (the `unknown` read is the caller's to fail). */
export type JobTaskStatus = Exclude<TaskStatus, 'input_required'>;
