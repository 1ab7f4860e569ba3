/**
 * `--upstream` (repeatable) as upstreams of the configuration: `URL`, `NAME=URL`, `NAME=COMMAND` (split into words as a
 * shell would, without expansion), and `NAME=--` whose command is everything after a standalone `--`. Several values
 * make one federated endpoint at /mcp; one value behaves as the single `--upstream URL` always did.
 */
import { DEFAULTS } from './defaults.js';
import { NAMESPACE } from './federation.js';

/** The flag's forms, as an error names them. */
const FORMS = 'URL, NAME=URL, NAME=COMMAND or NAME=-- (the command after a standalone --)';

/** A value that is a URL (the scheme decides; a URL without one is left for the schema to name). */
const URL_LIKE = /^https?:\/\//i;

/** One `--upstream` value that could not be read, named by its position (the problem of the whole list: no position). */
export class UpstreamFlagError extends Error {
  constructor(
    readonly index: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamFlagError';
  }
}

/**
 * Splits a command line into words as a POSIX shell does, without expansion or globbing: blanks separate words,
 * `'…'` keeps everything literally, `"…"` keeps everything but `\` before `"`, `\`, `$`, `` ` `` or a newline, and a `\`
 * outside quotes keeps the next character. An unclosed quote or a trailing `\` is an error.
 */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error('an unclosed single quote');
      word += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('an unclosed double quote');
        const d = text[i] as string;
        if (d === '"') break;
        const next = text[i + 1];
        if (d === '\\' && next !== undefined && '"\\$`\n'.includes(next)) {
          if (next !== '\n') word += next;
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
      i++;
    } else if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined) throw new Error('a trailing backslash');
      // A backslash-newline joins lines, as in a shell.
      if (next !== '\n') word += next;
      i += 2;
    } else {
      word += c;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * The upstreams (raw, for the schema to validate) that `--upstream` values make, in order, at `/mcp`; `rest` is the
 * command line after a standalone `--` (the `NAME=--` upstream's command). Throws UpstreamFlagError for a value no form
 * reads.
 */
export function upstreamsFromFlags(values: readonly string[], rest?: readonly string[]): Array<Record<string, unknown>> {
  const several = values.length > 1;
  let bare = 0;
  const tailAt = values.findIndex((v) => /^[^=]*=--$/.test(v) && !URL_LIKE.test(v));
  if (tailAt >= 0 && tailAt !== values.length - 1)
    throw new UpstreamFlagError(tailAt, `${values[tailAt]}: only the last --upstream may take its command from after --`);
  if (tailAt < 0 && rest !== undefined)
    throw new UpstreamFlagError(
      undefined,
      `arguments after -- (${JSON.stringify(rest.join(' '))}) are the command of an --upstream NAME=--, and none is given`,
    );
  return values.map((value, i) => {
    const base = { path: DEFAULTS.path };
    const eq = value.indexOf('=');
    if (URL_LIKE.test(value) || eq < 0) {
      bare++;
      return { ...base, name: bare === 1 ? 'upstream' : `upstream${bare}`, url: value };
    }
    const name = value.slice(0, eq);
    const target = value.slice(eq + 1);
    if (name === '') throw new UpstreamFlagError(i, `${JSON.stringify(value)} names no upstream before "=": --upstream takes ${FORMS}`);
    if (target === '') throw new UpstreamFlagError(i, `${JSON.stringify(value)} gives nothing after "=": --upstream takes ${FORMS}`);
    // Several upstreams on one path: each named one is shown under its name, so that their tools do not collide.
    if (several && !NAMESPACE.test(name))
      throw new UpstreamFlagError(
        i,
        `${JSON.stringify(name)} would prefix its tools and prompts beside other --upstream values, and a prefix is a letter or digit, then up to ` +
          '31 letters, digits or "-"',
      );
    const named = { ...base, name, ...(several ? { expose: { namespace: name } } : {}) };
    if (URL_LIKE.test(target)) return { ...named, url: target };
    let command: string[];
    if (i === tailAt) {
      if (rest === undefined || rest.length === 0)
        throw new UpstreamFlagError(i, `${value}: the command must follow a standalone -- at the end of the command line`);
      command = [...rest];
    } else {
      try {
        command = shellWords(target);
      } catch (e) {
        throw new UpstreamFlagError(i, `the command of ${name} has ${(e as Error).message}: ${JSON.stringify(target)}`);
      }
      if (command.length === 0) throw new UpstreamFlagError(i, `the command of ${name} is empty: --upstream takes ${FORMS}`);
    }
    return { ...named, command };
  });
}
