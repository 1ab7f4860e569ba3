/**
 * Federation: several upstreams on one path form one MCP endpoint whose tool and prompt lists are the union of the
 * members' (docs/configuration.md § Federation). Here: how a member is shown there (`upstreams[].expose`), who may
 * use which of its names (`upstreams[].access`), the endpoint's own introduction (`endpoints[]`), the checks across
 * members, and which paths are federated (`federatedPaths`, read by the runtime).
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { doc } from './schema-parts.js';

/** An MCP tool or prompt name: 1 to 128 of `A-Za-z0-9_-.`. */
export const MCP_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const MCP_NAME_MAX = 128;

/** A member's namespace: its names are shown as `<namespace>_<name>`. */
export const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/;

/** What `listCache` may say: cached lists kept per caller principal, or one for all callers. */
export const LIST_CACHES = ['principal', 'shared'] as const;

/** A name glob, as the tool rules take them (`*` any run, `?` one character: translate/glob.ts). */
const glob = z.string().min(1);

/** Which of a member's tools (or prompts) are shown, and under which names; the defaults show all, unrenamed. */
const nameFilter = (what: 'tool' | 'prompt') =>
  z
    .strictObject({
      include: z
        .array(glob)
        .default(['*'])
        .describe(`globs over the member's own ${what} names: only those matching one are shown (\`*\` any run of characters, \`?\` one)`),
      exclude: z.array(glob).default([]).describe(`globs over the member's own ${what} names: those matching one are not shown, even if included`),
      rename: z
        .record(z.string().min(1), z.string().regex(MCP_NAME, `an MCP ${what} name: 1 to 128 of letters, digits, "_", "-" and "."`))
        .default({})
        .describe(`the member's ${what} name → the name shown (before the namespace prefix); no two to the same name`),
    })
    .superRefine((f, ctx) => {
      const by = new Map<string, string>();
      for (const [from, to] of Object.entries(f.rename)) {
        const other = by.get(to);
        if (other !== undefined)
          ctx.addIssue({ code: 'custom', path: ['rename', from], message: `"${from}" and "${other}" are both renamed to "${to}": one name, two ${what}s` });
        else by.set(to, from);
      }
    });

const FILTER_DEFAULTS = { include: ['*'], exclude: [], rename: {} };

/** `upstreams[].expose` when the file says nothing. */
const EXPOSE_DEFAULTS = {
  tools: FILTER_DEFAULTS,
  prompts: FILTER_DEFAULTS,
  required: true,
  listCache: 'principal',
} as const;

/** How one upstream is shown on a federated path (`upstreams[].expose`). */
export const ExposeSchema = z
  .strictObject({
    namespace: z
      .string()
      .regex(NAMESPACE, 'a letter or digit, then up to 31 letters, digits or "-"')
      .optional()
      .meta(doc('on a federated path, its tool and prompt names are shown as `<namespace>_<name>`', 'no prefix')),
    tools: nameFilter('tool').default(FILTER_DEFAULTS).describe('which of its tools a federated path shows, and how named'),
    prompts: nameFilter('prompt').default(FILTER_DEFAULTS).describe('which of its prompts a federated path shows, and how named'),
    resourcePrefix: z
      .string()
      .min(1)
      .optional()
      .meta(doc('resource URIs starting with it are read from this member when two members could serve one', 'no preference')),
    required: z.boolean().default(true).describe('`/readyz` of a federated path needs this member up (`false`: the path is ready without it)'),
    listCache: z
      .enum(LIST_CACHES)
      .default('principal')
      .describe("cached tool and prompt lists: kept per caller `principal`, or `shared` by all callers when the member's lists do not depend on the caller"),
  })
  .superRefine((e, ctx) => {
    // The shown name is `<namespace>_<renamed>`: it must still be an MCP name.
    if (e.namespace === undefined) return;
    const room = MCP_NAME_MAX - e.namespace.length - 1;
    for (const kind of ['tools', 'prompts'] as const) {
      for (const [from, to] of Object.entries(e[kind].rename)) {
        if (to.length > room)
          ctx.addIssue({
            code: 'custom',
            path: [kind, 'rename', from],
            message: `"${e.namespace}_${to}" is longer than ${MCP_NAME_MAX} characters (the namespace, "_" and the name): at most ${room} here`,
          });
      }
    }
  })
  .default(EXPOSE_DEFAULTS)
  .describe('how it is shown on a federated path (several upstreams on one path, or one that renames, filters or prefixes its names)');

