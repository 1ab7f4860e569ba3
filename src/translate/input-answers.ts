/**
 * Whether a client's answer fits the input request it answers, checked before anything reaches an upstream (README
 * §Security, input validation; 2026-07-28 basic/patterns/mrtr §Server Requirements: validate input responses). The
 * result shapes are the 2025-11-25 / 2026-07-28 schema's `ElicitResult`, `CreateMessageResult` and `ListRootsResult`;
 * an accepted elicitation's `content` is checked against the `requestedSchema` that was asked (2025-11-25
 * client/elicitation §Requested Schema: a flat object of string, number, integer, boolean and enum properties).
 * Wire schemas are loose where the spec allows extension (`_meta`, unknown keys of a result pass through), strict
 * where a wrong value would reach an upstream as something it did not ask for.
 */
import { z } from 'zod';
import { GatewayError } from './gateway-error.js';
import { isObject, type JsonObject } from './jsonrpc.js';

/**
 * A result's `_meta` (2025-11-25 schema `Result`): an object when present. An upstream SDK that reads the answer with
 * its own schema would otherwise fail on it and leave the call waiting.
 */
const Meta = z.record(z.string(), z.unknown()).optional();

/** `ElicitResult` (2025-11-25 schema): an action, and for `accept` the form's content. */
const ElicitResultSchema = z.looseObject({
  _meta: Meta,
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional(),
});

const TextContent = z.looseObject({ type: z.literal('text'), text: z.string() });
const MediaContent = z.looseObject({ type: z.enum(['image', 'audio']), data: z.string(), mimeType: z.string() });
const ToolUseContent = z.looseObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) });
const ToolResultContent = z.looseObject({ type: z.literal('tool_result'), toolUseId: z.string(), content: z.array(z.looseObject({ type: z.string() })) });
/** One sampling content block (2025-11-25 schema `SamplingMessageContentBlock`). */
const SamplingContent = z.discriminatedUnion('type', [TextContent, MediaContent, ToolUseContent, ToolResultContent]);

/** `CreateMessageResult` (2025-11-25 schema): the model's message, which model produced it, and why it stopped. */
const CreateMessageResultSchema = z.looseObject({
  _meta: Meta,
  role: z.enum(['user', 'assistant']),
  content: z.union([SamplingContent, z.array(SamplingContent)]),
  model: z.string(),
  stopReason: z.string().optional(),
});

/** `ListRootsResult` (2025-11-25 client/roots: a root's URI MUST be a `file://` URI). */
const ListRootsResultSchema = z.looseObject({
  _meta: Meta,
  roots: z.array(z.looseObject({ uri: z.string().startsWith('file://'), name: z.string().optional(), _meta: Meta })),
});

const SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
};

/** The first issue of a failed parse, as `path: message` (never the value itself: answers may be sensitive). */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

/**
 * Why `response` is not a valid answer to the input request `{method, params}`, or `undefined` when it is. An
 * unknown method's answer only has to be an object (the gateway does not bridge other kinds).
 */
export function inputAnswerProblem(method: string, params: JsonObject | undefined, response: unknown): string | undefined {
  if (!isObject(response)) return 'the answer must be an object';
  const schema = SCHEMAS[method];
  if (!schema) return undefined;
  const parsed = schema.safeParse(response);
  if (!parsed.success) return firstIssue(parsed.error);
  if (method === 'elicitation/create' && response.action === 'accept') return contentProblem(params, response.content);
  return undefined;
}

/**
 * An accepted form's `content` against the `requestedSchema` asked: each property it names of its type and within its
 * bounds, every required one present, others only where the schema allows them. A URL-mode elicitation (or one without a schema) takes no content
 * check beyond the result's shape.
 */
