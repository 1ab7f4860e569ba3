/**
 * What a reload (SIGHUP) may change in a running gateway, decided key by key: the settings read per request or per
 * decision (tool rules, upstream headers, limits and bounds) change live; whatever a server, a store, a socket or a
 * key was built from (addresses, paths, URLs, the store, the secret, authentication, Node's server timeouts and
 * Fastify's body limit, upstreams added or removed) needs a restart. Which keys are live is said once, beside each key
 * in the schema (`live`, config/schema-parts.ts); a key not marked needs a restart: a new configuration key is safe by
 * default.
 */
import { z } from 'zod';
import { ConfigSchema, type GatewayConfig, type UpstreamConfig } from './schema.js';
import { isLive } from './schema-parts.js';

/**
 * Keys (dotted paths; `upstreams.*` for each upstream present before and after) that change live: those the schema
 * marks, in schema order. A live key is one setting however deep its value (a rule list, whose order decides which rule
 * wins; the headers, sent together).
 */
export const LIVE_KEYS: readonly string[] = liveKeysOf(ConfigSchema, '');
const LIVE = new Set(LIVE_KEYS);

/** The dotted paths of the keys marked live under `schema`, at `path` (an array's items at `.*`). */
function liveKeysOf(schema: z.ZodType, path: string, out: string[] = []): string[] {
  if (isLive(schema)) {
    if (!out.includes(path)) out.push(path);
  } else if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional) {
    liveKeysOf(schema.unwrap() as z.ZodType, path, out);
  } else if (schema instanceof z.ZodObject) {
    for (const [k, child] of Object.entries(schema.shape)) liveKeysOf(child as z.ZodType, path ? `${path}.${k}` : k, out);
  } else if (schema instanceof z.ZodArray) {
    liveKeysOf(schema.element as z.ZodType, `${path}.*`, out);
  } else if (schema instanceof z.ZodUnion) {
    for (const option of schema.options) liveKeysOf(option as z.ZodType, path, out);
  }
  return out;
}

/** What a reload would do: the changed keys applied live, and the changed keys that wait for a restart. */
export interface ReloadPlan {
  /** Dotted keys that differ and change live (`upstreams.<name>.tools`, `tasks.pollBurst`, …). */
  applied: string[];
  /** Dotted keys that differ and are not applied until a restart (`server.port`, `upstreams.<name>`, …). */
  needsRestart: string[];
  /** The configuration the gateway runs with afterwards: `prev` with the live keys of `next`. */
  effective: GatewayConfig;
}

/** Compares two validated configurations (the running one first); names keys only, never their values. */
export function planReload(prev: Readonly<GatewayConfig>, next: Readonly<GatewayConfig>): ReloadPlan {
  const applied: string[] = [];
  const needsRestart: string[] = [];
  const note = (path: string, pattern: string) => (LIVE.has(pattern) ? applied : needsRestart).push(path);

  const keys = new Set([...Object.keys(prev), ...Object.keys(next)]);
  for (const key of keys) {
    if (key === 'upstreams') continue;
    diff((prev as Record<string, unknown>)[key], (next as Record<string, unknown>)[key], key, key, note);
  }
  // Upstreams by name: one added or removed needs a restart (a route, a path, clients); one present in both is
  // compared key by key.
  const before = new Map(prev.upstreams.map((u) => [u.name, u]));
  const after = new Map(next.upstreams.map((u) => [u.name, u]));
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name);
    const b = after.get(name);
    if (!a || !b) {
      needsRestart.push(`upstreams.${name}`);
      continue;
    }
    diff(a, b, `upstreams.${name}`, 'upstreams.*', note);
  }
  // The order of the upstreams is the order their routes are matched and logged in: a restart too.
  const common = (list: readonly UpstreamConfig[], other: Map<string, UpstreamConfig>) => list.filter((u) => other.has(u.name)).map((u) => u.name);
  if (!same(common(prev.upstreams, after), common(next.upstreams, before))) needsRestart.push('upstreams (order)');

  return { applied, needsRestart, effective: effectiveConfig(prev, next, new Set(applied)) };
}

/**
 * Walks two values in step down to leaves (anything but a plain object, or a live key's whole value); each differing
 * leaf is noted once.
 */
function diff(a: unknown, b: unknown, path: string, pattern: string, note: (path: string, pattern: string) => void): void {
  if (isPlain(a) && isPlain(b) && !LIVE.has(pattern)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) diff(a[k], b[k], `${path}.${k}`, `${pattern}.${k}`, note);
    return;
  }
  if (!same(a, b)) note(path, pattern);
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `prev` with the applied keys taken from `next` (the configuration the gateway then runs with). */
function effectiveConfig(prev: Readonly<GatewayConfig>, next: Readonly<GatewayConfig>, applied: ReadonlySet<string>): GatewayConfig {
  const out = structuredClone(prev) as GatewayConfig;
  for (const path of applied) {
    const parts = path.split('.');
    if (parts[0] === 'upstreams') {
      // An upstream's key: the upstream is found by name (`upstreams.<name>.<key…>`).
      const [, name, ...key] = parts;
      const target = out.upstreams.find((u) => u.name === name);
      const source = next.upstreams.find((u) => u.name === name);
      if (target && source) setPath(target as unknown as Record<string, unknown>, key, getPath(source as unknown as Record<string, unknown>, key));
      continue;
    }
    setPath(out as unknown as Record<string, unknown>, parts, getPath(next as unknown as Record<string, unknown>, parts));
  }
  return out;
}

function getPath(o: Record<string, unknown>, parts: string[]): unknown {
  let v: unknown = o;
  for (const p of parts) v = isPlain(v) ? v[p] : undefined;
  return v;
}

function setPath(o: Record<string, unknown>, parts: string[], value: unknown): void {
  let v: Record<string, unknown> = o;
  for (const p of parts.slice(0, -1)) {
    if (!isPlain(v[p])) v[p] = {};
    v = v[p] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1] as string;
  if (value === undefined) delete v[last];
  else v[last] = structuredClone(value);
}