/** Who one access rule is about: every part given must match; `{}` matches every caller. */
const AccessWhenSchema = z.strictObject({
  subjects: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .meta(doc("the caller's subject is one of these (`jwt`: `sub`; `header`: the identity header's value)", 'any subject')),
  scopes: z.array(z.string().min(1)).min(1).optional().meta(doc("the caller's token grants every one of these scopes", 'any scopes')),
  claims: z
    .record(z.string().min(1), z.union([z.string(), z.array(z.string()).min(1)]))
    .optional()
    .meta(doc('each claim named has the value given, or one of the values listed (a list claim: contains it)', 'any claims')),
});

/** One access rule of a member (`upstreams[].access[]`): the first whose `when` matches the caller decides. */
export const AccessRuleSchema = z.strictObject({
  when: AccessWhenSchema.describe('which callers the rule is about; every part given must match (`{}`: everyone)'),
  allow: z
    .array(glob)
    .optional()
    .meta(doc('globs over the names as clients see them (after `rename` and the namespace): only these may be listed and called', 'all')),
  deny: z.array(glob).optional().meta(doc('globs over the same names: never listed nor callable, even if allowed', 'none')),
});

/** `endpoints[]`: how a federated path introduces itself. */
export const EndpointSchema = z.strictObject({
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9._~/-]*$/, 'an absolute URL path such as /mcp')
    .describe("the federated path (an upstream's `path`)"),
  name: z.string().min(1).optional().meta(doc("the endpoint's `serverInfo.name`", '`mcp-tasks-gateway`')),
  version: z.string().min(1).optional().meta(doc("the endpoint's `serverInfo.version`", "the gateway's version")),
  instructions: z.string().min(1).optional().meta(doc("the endpoint's instructions, put before the members' own", "the members' own only")),
});

/** One validated `endpoints[]` entry. */
export type EndpointConfig = z.infer<typeof EndpointSchema>;

/** What the federation reads of an upstream (so that this file needs no import of the upstream schema). */
interface Member {
  name: string;
  path: string;
  auth: unknown;
  passthrough: { paths: readonly string[]; wellKnownRoot?: boolean | undefined };
  expose: z.infer<typeof ExposeSchema>;
  access: ReadonlyArray<z.infer<typeof AccessRuleSchema>>;
}

/** Whether a name filter is the default one (everything, unrenamed). */
function defaultFilter(f: { include: readonly string[]; exclude: readonly string[]; rename: Record<string, string> }): boolean {
  return f.include.length === 1 && f.include[0] === '*' && f.exclude.length === 0 && Object.keys(f.rename).length === 0;
}

/**
 * Whether an upstream alone on its path still asks for a federated endpoint: a namespace, a tool or prompt filter or
 * renaming, or access rules (a plain pass-through could honour none of these).
 */
export function shapesItsNames(u: Pick<Member, 'expose' | 'access'>): boolean {
  const e = u.expose;
  return (e.namespace ?? '') !== '' || !defaultFilter(e.tools) || !defaultFilter(e.prompts) || u.access.length > 0;
}

/** The upstreams of each path, in configuration order. */
function byPath<U extends Pick<Member, 'path'>>(upstreams: readonly U[]): Map<string, U[]> {
  const out = new Map<string, U[]>();
  for (const u of upstreams) {
    const list = out.get(u.path);
    if (list) list.push(u);
    else out.set(u.path, [u]);
  }
  return out;
}

