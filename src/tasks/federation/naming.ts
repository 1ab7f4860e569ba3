/**
 * How one member of a federated endpoint names what it shows (docs/federation.md §Names): its tools and prompts
 * filtered by the upstream's own names (`include`, `exclude`), renamed, then prefixed with the member's namespace
 * (`<namespace>_<name>`); and which callers may see each of them (`access`). Pure: no I/O.
 */
import { globToRegExp, isObject, type JsonObject } from '../../translate/index.js';
import type { CallerSubject } from '../route.js';

/** What a member shows of one kind (tools or prompts). */
export interface NameRules {
  /** Globs over the upstream's own names; a name shown matches one (default `*`). */
  include: readonly string[];
  /** Globs over the upstream's own names; a name matching one is never shown. */
  exclude: readonly string[];
  /** The upstream's name → the name shown (before the namespace). */
  rename: Readonly<Record<string, string>>;
}

/** One access rule: callers that match `when` see the names `allow` admits and `deny` does not. */
export interface AccessRule {
  when: {
    subjects?: readonly string[] | undefined;
    scopes?: readonly string[] | undefined;
    claims?: Readonly<Record<string, string | readonly string[]>> | undefined;
  };
  /** Globs over the names as clients see them (absent: all). */
  allow?: readonly string[] | undefined;
  /** Globs over the names as clients see them (absent: none). */
  deny?: readonly string[] | undefined;
}

/** The MCP tool-name rule (2025-11-25 and 2026-07-28 server/tools §Tool Names): 1–128 of `A-Za-z0-9_-.`. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

type Kind = 'tool' | 'prompt';

/** One compiled rule set of a kind. */
class KindNames {
  private readonly include: RegExp[];
  private readonly exclude: RegExp[];
  private readonly shownOf = new Map<string, string>();
  private readonly ownOf = new Map<string, string>();

  constructor(
    rules: NameRules,
    private readonly prefix: string,
  ) {
    this.include = rules.include.map(globToRegExp);
    this.exclude = rules.exclude.map(globToRegExp);
    for (const [own, shown] of Object.entries(rules.rename)) {
      this.shownOf.set(own, shown);
      this.ownOf.set(shown, own);
    }
  }

  /** The name shown for the upstream's `own` name, or `undefined` when the member does not show it. */
  shown(own: string): string | undefined {
    if (!this.include.some((re) => re.test(own)) || this.exclude.some((re) => re.test(own))) return undefined;
    const name = `${this.prefix}${this.shownOf.get(own) ?? own}`;
    return TOOL_NAME.test(name) ? name : undefined;
  }

  /** The upstream's own name of a shown name, or `undefined` when no name of this member is shown so. */
  own(shown: string): string | undefined {
    if (!shown.startsWith(this.prefix)) return undefined;
    const bare = shown.slice(this.prefix.length);
    const own = this.ownOf.get(bare) ?? (this.shownOf.has(bare) ? undefined : bare);
    return own !== undefined && this.shown(own) === shown ? own : undefined;
  }
}

/** A member's names and access rules, compiled. */
export class MemberNames {
  private readonly kinds: Record<Kind, KindNames>;
  private readonly access: Array<{ rule: AccessRule; allow?: RegExp[]; deny?: RegExp[] }>;

  private readonly plain: boolean;

  constructor(o: { namespace?: string | undefined; tools: NameRules; prompts: NameRules; access: readonly AccessRule[] }) {
    const prefix = o.namespace ? `${o.namespace}_` : '';
    const asIs = (r: NameRules) => r.include.length === 1 && r.include[0] === '*' && r.exclude.length === 0 && Object.keys(r.rename).length === 0;
    this.plain = prefix === '' && asIs(o.tools) && asIs(o.prompts) && o.access.length === 0;
    this.kinds = { tool: new KindNames(o.tools, prefix), prompt: new KindNames(o.prompts, prefix) };
    this.access = o.access.map((rule) => ({
      rule,
      ...(rule.allow ? { allow: rule.allow.map(globToRegExp) } : {}),
      ...(rule.deny ? { deny: rule.deny.map(globToRegExp) } : {}),
    }));
  }

  /** The name a tool or prompt of the upstream is shown as, or `undefined`: not shown. */
  shown(kind: Kind, own: string): string | undefined {
    return this.kinds[kind].shown(own);
  }

  /** The upstream's own name of a shown name, or `undefined`. */
  own(kind: Kind, shown: string): string | undefined {
    return this.kinds[kind].own(shown);
  }

  /** Whether the caller may see and use the shown name: the first rule whose `when` matches decides; none: yes. */
  allows(shown: string, subject: CallerSubject | undefined): boolean {
    for (const a of this.access) {
      if (!matchesWhen(a.rule.when, subject)) continue;
      if (a.allow && !a.allow.some((re) => re.test(shown))) return false;
      return !a.deny?.some((re) => re.test(shown));
    }
    return true;
  }

  /** Whether every name of the upstream is shown as it is, to everyone: no namespace, filter, rename or access rule. */
  get showsAllAsIs(): boolean {
    return this.plain;
  }

  /** Whether access rules apply at all (a list without them is the same for every caller who reads it). */
  get hasAccessRules(): boolean {
    return this.access.length > 0;
  }
}

/** Whether every part `when` names matches the caller (an empty `when` matches everyone). */
function matchesWhen(when: AccessRule['when'], subject: CallerSubject | undefined): boolean {
  if (when.subjects && !(subject?.name !== undefined && when.subjects.includes(subject.name))) return false;
  if (when.scopes && !when.scopes.every((s) => subject?.scopes?.includes(s))) return false;
  if (when.claims) {
    for (const [claim, want] of Object.entries(when.claims)) {
      const have = subject?.claims?.[claim];
      const wanted = typeof want === 'string' ? [want] : want;
      const values = Array.isArray(have) ? have : have === undefined ? [] : [have];
      if (!values.some((v) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && wanted.includes(String(v)))) return false;
    }
  }
  return true;
}

/** A list entry's `name` (`undefined` when it has none). */
export function nameOf(entry: unknown): string | undefined {
  return isObject(entry) && typeof entry.name === 'string' ? entry.name : undefined;
}

/** `entry` shown under `name`. */
export function renamed(entry: JsonObject, name: string): JsonObject {
  return entry.name === name ? entry : { ...entry, name };
}
