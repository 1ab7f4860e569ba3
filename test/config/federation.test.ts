// Federation in the configuration: several upstreams on one path (expose, access, endpoints), the checks across the
// members of a path, which paths are federated, `--upstream` in its forms, what --check prints, and reloads.
import t from 'tap';
import {
  ConfigError,
  describeConfig,
  federatedPaths,
  loadConfigFile,
  parseConfig,
  planReload,
  wellKnownRootOwner,
  type ConfigOverrides,
} from '../../src/config/index.js';

const up = (name: string, extra: Record<string, unknown> = {}) => ({ name, url: `http://127.0.0.1:3000/${name}`, ...extra });

function problemsOf(raw: unknown, overrides?: ConfigOverrides): string[] {
  try {
    parseConfig(raw, overrides);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

const DEFAULT_FILTER = { include: ['*'], exclude: [], rename: {} };

t.test('expose and access default to a member shown whole, to everyone; endpoints to none', async (t) => {
  const c = parseConfig({ upstreams: [up('a')] });
  t.strictSame(c.upstreams[0]?.expose, { tools: DEFAULT_FILTER, prompts: DEFAULT_FILTER, required: true, listCache: 'principal' });
  t.strictSame(c.upstreams[0]?.access, []);
  t.strictSame(c.endpoints, []);
  t.strictSame(parseConfig({ upstreams: [up('a', { expose: { tools: { exclude: ['x'] } } })] }).upstreams[0]?.expose.tools, {
    include: ['*'],
    exclude: ['x'],
    rename: {},
  });
});

t.test('several upstreams share a path: every key of expose, access and endpoints is taken', async (t) => {
  const c = parseConfig({
    endpoints: [{ path: '/mcp', name: 'hub', version: '2.0.0', instructions: 'Use ev_* for demos.' }],
    upstreams: [
      up('a', {
        expose: {
          namespace: 'ev',
          tools: { include: ['get_*', 'echo'], exclude: ['get_secret'], rename: { echo: 'say' } },
          prompts: { include: [], rename: { p: 'q' } },
          resourcePrefix: 'demo://',
          required: false,
          listCache: 'shared',
        },
        access: [
          { when: { subjects: ['alice'], scopes: ['admin'], claims: { role: ['ops', 'dev'], team: 'x' } }, allow: ['ev_*'], deny: ['ev_get_*'] },
          { when: {} },
        ],
      }),
      up('b', { url: undefined, command: ['node', 'b.js'], expose: { namespace: 'B-2' } }),
      up('c'),
    ],
  });
  const [a, b, cc] = c.upstreams;
  t.strictSame(a?.expose, {
    namespace: 'ev',
    tools: { include: ['get_*', 'echo'], exclude: ['get_secret'], rename: { echo: 'say' } },
    prompts: { include: [], exclude: [], rename: { p: 'q' } },
    resourcePrefix: 'demo://',
    required: false,
    listCache: 'shared',
  });
  t.strictSame(a?.access, [
    { when: { subjects: ['alice'], scopes: ['admin'], claims: { role: ['ops', 'dev'], team: 'x' } }, allow: ['ev_*'], deny: ['ev_get_*'] },
    { when: {} },
  ]);
  t.equal(b?.expose.namespace, 'B-2');
  t.equal(cc?.expose.namespace, undefined, 'a member without a namespace keeps its names');
  t.strictSame(c.endpoints, [{ path: '/mcp', name: 'hub', version: '2.0.0', instructions: 'Use ev_* for demos.' }]);
  t.strictSame(
    c.upstreams.map((u) => u.path),
    ['/mcp', '/mcp', '/mcp'],
  );
  t.strictSame(parseConfig({ upstreams: [up('a', { expose: { namespace: 'x' } }), up('b', { path: '/y', expose: { namespace: 'x' } })] }).upstreams.length, 2);
});

t.test('the shapes of expose, access and endpoints are refused at their keys', async (t) => {
  const table: Array<[string, unknown, RegExp]> = [
    ['a namespace with "_"', { upstreams: [up('a', { expose: { namespace: 'a_b' } })] }, /^upstreams\.0\.expose\.namespace: a letter or digit/],
    ['a namespace starting with "-"', { upstreams: [up('a', { expose: { namespace: '-a' } })] }, /^upstreams\.0\.expose\.namespace: /],
    ['a namespace of 33 characters', { upstreams: [up('a', { expose: { namespace: 'n'.repeat(33) } })] }, /^upstreams\.0\.expose\.namespace: /],
    ['an empty namespace', { upstreams: [up('a', { expose: { namespace: '' } })] }, /^upstreams\.0\.expose\.namespace: /],
    [
      'a rename to no MCP name',
      { upstreams: [up('a', { expose: { tools: { rename: { x: 'a b' } } } })] },
      /^upstreams\.0\.expose\.tools\.rename\.x: an MCP tool name: 1 to 128/,
    ],
    [
      'a rename to 129 characters',
      { upstreams: [up('a', { expose: { prompts: { rename: { x: 'y'.repeat(129) } } } })] },
      /^upstreams\.0\.expose\.prompts\.rename\.x: an MCP prompt name/,
    ],
    ['an unknown expose key', { upstreams: [up('a', { expose: { prefix: 'x' } })] }, /^upstreams\.0\.expose: .*"prefix"/],
    ['an empty resourcePrefix', { upstreams: [up('a', { expose: { resourcePrefix: '' } })] }, /^upstreams\.0\.expose\.resourcePrefix: /],
    ['an unknown listCache', { upstreams: [up('a', { expose: { listCache: 'global' } })] }, /^upstreams\.0\.expose\.listCache: /],
    ['an empty glob', { upstreams: [up('a', { expose: { tools: { include: [''] } } })] }, /^upstreams\.0\.expose\.tools\.include\.0: /],
    ['an access rule without when', { upstreams: [up('a', { access: [{ allow: ['*'] }] })] }, /^upstreams\.0\.access\.0\.when: /],
    ['an unknown when key', { upstreams: [up('a', { access: [{ when: { user: 'x' } }] })] }, /^upstreams\.0\.access\.0\.when: .*"user"/],
    ['an empty subjects list', { upstreams: [up('a', { access: [{ when: { subjects: [] } }] })] }, /^upstreams\.0\.access\.0\.when\.subjects: /],
    ['a claim of a number', { upstreams: [up('a', { access: [{ when: { claims: { n: 1 } } }] })] }, /^upstreams\.0\.access\.0\.when\.claims\.n: /],
    ['an endpoint without path', { upstreams: [up('a')], endpoints: [{ name: 'x' }] }, /^endpoints\.0\.path: /],
    ['an unknown endpoint key', { upstreams: [up('a')], endpoints: [{ path: '/mcp', title: 'x' }] }, /^endpoints\.0: .*"title"/],
  ];
  for (const [what, raw, want] of table) {
    const p = problemsOf(raw);
    t.ok(
      p.some((line) => want.test(line)),
      `${what}: ${JSON.stringify(p)}`,
    );
  }
});

t.test('a renamed name with its namespace must fit 128 characters', async (t) => {
  const ns = 'n'.repeat(32);
  t.strictSame(problemsOf({ upstreams: [up('a', { expose: { namespace: ns, tools: { rename: { x: 'y'.repeat(96) } } } })] }), [
    `upstreams.0.expose.tools.rename.x: "${ns}_${'y'.repeat(96)}" is longer than 128 characters (the namespace, "_" and the name): at most 95 here`,
  ]);
  t.doesNotThrow(() => parseConfig({ upstreams: [up('a', { expose: { namespace: ns, tools: { rename: { x: 'y'.repeat(95) } } } })] }), '95 fits');
  t.doesNotThrow(() => parseConfig({ upstreams: [up('a', { expose: { tools: { rename: { x: 'y'.repeat(128) } } } })] }), 'no namespace: 128 fits');
});

t.test('two renames of one member to the same name are refused, naming both', async (t) => {
  t.strictSame(problemsOf({ upstreams: [up('a', { expose: { tools: { rename: { find: 'search', lookup: 'search' } } } })] }), [
    'upstreams.0.expose.tools.rename.lookup: "lookup" and "find" are both renamed to "search": one name, two tools',
  ]);
  t.strictSame(problemsOf({ upstreams: [up('a', { expose: { prompts: { rename: { p: 'x', q: 'x' } } } })] }), [
    'upstreams.0.expose.prompts.rename.q: "q" and "p" are both renamed to "x": one name, two prompts',
  ]);
  t.doesNotThrow(
    () => parseConfig({ upstreams: [up('a', { expose: { tools: { rename: { p: 'x' } }, prompts: { rename: { p: 'x' } } } })] }),
    'a tool and a prompt may share a name',
  );
});

t.test('two members of one path with one namespace are refused, naming both', async (t) => {
  t.strictSame(problemsOf({ upstreams: [up('a', { expose: { namespace: 'x' } }), up('b'), up('c', { expose: { namespace: 'x' } })] }), [
    'upstreams.2.expose.namespace: namespace "x" is already upstream a\'s (upstreams.0) on /mcp: upstream c needs another (members of one path need distinct namespaces)',
  ]);
});

t.test('the members of one path share one authenticator', async (t) => {
  const jwt = { mode: 'jwt', jwksUrl: 'https://login.example.com/jwks', issuer: 'https://login.example.com/', audience: 'hub' };
  t.strictSame(problemsOf({ upstreams: [up('a', { auth: jwt }), up('b', { auth: { ...jwt, audience: 'other' } })] }), [
    'upstreams.1.auth: upstream b authenticates its callers otherwise than upstream a (upstreams.0) on /mcp: the members of one path share one ' +
      'endpoint, so one authenticator (give them the same auth)',
  ]);
  t.strictSame(problemsOf({ upstreams: [up('a'), up('b', { auth: { mode: 'none' } })] }), [
    'upstreams.1.auth: upstream b authenticates its callers otherwise than upstream a (upstreams.0) on /mcp: the members of one path share one ' +
      'endpoint, so one authenticator (give them the same auth)',
  ]);
  // Compared as parsed: defaults filled in, the header name lowercased.
  const header = (h: string) => ({ mode: 'header', header: h, trustedProxies: ['10.0.0.0/8'] });
  t.doesNotThrow(() => parseConfig({ upstreams: [up('a', { auth: header('X-User') }), up('b', { auth: header('x-user') })] }));
  t.doesNotThrow(() => parseConfig({ upstreams: [up('a', { auth: { mode: 'bearer' } }), up('b')] }), 'bearer written out or by default');
  t.doesNotThrow(() => parseConfig({ upstreams: [up('a', { auth: jwt }), up('b', { path: '/b' })] }), 'another path: its own auth');
});

t.test('OAuth pass-through is refused on a shared path, and the well-known documents skip it', async (t) => {
  const message = 'OAuth pass-through needs one authorization server per endpoint: keep it for single-member endpoints';
  t.strictSame(problemsOf({ upstreams: [up('a', { passthrough: { paths: ['/oauth/*'] } }), up('b')] }), [
    `upstreams.0.passthrough.paths: upstream a shares /mcp with upstream b: ${message}`,
  ]);
  t.strictSame(problemsOf({ upstreams: [up('a'), up('b'), up('c', { passthrough: { wellKnownRoot: true } })] }), [
    `upstreams.2.passthrough.wellKnownRoot: upstream c shares /mcp with upstreams a, b: ${message}`,
  ]);
  // One member alone on its path, federated for its namespace, keeps its authorization server.
  const single = parseConfig({ upstreams: [up('a', { expose: { namespace: 'a' }, passthrough: { paths: ['/oauth/token'] } })] });
  t.equal(wellKnownRootOwner(single.upstreams), 0);

  const shared = parseConfig({ upstreams: [up('a'), up('b')] });
  t.equal(wellKnownRootOwner(shared.upstreams), undefined, 'two HTTP upstreams on one path: neither is "the only HTTP upstream"');
  const beside = parseConfig({ upstreams: [up('a'), up('b', { command: ['node', 'b.js'], url: undefined }), up('c', { path: '/c' })] });
  t.equal(wellKnownRootOwner(beside.upstreams), 2, 'the only HTTP upstream alone on its path takes the root documents');
  const atRoot = parseConfig({ upstreams: [up('a', { path: '/' }), up('b', { path: '/' }), up('c', { path: '/c', passthrough: { wellKnownRoot: true } })] });
  t.equal(wellKnownRootOwner(atRoot.upstreams), 2, 'a shared / claims nothing, so another upstream may');
});

t.test('endpoints: each on an upstream path, once', async (t) => {
  t.strictSame(problemsOf({ upstreams: [up('a')], endpoints: [{ path: '/other' }] }), ['endpoints.0.path: no upstream is on path /other']);
  t.strictSame(problemsOf({ upstreams: [up('a'), up('b')], endpoints: [{ path: '/mcp' }, { path: '/mcp', name: 'x' }] }), [
    'endpoints.1.path: path /mcp is already described by endpoints.0',
  ]);
  t.strictSame(parseConfig({ upstreams: [up('a'), up('b')], endpoints: [{ path: '/mcp' }] }).endpoints, [{ path: '/mcp' }], 'name, version: absent');
  const plain = parseConfig({ upstreams: [up('a')], endpoints: [{ path: '/mcp', name: 'x' }] });
  t.ok(
    describeConfig(plain).includes(
      'note: endpoints.0 (/mcp): one upstream, passed through as it is: clients see its own serverInfo and instructions, not these',
    ),
    'an endpoint on a path that is not federated is taken, with a note',
  );
});

t.test('federatedPaths: shared paths, and single members that shape their names, in configuration order', async (t) => {
  const c = parseConfig({
    upstreams: [
      up('a'),
      up('plain', { path: '/plain' }),
      up('b', { expose: { namespace: 'b' } }),
      up('ns', { path: '/ns', expose: { namespace: 'n' } }),
      up('inc', { path: '/inc', expose: { tools: { include: ['x'] } } }),
      up('exc', { path: '/exc', expose: { prompts: { exclude: ['x'] } } }),
      up('ren', { path: '/ren', expose: { tools: { rename: { a: 'b' } } } }),
      up('acl', { path: '/acl', access: [{ when: {}, deny: ['x'] }] }),
      up('other', { path: '/other', expose: { resourcePrefix: 'x://', required: false, listCache: 'shared' } }),
      up('c', { command: ['node', 'c.js'], url: undefined }),
    ],
  });
  const f = federatedPaths(c);
  t.strictSame(
    [...f].map(([path, members]) => [path, members.map((m) => m.name)]),
    [
      ['/mcp', ['a', 'b', 'c']],
      ['/ns', ['ns']],
      ['/inc', ['inc']],
      ['/exc', ['exc']],
      ['/ren', ['ren']],
      ['/acl', ['acl']],
    ],
  );
  t.equal(f.get('/mcp')?.[0], c.upstreams[0], 'the members are the configuration objects');
  t.ok(federatedPaths(c).has('/mcp'));
  t.notOk(federatedPaths(c).has('/plain'), 'one upstream as it is: passed through');
  t.notOk(federatedPaths(c).has('/other'), 'resourcePrefix, required and listCache alone do not federate');
  t.notOk(federatedPaths(c).has('/nowhere'));
  t.equal(federatedPaths(parseConfig({})).size, 0);
  t.equal(federatedPaths(parseConfig({ upstreams: [up('a', { expose: { tools: { include: ['*'] } } })] })).size, 0, "include ['*'] is the default");
});

t.test('--upstream URL, once: as it always was', async (t) => {
  const [u, ...rest] = parseConfig({ upstreams: [up('old', { path: '/old' })] }, { upstream: 'http://h/mcp' }).upstreams;
  t.equal(rest.length, 0);
  t.match(u, { name: 'upstream', path: '/mcp', url: 'http://h/mcp' });
  t.equal(u?.expose.namespace, undefined);
  t.equal(federatedPaths(parseConfig({}, { upstream: ['http://h/mcp'] })).size, 0, 'one value in a list: the same');
  t.strictSame(problemsOf({}, { upstream: 'localhost:3000/mcp' }), ['upstreams.0.url (--upstream): an http:// or https:// URL, got "localhost:3000/mcp"']);
});

t.test('--upstream URL, several: upstream, upstream2, … on /mcp, unprefixed', async (t) => {
  const c = parseConfig({}, { upstream: ['http://h/1', 'https://h/2', 'http://h/3'] });
  t.strictSame(
    c.upstreams.map((u) => [u.name, u.path, u.url, u.expose.namespace]),
    [
      ['upstream', '/mcp', 'http://h/1', undefined],
      ['upstream2', '/mcp', 'https://h/2', undefined],
      ['upstream3', '/mcp', 'http://h/3', undefined],
    ],
  );
  t.strictSame([...federatedPaths(c).keys()], ['/mcp']);
});

t.test('--upstream NAME=URL: named; prefixed by its name beside others', async (t) => {
  const one = parseConfig({}, { upstream: ['ev=http://h/mcp'] }).upstreams;
  t.strictSame(
    one.map((u) => [u.name, u.url, u.expose.namespace]),
    [['ev', 'http://h/mcp', undefined]],
    'alone: no namespace, as a plain upstream',
  );
  t.equal(federatedPaths({ upstreams: one }).size, 0);
  const two = parseConfig({}, { upstream: ['ev=http://h/1?a=b', 'http://h/2'] }).upstreams;
  t.strictSame(
    two.map((u) => [u.name, u.url, u.expose.namespace]),
    [
      ['ev', 'http://h/1?a=b', 'ev'],
      ['upstream', 'http://h/2', undefined],
    ],
  );
  t.strictSame(problemsOf({}, { upstream: ['a_b=http://h/1', 'c=http://h/2'] }), [
    'upstreams.0 (--upstream): "a_b" would prefix its tools and prompts beside other --upstream values, and a prefix is a letter or digit, then up ' +
      'to 31 letters, digits or "-"',
  ]);
  t.doesNotThrow(() => parseConfig({}, { upstream: ['a_b=http://h/1'] }), 'alone, any upstream name');
  t.strictSame(problemsOf({}, { upstream: ['a b=http://h/1'] }), ['upstreams.0.name (--upstream): letters, digits, ".", "_" and "-" only']);
  t.match(problemsOf({}, { upstream: ['a=http://h/1', 'a=http://h/2'] }), [/^upstreams\.1\.expose\.namespace \(--upstream\): namespace "a"/]);
  t.strictSame(problemsOf({}, { upstream: ['=http://h/1'] }), [
    'upstreams.0 (--upstream): "=http://h/1" names no upstream before "=": --upstream takes URL, NAME=URL, NAME=COMMAND or NAME=-- (the command ' +
      'after a standalone --)',
  ]);
});

t.test('--upstream NAME=COMMAND: an stdio upstream, its command split as a shell would', async (t) => {
  const [u] = parseConfig({}, { upstream: ['ev=npx -y @modelcontextprotocol/server-everything'] }).upstreams;
  t.match(u, { name: 'ev', path: '/mcp', command: ['npx', '-y', '@modelcontextprotocol/server-everything'] });
  t.equal(u?.url, undefined);
  t.equal(u?.expose.namespace, undefined);
  const [, v] = parseConfig({}, { upstream: ['a=http://h/1', `io=node "my server.js" --root '/srv/a b' x\\ y "q\\"t"`] }).upstreams;
  t.strictSame(v?.command, ['node', 'my server.js', '--root', '/srv/a b', 'x y', 'q"t']);
  t.equal(v?.expose.namespace, 'io');
  t.strictSame(problemsOf({}, { upstream: ['io=node "x'] }), ['upstreams.0 (--upstream): the command of io has an unclosed double quote: "node \\"x"']);
  t.strictSame(problemsOf({}, { upstream: ['io=   '] }), [
    'upstreams.0 (--upstream): the command of io is empty: --upstream takes URL, NAME=URL, NAME=COMMAND or NAME=-- (the command after a standalone --)',
  ]);
  t.strictSame(problemsOf({}, { upstream: ['io='] }), [
    'upstreams.0 (--upstream): "io=" gives nothing after "=": --upstream takes URL, NAME=URL, NAME=COMMAND or NAME=-- (the command after a standalone --)',
  ]);
});

t.test('--upstream NAME=COMMAND: the command split as a shell splits words, without expansion', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['  a\tb  ', ['a', 'b']],
    [`'a  b'`, ['a  b']],
    [`'$HOME' "$HOME" *`, ['$HOME', '$HOME', '*']],
    [`a'b'"c"d`, ['abcd']],
    [`"a\\b" "\\$x" "\\\\"`, ['a\\b', '$x', '\\']],
    [`a\\ b \\'c`, ['a b', "'c"]],
  ];
  for (const [line, words] of cases) t.strictSame(parseConfig({}, { upstream: [`io=node ${line}`] }).upstreams[0]?.command, ['node', ...words], line);
  t.match(problemsOf({}, { upstream: ["io=node 'a"] }).join('\n'), /an unclosed single quote/);
  t.match(problemsOf({}, { upstream: ['io=node a\\'] }).join('\n'), /a trailing backslash/);
});

