// The command line: --help, configuration errors, the embedded default (bundled demo upstream), shutdown.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { post } from './helpers/modern.js';

const root = new URL('..', import.meta.url).pathname;
const cli = join(root, 'src/cli.ts');

// Node itself runs the CLI with tsx's loader (not the tsx wrapper process): the wrapper relays a signal and, when the
// child has not confirmed it within 30 ms (a loaded machine), kills it with SIGKILL and exits 143.
function runCli(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit').then(([code]) => code as number);
  return { child, exited, out: () => stdout, err: () => stderr };
}

t.test('--help lists every flag and exits 0', async (t) => {
  const p = runCli(['--help']);
  t.equal(await p.exited, 0);
  for (const flag of ['--config', '--upstream', '--host', '--port', '--demo', '--help', '--version']) t.match(p.out(), flag);
  t.match(p.out(), /MCP_GATEWAY_REDIS_URL/, 'names the Redis URL variable');
  t.match(p.out(), /MCP_GATEWAY_STATE_SECRET[^]*REQUIRED with the Redis store/, 'says the secret is required with Redis');
});

t.test('an unknown flag exits 2 with the usage', async (t) => {
  const p = runCli(['--bogus']);
  t.equal(await p.exited, 2);
  t.match(p.err(), /bogus/);
  t.match(p.err(), /Usage:/);
});

t.test('a bad config fails at start, listing every problem by key path', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'bad.yaml');
  await writeFile(file, 'server:\n  prot: 1\nupstreams:\n  - name: a\n    url: notaurl\n    tools:\n      "*": { task: auto }\n');
  const p = runCli(['--config', file]);
  t.equal(await p.exited, 2);
  const err = p.err();
  t.match(err, /server: .*prot/);
  t.match(err, /upstreams\.0\.url/);
  t.match(err, /upstreams\.0\.tools\.\*\.afterMs/);
});

t.test('--port must be a port number', async (t) => {
  const p = runCli(['--port', 'http']);
  t.equal(await p.exited, 2);
  t.match(p.err(), /server\.port/);
});

t.test('with no upstream it serves the bundled demo upstream, and stops on SIGTERM', async (t) => {
  const p = runCli(['--port', '0']);
  let endpoint: string | undefined;
  for await (const chunk of p.child.stdout) {
    const m = /"endpoint":"([^"]+)"/.exec(String(chunk)) ?? /"endpoint":"([^"]+)"/.exec(p.out());
    if (m) {
      endpoint = m[1];
      break;
    }
  }
  t.ok(endpoint, 'endpoint logged');
  const r = await post(endpoint as string, 'tools/call', { name: 'greet', arguments: { name: 'CLI' } }, { headers: { authorization: 'Bearer secret-token-xyz' } });
  t.equal(r.body.result.content[0].text, 'Hello, CLI!');
  const d = await post(endpoint as string, 'server/discover');
  t.equal(d.body.result._meta['io.modelcontextprotocol/serverInfo'].name, 'demo-legacy-server');
  t.notMatch(p.out() + p.err(), /secret-token-xyz/, 'no credentials in the log');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});
