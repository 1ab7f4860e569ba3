// `node:fs` plus a globSync that covers what the conformance CLI asks of it: `*`, `**` and `?` in path segments.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

function segmentRegExp(segment) {
  const body = segment
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*')
    .replace(/\?/g, '[^/]');
  return new RegExp(`^${body}$`);
}

export function globSync(pattern, options = {}) {
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const out = new Set();
  for (const p of patterns) {
    const absolute = path.isAbsolute(p);
    const parts = p.split('/').filter((s, i) => s !== '' || i === 0);
    const walk = (dir, rest, rel) => {
      if (rest.length === 0) {
        out.add(absolute ? dir : rel);
        return;
      }
      const [head, ...tail] = rest;
      if (head === '**') {
        walk(dir, tail, rel);
        for (const e of safeReaddir(dir)) if (e.isDirectory()) walk(path.join(dir, e.name), rest, rel ? `${rel}/${e.name}` : e.name);
        return;
      }
      if (!/[*?]/.test(head)) {
        const next = path.join(dir, head);
        if (fs.existsSync(next)) walk(next, tail, rel ? `${rel}/${head}` : head);
        return;
      }
      const re = segmentRegExp(head);
      for (const e of safeReaddir(dir)) if (re.test(e.name)) walk(path.join(dir, e.name), tail, rel ? `${rel}/${e.name}` : e.name);
    };
    if (absolute) walk('/', parts.slice(1), '');
    else walk(cwd, parts, '');
  }
  return [...out];
}

function safeReaddir(dir) {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}