t.test('--upstream NAME=--: the command is the rest of the command line', async (t) => {
  const c = parseConfig({}, { upstream: ['a=http://h/1', 'b=--'], upstreamCommand: ['npx', '-y', '@modelcontextprotocol/server-everything', '--port', '3'] });
  t.strictSame(
    c.upstreams.map((u) => [u.name, u.url, u.command, u.expose.namespace]),
    [
      ['a', 'http://h/1', undefined, 'a'],
      ['b', undefined, ['npx', '-y', '@modelcontextprotocol/server-everything', '--port', '3'], 'b'],
    ],
  );
  t.strictSame(problemsOf({}, { upstream: ['b=--', 'a=http://h/1'], upstreamCommand: ['x'] }), [
    'upstreams.0 (--upstream): b=--: only the last --upstream may take its command from after --',
  ]);
  t.strictSame(problemsOf({}, { upstream: ['b=--'] }), [
    'upstreams.0 (--upstream): b=--: the command must follow a standalone -- at the end of the command line',
  ]);
  t.strictSame(problemsOf({}, { upstream: ['http://h/1'], upstreamCommand: ['x', 'y'] }), [
    'upstreams (--upstream): arguments after -- ("x y") are the command of an --upstream NAME=--, and none is given',
  ]);
  t.strictSame(problemsOf({}, { upstreamCommand: ['x'] }), [
    'upstreams (--upstream): arguments after -- ("x") are the command of an --upstream NAME=--, and none is given',
  ]);
});

