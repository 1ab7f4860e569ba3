/** config: strict schema with named defaults, overrides, and a loader that lists every problem by key path (§5.5). */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ConfigError, DEFAULTS, describeConfig, loadConfigFile, parseConfig, type ConfigOverrides } from '../../src/config/index.js';
import { TASK_MODES, UPSTREAM_ERAS } from '../../src/config/schema.js';

const repoConfigDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'config');
const up = (extra: Record<string, unknown> = {}) => ({ name: 'a', url: 'http://127.0.0.1:3000/mcp', ...extra });

/** Runs parseConfig expecting a ConfigError; returns its problems. */
function problemsOf(raw: unknown, overrides?: ConfigOverrides): string[] {
  try {
    parseConfig(raw, overrides);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

t.test('defaults', async (t) => {
  for (const raw of [{}, undefined, null]) {
    const c = parseConfig(raw);
    t.equal(c.server.host, '127.0.0.1', `${raw}: host`);
    t.equal(c.server.port, 8080, `${raw}: port`);
    t.strictSame(c.store, { kind: 'memory' }, `${raw}: store`);
    t.strictSame(c.upstreams, [], `${raw}: no upstreams`);
  }
  const c = parseConfig({});
  t.equal(c.server.bodyLimitBytes, DEFAULTS.bodyLimitBytes);
  t.equal(c.server.keepAliveMs, DEFAULTS.keepAliveMs);
  t.equal(c.server.maxListenStreams, DEFAULTS.maxListenStreams);
  t.notOk('allowedHosts' in c.server, 'no allow-list unless configured');
  t.strictSame(c.input, {
    holdMs: DEFAULTS.inputHoldMs,
    maxHeldCalls: DEFAULTS.maxHeldCalls,
    maxHeldCallsPerPrincipal: DEFAULTS.maxHeldCallsPerPrincipal,
    maxRequestsPerRound: DEFAULTS.maxInputRequestsPerRound,
    maxRoundsPerTask: DEFAULTS.maxInputRoundsPerTask,
  });
  t.strictSame(c.sessions, {
    maxPerUpstream: DEFAULTS.maxSessionsPerUpstream,
    idleMs: DEFAULTS.sessionIdleMs,
    warmIdle: DEFAULTS.warmIdleSessions,
    acquireTimeoutMs: DEFAULTS.sessionAcquireTimeoutMs,
  });
  t.strictSame(c.clientSessions, { max: DEFAULTS.maxClientSessions, idleMs: DEFAULTS.clientSessionIdleMs });
  t.strictSame(parseConfig({ clientSessions: { max: 3 } }).clientSessions, { max: 3, idleMs: DEFAULTS.clientSessionIdleMs });
  t.equal(DEFAULTS.host, '127.0.0.1');
  t.equal(DEFAULTS.port, 8080);

  const u = parseConfig({ upstreams: [up()] }).upstreams[0];
  t.strictSame(
    u,
    {
      name: 'a',
      url: 'http://127.0.0.1:3000/mcp',
      path: '/mcp',
      headers: {},
      timeoutMs: DEFAULTS.upstreamTimeoutMs,
      era: 'auto',
      probeTimeoutMs: DEFAULTS.probeTimeoutMs,
      cache: { ttlMs: 0, scope: 'private' },
      sessions: { scope: DEFAULTS.sessionScope, anonymousScope: DEFAULTS.anonymousSessionScope },
      tools: { '*': { task: 'native' } },
      auth: { mode: 'bearer' },
      passthrough: { paths: [] },
      env: {},
      restart: { initialDelayMs: 100, maxDelayMs: 30_000, resetAfterMs: 60_000 },
      expose: {
        tools: { include: ['*'], exclude: [], rename: {} },
        prompts: { include: ['*'], exclude: [], rename: {} },
        required: true,
        listCache: 'principal',
      },
      access: [],
    },
    'upstream defaults, tools default {"*":{task:"native"}}, era probed, auth bearer',
  );

  const rule = parseConfig({ upstreams: [up({ tools: { slow: {} } })] }).upstreams[0]?.tools.slow;
  t.strictSame(rule, { task: 'native' }, 'a rule defaults to native');
  t.same([...TASK_MODES], ['native', 'off', 'auto', 'always', 'required', 'job']);
});

t.test('upstreams[].era pins the era or leaves it to the probe; probeTimeoutMs bounds the probe', async (t) => {
  t.same([...UPSTREAM_ERAS], ['auto', 'modern', 'legacy', 'dual']);
  for (const era of UPSTREAM_ERAS) t.equal(parseConfig({ upstreams: [up({ era })] }).upstreams[0]?.era, era, era);
  t.equal(parseConfig({ upstreams: [up({ probeTimeoutMs: 250 })] }).upstreams[0]?.probeTimeoutMs, 250);
  const bad = problemsOf({ upstreams: [up({ era: 'both' })] });
  t.equal(bad.length, 1);
  t.match(bad[0], /upstreams\.0\.era/, 'the problem names the key');
  t.match(problemsOf({ upstreams: [up({ probeTimeoutMs: 0 })] })[0], /upstreams\.0\.probeTimeoutMs/);
});

t.test('the result is deeply frozen', async (t) => {
  const c = parseConfig({ upstreams: [up({ tools: { x: { task: 'off' } } })] });
  t.ok(Object.isFrozen(c));
  t.ok(Object.isFrozen(c.server));
  t.ok(Object.isFrozen(c.upstreams));
  t.ok(Object.isFrozen(c.upstreams[0]?.tools.x));
  t.throws(
    () => {
      (c.server as { port: number }).port = 1;
    },
    TypeError,
    'strict-mode write throws',
  );
});

t.test('afterMs on native: the window in which an upstream task answers or asks within the creating call', async (t) => {
  const c = parseConfig({ upstreams: [up({ tools: { ask_first: { afterMs: 500 }, '*': { task: 'native', afterMs: 0 } } })] });
  t.strictSame(c.upstreams[0]?.tools.ask_first, { task: 'native', afterMs: 500 });
  t.strictSame(c.upstreams[0]?.tools['*'], { task: 'native', afterMs: 0 });
});

t.test('explicit values', async (t) => {
  const c = parseConfig({
    server: { host: '0.0.0.0', port: 0, allowedHosts: ['mcp.example.com'] },
    upstreams: [
      up({
        path: '/a',
        headers: { 'x-api-key': 'k' },
        cache: { ttlMs: 60_000, scope: 'public' },
        tools: { 'slow_*': { task: 'auto', afterMs: 0, ttlMs: 10, maxTtlMs: 10 }, '*': { task: 'off' } },
      }),
      { name: 'b', path: '/b', url: 'https://up.example/mcp' },
    ],
  });
  t.equal(c.server.host, '0.0.0.0');
  t.equal(c.server.port, 0, 'port 0 is allowed');
  t.strictSame(c.server.allowedHosts, ['mcp.example.com']);
  t.strictSame(c.upstreams[0]?.tools['slow_*'], { task: 'auto', afterMs: 0, ttlMs: 10, maxTtlMs: 10 });
  t.strictSame(Object.keys(c.upstreams[0]?.tools ?? {}), ['slow_*', '*'], 'rule order kept (first match wins)');
  t.equal(c.upstreams[1]?.url, 'https://up.example/mcp');
});

t.test('overrides', async (t) => {
  const c = parseConfig({ server: { host: '10.0.0.1', port: 1, keepAliveMs: 5 } }, { host: '::1', port: 9090 });
  t.equal(c.server.host, '::1', 'host override');
  t.equal(c.server.port, 9090, 'port override');
  t.equal(c.server.keepAliveMs, 5, 'other server keys kept');

  t.equal(parseConfig({}, { port: 0 }).server.port, 0, 'port 0 override');
  t.equal(parseConfig({}, { port: 0 }).server.host, '127.0.0.1', 'host default kept');

  const u = parseConfig({ upstreams: [up({ name: 'old', path: '/old' })] }, { upstream: 'http://localhost:9/mcp' });
  t.equal(u.upstreams.length, 1, 'upstream override replaces the list');
  t.match(u.upstreams[0], { name: 'upstream', path: '/mcp', url: 'http://localhost:9/mcp', tools: { '*': { task: 'native' } } });

  t.match(problemsOf({}, { port: 70000 }), [/^server\.port: /], 'overrides are validated too');
  t.match(
    problemsOf({}, { upstream: 'not a url' }),
    [/^upstreams\.0\.url \(--upstream\): an http:\/\/ or https:\/\/ URL, got "not a url"$/],
    'upstream override validated, naming the flag and the value',
  );
  t.match(
    problemsOf({ upstreams: [{ name: 'a', url: 'localhost:3000/mcp' }] }),
    [/^upstreams\.0\.url: an http:\/\/ or https:\/\/ URL, got "localhost:3000\/mcp"$/],
    'a URL without a scheme in the file: the value',
  );
  t.match(
    problemsOf({ store: { kind: 'redis', url: 'redis://u:hunter2@[bad' } }),
    [/^store\.url: not a valid URL: "redis:\/\/u:\*\*\*@\[bad"$/],
    'a Redis URL that does not parse: the value, without its password',
  );
  t.match(problemsOf({}, { host: '' }), [/^server\.host: /]);

  const raw = { server: { port: 1 } };
  parseConfig(raw, { port: 2 });
  t.strictSame(raw, { server: { port: 1 } }, 'the raw object is not mutated');
});

t.test('strictness: an unknown key is an error that names its key path', async (t) => {
  const table: Array<[string, unknown, RegExp]> = [
    ['root', { servr: {} }, /^\(root\): .*"servr"/],
    ['server', { server: { hots: 'x' } }, /^server: .*"hots"/],
    ['store', { store: { kind: 'memory', size: 1 } }, /^store: .*"size"/],
    ['input', { input: { holdMS: 1 } }, /^input: .*"holdMS"/],
    ['sessions', { sessions: { max: 1 } }, /^sessions: .*"max"/],
    ['clientSessions', { clientSessions: { maxSessions: 1 } }, /^clientSessions: .*"maxSessions"/],
    ['upstream', { upstreams: [up({ timeout: 1 })] }, /^upstreams\.0: .*"timeout"/],
    ['upstream cache', { upstreams: [up({ cache: { ttl: 1 } })] }, /^upstreams\.0\.cache: .*"ttl"/],
    ['tool rule', { upstreams: [up({ tools: { slow: { tsk: 'auto' } } })] }, /^upstreams\.0\.tools\.slow: .*"tsk"/],
    ['second upstream', { upstreams: [up(), up({ name: 'b', path: '/b', extra: true })] }, /^upstreams\.1: .*"extra"/],
  ];
  for (const [name, raw, want] of table) {
    const p = problemsOf(raw);
    t.equal(p.length, 1, `${name}: one problem`);
    t.match(p[0], want, name);
  }
});

/** A valid job rule (docs/jobs.md). */
const JOB = {
  id: 'structuredContent.jobId',
  status: { tool: 'st', arguments: { jobId: '{{id}}' }, state: 'structuredContent.state', states: { done: 'completed' } },
};

t.test('a job rule: defaults filled in, paths kept as written', async (t) => {
  const c = parseConfig({ upstreams: [up({ tools: { start: { task: 'job', job: JOB } } })] });
  t.strictSame(c.upstreams[0]?.tools.start, { task: 'job', job: { ...JOB, hide: [] } });
});

t.test('value problems', async (t) => {
  const table: Array<[string, unknown, RegExp]> = [
    ['task auto without afterMs', { upstreams: [up({ tools: { slow: { task: 'auto' } } })] }, /^upstreams\.0\.tools\.slow\.afterMs: task "auto" needs afterMs/],
    ['afterMs on off', { upstreams: [up({ tools: { s: { task: 'off', afterMs: 5 } } })] }, /^upstreams\.0\.tools\.s\.afterMs: afterMs applies .*not "off"/],
    ['ttlMs > maxTtlMs', { upstreams: [up({ tools: { s: { ttlMs: 11, maxTtlMs: 10 } } })] }, /^upstreams\.0\.tools\.s\.ttlMs: ttlMs must not exceed maxTtlMs/],
    ['unknown task mode', { upstreams: [up({ tools: { s: { task: 'sometimes' } } })] }, /^upstreams\.0\.tools\.s\.task: /],
    ['task job without job', { upstreams: [up({ tools: { s: { task: 'job' } } })] }, /^upstreams\.0\.tools\.s\.job: task "job" needs job/],
    [
      'job on another mode',
      { upstreams: [up({ tools: { s: { task: 'always', job: JOB } } })] },
      /^upstreams\.0\.tools\.s\.job: job applies to task "job" only/,
    ],
    [
      'retryOnLoss on a job',
      { upstreams: [up({ tools: { s: { task: 'job', job: JOB, retryOnLoss: true } } })] },
      /^upstreams\.0\.tools\.s\.retryOnLoss: .*never called again/,
    ],
    [
      'a job path that is no JMESPath',
      { upstreams: [up({ tools: { s: { task: 'job', job: { ...JOB, id: 'structuredContent..jobId' } } } })] },
      /^upstreams\.0\.tools\.s\.job\.id: not a JMESPath expression/,
    ],
    [
      'a job state mapped to no status',
      { upstreams: [up({ tools: { s: { task: 'job', job: { ...JOB, status: { ...JOB.status, states: { done: 'finished' } } } } } })] },
      /^upstreams\.0\.tools\.s\.job\.status\.states\.done: /,
    ],
    [
      'a job with no states',
      { upstreams: [up({ tools: { s: { task: 'job', job: { ...JOB, status: { ...JOB.status, states: {} } } } } })] },
      /^upstreams\.0\.tools\.s\.job\.status\.states: name at least one state/,
    ],
    [
      'a job key misspelt',
      { upstreams: [up({ tools: { s: { task: 'job', job: { ...JOB, cancle: { tool: 'x' } } } } })] },
      /^upstreams\.0\.tools\.s\.job: .*cancle/,
    ],
    ['negative afterMs', { upstreams: [up({ tools: { s: { task: 'auto', afterMs: -1 } } })] }, /^upstreams\.0\.tools\.s\.afterMs: /],
    ['empty tool pattern', { upstreams: [up({ tools: { '': { task: 'off' } } })] }, /^upstreams\.0\.tools/],
    [
      'a rule after "*"',
      { upstreams: [up({ tools: { '*': { task: 'native' }, slow: { task: 'auto', afterMs: 300 } } })] },
      /^upstreams\.0\.tools\.slow: rule "slow" can never apply: the earlier rule "\*" matches every tool it names/,
    ],
    [
      'a rule after a glob that covers it',
      { upstreams: [up({ tools: { 'slow_*': { task: 'off' }, slow_report: { task: 'always' } } })] },
      /^upstreams\.0\.tools\.slow_report: rule "slow_report" can never apply: the earlier rule "slow_\*"/,
    ],
    ['duplicate name', { upstreams: [up({ path: '/x' }), up({ path: '/y' })] }, /^upstreams\.1\.name: duplicate upstream name a/],
    ['bad URL', { upstreams: [up({ url: 'not a url' })] }, /^upstreams\.0\.url: /],
    ['non-http URL', { upstreams: [up({ url: 'ftp://example.com/mcp' })] }, /^upstreams\.0\.url: /],
    ['missing URL', { upstreams: [{ name: 'a' }] }, /^upstreams\.0\.url: /],
    ['bad name', { upstreams: [up({ name: 'a b' })] }, /^upstreams\.0\.name: letters, digits/],
    ['relative path', { upstreams: [up({ path: 'mcp' })] }, /^upstreams\.0\.path: an absolute URL path/],
    ['bad header name', { upstreams: [up({ headers: { 'bad header': 'v' } })] }, /^upstreams\.0\.headers/],
    ['port out of range', { server: { port: 65536 } }, /^server\.port: /],
    ['port not an integer', { server: { port: 80.5 } }, /^server\.port: /],
    ['port a string', { server: { port: '8080' } }, /^server\.port: /],
    ['empty host', { server: { host: '' } }, /^server\.host: /],
    ['unknown store kind', { store: { kind: 'etcd' } }, /^store/],
    ['redis url not redis://', { store: { kind: 'redis', url: 'http://x' } }, /^store\.url/],
    ['zero holdMs', { input: { holdMs: 0 } }, /^input\.holdMs: /],
    ['upstreams not a list', { upstreams: { a: up() } }, /^upstreams: /],
    ['root is an array', [], /^\(root\): the configuration must be a mapping/],
    ['root is a string', 'server: {}', /^\(root\): the configuration must be a mapping/],
    ['root is a number', 1, /^\(root\): the configuration must be a mapping/],
  ];
  for (const [name, raw, want] of table) {
    const p = problemsOf(raw);
    t.ok(
      p.some((line) => want.test(line)),
      `${name}: ${JSON.stringify(p)}`,
    );
  }
});

t.test('every problem is listed at once', async (t) => {
  let err: unknown;
  try {
    parseConfig({
      extra: 1,
      server: { port: -1, hots: 'x' },
      upstreams: [up({ url: 'nope', tools: { s: { task: 'auto' }, u: { task: 'off', afterMs: 1 }, v: { ttlMs: 2, maxTtlMs: 1 } } }), up()],
    });
  } catch (e) {
    err = e;
  }
  t.type(err, ConfigError);
  const e = err as ConfigError;
  t.equal(e.name, 'ConfigError');
  const wanted = [
    /^\(root\): .*"extra"/,
    /^server: .*"hots"/,
    /^server\.port: /,
    /^upstreams\.0\.url: /,
    /^upstreams\.0\.tools\.s\.afterMs: task "auto" needs afterMs/,
    /^upstreams\.0\.tools\.u\.afterMs: afterMs applies .*not "off"/,
    /^upstreams\.0\.tools\.v\.ttlMs: ttlMs must not exceed maxTtlMs/,
    /^upstreams\.1\.name: duplicate upstream name a/,
  ];
  for (const re of wanted)
    t.ok(
      e.problems.some((p) => re.test(p)),
      `listed: ${re}`,
    );
  t.equal(e.problems.length, wanted.length, `exactly these problems: ${JSON.stringify(e.problems, null, 1)}`);
  for (const p of e.problems) t.ok(e.message.includes(p), `message includes "${p}"`);
  t.match(e.message, /^invalid configuration:\n {2}- /);
  t.ok(e.cause, 'the zod error is kept as the cause');
});

t.test('loadConfigFile', async (t) => {
  const dir = t.testdir({
    'gw.yaml': [
      '# a comment',
      'server:',
      '  port: 9001',
      'upstreams:',
      '  - name: up1',
      '    url: http://127.0.0.1:4000/mcp',
      '    tools:',
      '      "slow_*": { task: auto, afterMs: 250 }',
      '',
    ].join('\n'),
    'gw.json': JSON.stringify({ server: { host: '0.0.0.0' }, upstreams: [{ name: 'j', url: 'https://j.example/mcp', path: '/j' }] }),
    'json-in.yml': '{"server": {"port": 7}}',
    'empty.yaml': '',
    'comments-only.yaml': '# nothing here\n',
    'bad.yaml': 'server:\n  port: [1, 2\n',
    'dup.yaml': 'server:\n  port: 1\n  port: 2\n',
    'scalar.yaml': 'just a string\n',
    'bad.json': '{"server": ',
    'yaml-as.json': 'server:\n  port: 1\n',
    'unknown.yaml': 'server:\n  prot: 1\n',
    'many.yaml': 'servr: {}\nupstreams:\n  - name: a\n    url: nope\n    tools:\n      x: { task: auto }\n',
  });

  t.test('YAML', async (t) => {
    const c = await loadConfigFile(join(dir, 'gw.yaml'));
    t.equal(c.server.port, 9001);
    t.equal(c.server.host, '127.0.0.1', 'defaults fill the rest');
    t.strictSame(c.upstreams[0]?.tools, { 'slow_*': { task: 'auto', afterMs: 250 } });
    t.ok(Object.isFrozen(c));
  });
  t.test('JSON', async (t) => {
    const c = await loadConfigFile(join(dir, 'gw.json'));
    t.equal(c.server.host, '0.0.0.0');
    t.equal(c.upstreams[0]?.path, '/j');
  });
  t.test('JSON text in a .yml file is YAML', async (t) => {
    t.equal((await loadConfigFile(join(dir, 'json-in.yml'))).server.port, 7);
  });
  t.test('empty and comment-only files give the defaults', async (t) => {
    t.strictSame(await loadConfigFile(join(dir, 'empty.yaml')), parseConfig({}));
    t.strictSame(await loadConfigFile(join(dir, 'comments-only.yaml')), parseConfig({}));
  });
  t.test('overrides apply to a file', async (t) => {
    const c = await loadConfigFile(join(dir, 'gw.yaml'), { port: 1234, upstream: 'http://x.example/mcp' });
    t.equal(c.server.port, 1234);
    t.equal(c.upstreams[0]?.url, 'http://x.example/mcp');
  });

  const rejects: Array<[string, string, RegExp]> = [
    ['missing file', 'nope.yaml', /^\(file\): cannot read .*nope\.yaml/],
    ['a directory', '.', /^\(file\): cannot read /],
    ['invalid YAML', 'bad.yaml', /^\(file\): .*bad\.yaml is not valid YAML/],
    ['duplicate YAML keys', 'dup.yaml', /^\(file\): .*dup\.yaml is not valid YAML/],
    ['invalid JSON', 'bad.json', /^\(file\): .*bad\.json is not valid JSON/],
    ['YAML in a .json file', 'yaml-as.json', /is not valid JSON/],
    ['scalar document', 'scalar.yaml', /^\(root\): the configuration must be a mapping/],
    ['unknown key', 'unknown.yaml', /^server: .*"prot"/],
  ];
  for (const [name, file, want] of rejects) {
    t.test(name, async (t) => {
      const err = await loadConfigFile(join(dir, file)).then(
        () => undefined,
        (e: unknown) => e,
      );
      t.type(err, ConfigError);
      if (err instanceof ConfigError) {
        t.equal(err.problems.length, 1, JSON.stringify(err.problems));
        t.match(err.problems[0], want);
      }
    });
  }
  t.test('a file with several problems lists them all', async (t) => {
    const err = await loadConfigFile(join(dir, 'many.yaml')).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.type(err, ConfigError);
    if (err instanceof ConfigError) {
      t.equal(err.problems.length, 3, JSON.stringify(err.problems));
      t.ok(err.problems.some((p) => /"servr"/.test(p)));
      t.ok(err.problems.some((p) => /^upstreams\.0\.url: /.test(p)));
      t.ok(err.problems.some((p) => /^upstreams\.0\.tools\.x\.afterMs: /.test(p)));
    }
  });
});

t.test('the shipped configuration files are valid', async (t) => {
  for (const f of ['gateway.example.yaml', 'demo.yaml']) {
    const c = await loadConfigFile(join(repoConfigDir, f));
    t.equal(c.server.host, '127.0.0.1', `${f}: host`);
    t.equal(c.server.port, 8080, `${f}: port`);
  }
});

t.test('describeConfig (--check) names each upstream, its paths and its rules in order, and no secret', async (t) => {
  const cfg = parseConfig({
    store: { kind: 'redis', url: 'rediss://:pa55word@redis.internal:6380/1' },
    upstreams: [
      {
        name: 'files',
        path: '/files',
        command: ['node', 'server.js'],
        env: { TOKEN: 'env-secret' },
        era: 'legacy',
        tools: { 'read_*': { task: 'off' }, '*': { task: 'auto', afterMs: 500 } },
      },
      { name: 'web', path: '/', url: 'https://web.internal/mcp', headers: { 'x-api-key': 'header-secret' }, passthrough: { paths: ['/oauth/*'] } },
    ],
  });
  const out = describeConfig(cfg, { MCP_GATEWAY_STATE_SECRET: 'x'.repeat(32), PATH: process.env.PATH }).join('\n');
  t.match(out, 'store: redis at rediss://:***@redis.internal:6380/1');
  t.match(out, '  - files: command ["node","server.js"], path /files, era legacy');
  t.match(out, '  - web: url https://web.internal/mcp, path /, era auto');
  t.match(out, /^ {2}\/oauth\/\* +passed through to web$/m);
  t.match(
    out,
    /^ {2}\/\.well-known\/oauth-protected-resource +root OAuth discovery document, passed through to web$/m,
    'the upstream at / takes the root documents',
  );
  t.match(out, /files:\n {4}1\. read_\*: task off\n {4}2\. \*: task auto, afterMs 500\n/);
  t.notMatch(out, /note:/, 'the secret is set, the URL given, the command on PATH');
  t.notMatch(out, /pa55word|env-secret|header-secret/, 'no password, environment or header value');
});