function contentProblem(params: JsonObject | undefined, content: unknown): string | undefined {
  if (params?.mode === 'url') return content === undefined ? undefined : 'content: a URL-mode elicitation takes no content';
  const schema = params && isObject(params.requestedSchema) ? params.requestedSchema : undefined;
  if (!schema) return undefined;
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
  const given = isObject(content) ? content : {};
  for (const name of required) if (!Object.hasOwn(given, name)) return `content.${name}: required`;
  for (const [name, value] of Object.entries(given)) {
    const property = properties[name];
    // JSON Schema allows properties a schema does not name unless it says `additionalProperties: false` (the SDK
    // clients validate answers the same way, and send such forms).
    if (!Object.hasOwn(properties, name) || !isObject(property)) {
      if (schema.additionalProperties === false) return `content.${name}: not in the requested schema`;
      continue;
    }
    const problem = valueProblem(property, value);
    if (problem) return `content.${name}: ${problem}`;
  }
  return undefined;
}

/** The values a (single- or multi-select) enum property allows: `enum`, or `oneOf`/`anyOf` of `{const}`. */
function enumValues(schema: JsonObject): unknown[] | undefined {
  if (Array.isArray(schema.enum)) return schema.enum;
  const options = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined;
  return options?.filter(isObject).map((o) => o.const);
}

/** One content value against its primitive property schema (2025-11-25 schema `PrimitiveSchemaDefinition`). */
function valueProblem(property: JsonObject, value: unknown): string | undefined {
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  switch (property.type) {
    case 'string': {
      if (typeof value !== 'string') return 'expected a string';
      const allowed = enumValues(property);
      if (allowed && !allowed.includes(value)) return 'not one of the allowed values';
      const min = num(property.minLength);
      const max = num(property.maxLength);
      if (min !== undefined && value.length < min) return `shorter than ${min}`;
      if (max !== undefined && value.length > max) return `longer than ${max}`;
      return undefined;
    }
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return `expected a ${property.type}`;
      if (property.type === 'integer' && !Number.isInteger(value)) return 'expected an integer';
      const min = num(property.minimum);
      const max = num(property.maximum);
      if (min !== undefined && value < min) return `less than ${min}`;
      if (max !== undefined && value > max) return `more than ${max}`;
      return undefined;
    }
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'expected a boolean';
    case 'array': {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return 'expected an array of strings';
      const items = isObject(property.items) ? enumValues(property.items) : undefined;
      if (items && !value.every((v) => items.includes(v))) return 'not one of the allowed values';
      const min = num(property.minItems);
      const max = num(property.maxItems);
      if (min !== undefined && value.length < min) return `fewer than ${min} items`;
      if (max !== undefined && value.length > max) return `more than ${max} items`;
      return undefined;
    }
    default:
      // A property type outside the restricted schema: the upstream asked for it, so its answer is its to judge.
      return undefined;
  }
}

/** What a key of an answer map stands for: the request still waiting for it, one answered already, or nothing asked. */
export type AskedInput = { method: string; params?: JsonObject | undefined } | 'answered' | undefined;

/** A client-chosen key as an error message may name it: quoted, bounded, without control characters. */
function shownKey(key: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this replaces
  const clean = key.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return JSON.stringify(clean.length > 64 ? `${clean.slice(0, 64)}…` : clean);
}

/**
 * Checks a whole answer map before any of it is used: every answer to a waiting request must fit it
 * (`GW_INVALID_INPUT_RESPONSE`), and with `unknownKeys: 'refuse'` a key never asked is refused (`GW_UNKNOWN_INPUT_KEY`).
 * Keys answered already are passed over (a client may resend earlier rounds' answers). A task's `tasks/update` ignores
 * unknown keys instead (tasks extension §Task Update Requests: SHOULD ignore keys not outstanding; conformance acks an
 * unknown key with an invalid value), so it checks only what is outstanding. Throws on the first problem.
 */
export function checkInputAnswers(responses: JsonObject, asked: (key: string) => AskedInput, unknownKeys: 'refuse' | 'ignore'): void {
  for (const [key, answer] of Object.entries(responses)) {
    const request = asked(key);
    if (request === 'answered') continue;
    if (request === undefined) {
      if (unknownKeys === 'refuse') throw new GatewayError('GW_UNKNOWN_INPUT_KEY', { args: [shownKey(key)] });
      continue;
    }
    const problem = inputAnswerProblem(request.method, request.params, answer);
    if (problem !== undefined) throw new GatewayError('GW_INVALID_INPUT_RESPONSE', { args: [shownKey(key), problem] });
  }
}
