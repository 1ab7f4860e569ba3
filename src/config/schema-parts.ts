/** Pieces the configuration schema's parts share: reference annotations, number and URL shapes. */
import { z } from 'zod';

/**
 * The key of a zod schema's metadata saying what applies when a key without a fixed default is absent:
 * docs/configuration.md shows it in the default column, and the generated `schema/gateway.schema.json` in the key's
 * description (the file holds standard JSON Schema keywords only, so that validators take it with default options).
 */
export const WHEN_ABSENT = 'x-when-absent';

/** A key's reference text: its meaning, and what applies when it is absent (for a key without a fixed default). */
export function doc(description: string, whenAbsent: string): { description: string; [WHEN_ABSENT]: string } {
  return { description, [WHEN_ABSENT]: whenAbsent };
}

export const positiveInt = z.number().int().positive();

/** A URL as an error message may show it: any password in it replaced by `***`. */
export function redactedUrl(value: string): string {
  try {
    const u = new URL(value);
    if (!u.password) return value;
    u.password = '***';
    return u.href;
  } catch {
    return value.replace(/\/\/([^@/]*?):[^@/]*@/, '//$1:***@');
  }
}

/** An HTTP(S) URL; a wrong one is named in the error (a URL without a scheme, `localhost:3000/mcp`, included). */
export const httpUrl = z.url({ protocol: /^https?$/, error: (issue) => `an http:// or https:// URL, got ${JSON.stringify(redactedUrl(String(issue.input)))}` });

/**
 * Why `value` is not a Redis URL the store takes (`redis://…` or `rediss://…`), or `undefined` when it is one. Shared by
 * `store.url` and the variable `store.urlEnv` names, which only building reads.
 */
export function redisUrlProblem(value: string): string | undefined {
  const shown = JSON.stringify(redactedUrl(value));
  if (!/^rediss?:\/\//i.test(value)) return `a redis:// or rediss:// URL, got ${shown}`;
  if (!URL.canParse(value)) return `not a valid URL: ${shown}`;
  return undefined;
}

/** Why `value` is not a Postgres URL the store takes (`postgres://…` or `postgresql://…`), or `undefined` when it is one. */
export function postgresUrlProblem(value: string): string | undefined {
  const shown = JSON.stringify(redactedUrl(value));
  if (!/^postgres(ql)?:\/\//i.test(value)) return `a postgres:// or postgresql:// URL, got ${shown}`;
  if (!URL.canParse(value)) return `not a valid URL: ${shown}`;
  return undefined;
}

/** A Postgres schema name the store takes: a plain lower-case identifier, short enough that `<schema>_events` is a channel. */
export const POSTGRES_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

export const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The keys a reload applies without a restart (their schemas, as they stand in their object's shape). */
const LIVE = new WeakSet<z.ZodType>();

/**
 * Marks a key as live: a reload (SIGHUP) applies it to the running gateway (docs/operations.md § Reload). The mark is
 * the one statement of it: `config/reload.ts` derives its list from the marks, and the key's description says so, in
 * the JSON Schema and the reference. Applied last, to the key's schema as its object holds it.
 */
export function live<T extends z.ZodType>(schema: T): T {
  const marked = schema.describe(`${schema.description ?? ''}; live on reload`) as T;
  LIVE.add(marked);
  return marked;
}

/** Whether `live()` marked this schema. */
export function isLive(schema: z.ZodType): boolean {
  return LIVE.has(schema);
}