t.test('--check shows a federated path as one endpoint and lists its members', async (t) => {
  const cfg = parseConfig({
    endpoints: [{ path: '/mcp', name: 'hub', version: '2.0.0', instructions: 'abc' }],
    upstreams: [
      up('a', {
        headers: { 'x-api-key': 'header-secret' },
        expose: { namespace: 'a', tools: { include: ['f*', 'g'], exclude: ['fx'], rename: { find: 'search' } }, resourcePrefix: 'a://' },
        access: [{ when: { subjects: ['alice', 'bob'], claims: { role: ['x', 'y'], t: 'z' } }, allow: ['a_*'], deny: ['a_fx'] }, { when: {} }],
      }),
      up('b', {
        command: ['node', 'b.js'],
        url: undefined,
        env: { TOKEN: 'env-secret' },
        expose: { prompts: { rename: { p: 'q' } }, required: false, listCache: 'shared' },
      }),
      up('solo', { path: '/solo' }),
    ],
  });
  const out = describeConfig(cfg, { PATH: process.env.PATH });
  const at = out.indexOf('paths:');
  t.strictSame(out.slice(at, at + 5), [
    'paths:',
    '  /mcp                                     federated MCP endpoint of a, b',
    '  /solo                                    MCP endpoint of solo',
    '  /healthz                                 health',
    '  /readyz                                  readiness',
  ]);
  t.notOk(
    out.some((l) => l.includes('/.well-known/…/mcp')),
    'no OAuth documents of the shared path',
  );
  t.ok(
    out.some((l) => /^ {2}\/\.well-known\/…\/solo +OAuth discovery documents of \/solo, passed through to solo$/.test(l)),
    'the single path keeps its documents',
  );
  t.ok(
    out.some((l) => /^ {2}\/\.well-known\/oauth-protected-resource +root OAuth discovery document, passed through to solo$/.test(l)),
    'and the root ones: solo is the only HTTP upstream alone on its path',
  );
  const from = out.indexOf('federated endpoints:');
  t.strictSame(out.slice(from, out.indexOf('tool rules (per upstream, first match wins):')), [
    'federated endpoints:',
    "  /mcp: 2 members, serverInfo name hub, version 2.0.0, instructions of 3 characters before the members' own",
    '    - a: namespace a (names shown as a_<name>)',
    '        tools: include f* g; exclude fx; rename find → search',
    '        prompts: include *; exclude none; rename none',
    '        resourcePrefix: a://',
    '        required: yes (/readyz of the path needs it)',
    '        listCache: principal',
    '        names it can know: a_search (tool, renamed from find); the others come from the running server, prefixed a_',
    '        access (first rule whose when matches decides; none matching: all):',
    '          1. when subjects alice bob; claims role=x|y t=z: allow a_*; deny a_fx',
    '          2. when anyone: allow all; deny none',
    '    - b: no prefix',
    '        tools: include *; exclude none; rename none',
    '        prompts: include *; exclude none; rename p → q',
    '        resourcePrefix: none',
    '        required: no (the path is ready without it)',
    '        listCache: shared',
    '        names it can know: q (prompt, renamed from p); the others come from the running server',
    '        access: no rules (every caller may list and call all it shows)',
  ]);
  t.notMatch(out.join('\n'), /header-secret|env-secret/, 'no header or environment value');
  t.notOk(describeConfig(parseConfig({ upstreams: [up('a')] })).includes('federated endpoints:'), 'no section without a federated path');
});

