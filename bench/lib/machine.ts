/** What the results say about the machine and the code they were measured on. */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';

/** The machine, as the results describe it. */
export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

/** Describes this machine. */
export function machine(): Machine {
  const c = cpus();
  return {
    nproc: c.length,
    cpuModel: c[0]?.model.trim() ?? 'unknown',
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

/** The 1, 5 and 15 minute load averages, formatted. */
export function load(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
}

/** `abc1234` (plus ` + uncommitted changes`) of the checkout at `dir`, or why not. */
export function commitOf(dir: string): string {
  const head = spawnSync('git', ['-C', dir, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' });
  if (head.status !== 0) return 'unknown (not a git checkout)';
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  const subject = head.stdout.trim();
  return `${subject.length > 90 ? `${subject.slice(0, 90)}…` : subject}${dirty.stdout.trim() ? ' (+ uncommitted changes)' : ''}`;
}