/**
 * The federated paths and their members in configuration order: a path with several upstreams, or with one that
 * `shapesItsNames`. Every other path is one upstream's, passed through.
 */
export function federatedPaths<U extends Pick<Member, 'path' | 'expose' | 'access'>>(config: { readonly upstreams: readonly U[] }): Map<string, U[]> {
  const out = new Map<string, U[]>();
  for (const [path, members] of byPath(config.upstreams)) {
    if (members.length > 1 || (members[0] !== undefined && shapesItsNames(members[0]))) out.set(path, members);
  }
  return out;
}

/** The paths several upstreams share (one endpoint, one authenticator, no OAuth pass-through). */
export function sharedPaths(upstreams: ReadonlyArray<Pick<Member, 'path'>>): Set<string> {
  return new Set([...byPath(upstreams)].filter(([, members]) => members.length > 1).map(([path]) => path));
}

/**
 * The checks across the members of a shared path, and of `endpoints[]`: distinct namespaces, one authenticator, no
 * OAuth pass-through; each endpoint on an upstream's path, once.
 */
export function checkFederation(upstreams: readonly Member[], endpoints: readonly EndpointConfig[], ctx: z.RefinementCtx): void {
  const index = new Map(upstreams.map((u, i) => [u, i]));
  for (const [path, members] of byPath(upstreams)) {
    if (members.length < 2) continue;
    const first = members[0] as Member;
    const firstAt = index.get(first) as number;
    const namespaces = new Map<string, Member>();
    for (const u of members) {
      const i = index.get(u) as number;
      const ns = u.expose.namespace;
      const clash = ns === undefined ? undefined : namespaces.get(ns);
      if (ns !== undefined && clash)
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', i, 'expose', 'namespace'],
          message:
            `namespace "${ns}" is already upstream ${clash.name}'s (upstreams.${index.get(clash)}) on ${path}: ` +
            `upstream ${u.name} needs another (members of one path need distinct namespaces)`,
        });
      else if (ns !== undefined) namespaces.set(ns, u);
      if (u !== first && !isDeepStrictEqual(u.auth, first.auth))
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', i, 'auth'],
          message:
            `upstream ${u.name} authenticates its callers otherwise than upstream ${first.name} (upstreams.${firstAt}) on ${path}: ` +
            'the members of one path share one endpoint, so one authenticator (give them the same auth)',
        });
      const passing = [...(u.passthrough.paths.length > 0 ? ['paths'] : []), ...(u.passthrough.wellKnownRoot === true ? ['wellKnownRoot'] : [])];
      for (const key of passing)
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', i, 'passthrough', key],
          message:
            `upstream ${u.name} shares ${path} with ${others(members, u)}: OAuth pass-through needs one authorization server per endpoint: ` +
            'keep it for single-member endpoints',
        });
    }
  }
  const paths = new Set(upstreams.map((u) => u.path));
  const seen = new Map<string, number>();
  endpoints.forEach((e, i) => {
    const prev = seen.get(e.path);
    if (prev !== undefined)
      ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'path'], message: `path ${e.path} is already described by endpoints.${prev}` });
    else seen.set(e.path, i);
    if (!paths.has(e.path)) ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'path'], message: `no upstream is on path ${e.path}` });
  });
}

/** The other members of a path, by name. */
function others(members: readonly Member[], u: Member): string {
  const names = members.filter((m) => m !== u).map((m) => m.name);
  return names.length === 1 ? `upstream ${names[0]}` : `upstreams ${names.join(', ')}`;
}

/** One validated `upstreams[].expose`. */
export type ExposeConfig = z.infer<typeof ExposeSchema>;
/** One validated `upstreams[].access[]` rule. */
export type AccessRule = z.infer<typeof AccessRuleSchema>;