t.test('config/federation.example.yaml: three members on /mcp, one access rule', async (t) => {
  const c = await loadConfigFile(new URL('../../config/federation.example.yaml', import.meta.url).pathname);
  const members = federatedPaths(c).get('/mcp') ?? [];
  t.strictSame(
    members.map((u) => [u.name, u.era, u.url !== undefined ? 'http' : 'stdio', u.expose.namespace]),
    [
      ['everything', 'legacy', 'http', 'ev'],
      ['search', 'modern', 'http', 'm'],
      ['files', 'auto', 'stdio', 'io'],
    ],
  );
  t.equal(members.flatMap((u) => u.access).length, 1);
  t.equal(c.endpoints[0]?.path, '/mcp');
});

t.test('a reload applies no federation key live: expose, access and endpoints wait for a restart', async (t) => {
  const base = { upstreams: [up('a', { expose: { namespace: 'a' } }), up('b')], endpoints: [{ path: '/mcp' }] };
  const prev = parseConfig(base);
  const next = parseConfig({
    upstreams: [up('a', { expose: { namespace: 'x', tools: { exclude: ['y'] } }, access: [{ when: {}, deny: ['x_y'] }] }), up('b')],
    endpoints: [{ path: '/mcp', name: 'hub' }],
  });
  const plan = planReload(prev, next);
  t.strictSame(plan.applied, []);
  t.strictSame(plan.needsRestart.sort(), ['endpoints', 'upstreams.a.access', 'upstreams.a.expose.namespace', 'upstreams.a.expose.tools.exclude']);
  t.strictSame(plan.effective, prev, 'the running configuration stays');
});
