/**
 * The source files the source checks read: every .ts file under a folder, and a file's code without its comments
 * (what a comment names is not a use of it).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts file under a directory, at any depth. */
export function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** A source's text without its block and line comments. */
export function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}
