// The configuration's JSON Schema and reference (docs/configuration.md) are generated from the zod schema and kept in
// step with it; the JSON Schema accepts every shipped example and flags the typos the gateway refuses.
import { readdir, readFile } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { ConfigError, DEFAULTS, parseConfig, WHEN_ABSENT } from '../../src/config/index.js';
import { configJsonSchema, keyRows, REFERENCE_FILE, SCHEMA_FILE, schemaText, withReference } from '../../scripts/config-schema.js';

const dir = new URL('../../config/', import.meta.url);
const REGENERATE = 'run `npm run schema` and commit the result';

/**
 * The committed schema, compiled as an editor would: draft 2020-12 with Ajv's default options (strict about the schema
 * itself: an unknown keyword or format is an error), no vocabulary or format plugin added; every error listed.
 */
async function validator() {
  return new Ajv2020({ allErrors: true }).compile(JSON.parse(await readFile(SCHEMA_FILE, 'utf8')) as object);
}

t.test('schema/gateway.schema.json is what the zod schema generates', async (t) => {
  t.equal(await readFile(SCHEMA_FILE, 'utf8'), schemaText(), `schema/gateway.schema.json differs from src/config/schema.ts: ${REGENERATE}`);
  t.equal(configJsonSchema().$schema, 'https://json-schema.org/draft/2020-12/schema');
});

t.test('docs/configuration.md is what the zod schema generates', async (t) => {
  const doc = await readFile(REFERENCE_FILE, 'utf8');
  t.equal(doc, withReference(doc), `docs/configuration.md's tables differ from src/config/schema.ts: ${REGENERATE}`);
});

t.test('every key of the schema has a description and says what applies when it is absent', async (t) => {
  const schema = configJsonSchema('reference') as { properties: Record<string, { description?: string }> };
  const rows = Object.entries(schema.properties).flatMap(([name, node]) => keyRows(node, name));
  t.ok(rows.length > 80, `the walk finds the keys (${rows.length})`);
  const undescribed = Object.entries(schema.properties)
    .filter(([, n]) => !n.description)
    .map(([k]) => k);
  t.same(undescribed, [], 'every top-level key has a description');
  t.same(
    rows.filter((r) => r.leaf && !r.description).map((r) => r.key),
    [],
    'every key has a description: .describe() it in src/config/schema.ts',
  );
  t.same(
    rows.filter((r) => !r.default).map((r) => r.key),
    [],
    `every optional key without a default says what applies when absent: .meta(doc(description, whenAbsent)) in src/config/schema.ts`,
  );
});

t.test('self-check: the walk finds nested, variant, array and record keys with their defaults', async (t) => {
  const schema = configJsonSchema('reference') as { properties: Record<string, object> };
  const rows = new Map(
    Object.entries(schema.properties)
      .flatMap(([name, node]) => keyRows(node, name))
      .map((r) => [r.key, r]),
  );
  t.equal(rows.get('server.port')?.default, `\`${DEFAULTS.port}\``);
  t.equal(rows.get('store.kind')?.default, '`memory`', "a discriminator, defaulted through its parent's default");
  t.equal(rows.get('store.keyPrefix')?.default, `\`${DEFAULTS.redisKeyPrefix}\``, 'a key of the redis variant');
  t.equal(rows.get('upstreams[].name')?.default, 'required');
  t.equal(rows.get('upstreams[].url')?.default, 'one of `url`, `command`', 'what applies when absent');
  t.equal(rows.get('upstreams[].auth.mode')?.default, `\`${DEFAULTS.authMode}\``, 'the default of a union with a transform inside is kept');
  t.equal(rows.get('upstreams[].auth.maxTtlMs')?.default, `\`${DEFAULTS.noAuthMaxTtlMs}\``, 'a key of the none variant');
  t.equal(rows.get('upstreams[].auth.header')?.default, 'required', 'a key of the header variant');
  t.equal(rows.get('upstreams[].tools.<name>.task')?.default, '`native`', 'a record of tool rules');
  t.equal(rows.get('upstreams[].tools')?.leaf, false);
  t.equal(rows.get('upstreams[].headers')?.leaf, true, 'a record of strings is a leaf');
});

t.test('the JSON Schema holds standard keywords only: Ajv with its default options compiles it and takes every example', async (t) => {
  const schema = JSON.parse(await readFile(SCHEMA_FILE, 'utf8')) as object;
  // Exactly `new Ajv2020()`: strict mode throws on a keyword or format it does not know.
  const validate = new Ajv2020().compile(schema);
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f));
  t.ok(files.length >= 4, 'examples exist');
  for (const f of files) t.ok(validate(parseYaml(await readFile(new URL(f, dir), 'utf8')) ?? {}), `${f}: ${JSON.stringify(validate.errors)}`);
  const text = JSON.stringify(schema);
  t.notMatch(text, /"x-[\w-]+":/, 'no custom keyword');
  t.notMatch(text, /"format":/, "no format (a plugin's business): a URL is a pattern");
  // What applies when a key is absent is in its description instead.
  const url = (schema as { properties: { upstreams: { items: { properties: { url: { description: string; pattern: string } } } } } }).properties.upstreams.items
    .properties.url;
  t.match(url.description, /; when absent: one of `url`, `command`$/, 'the absent text ends the description');
  t.equal(url.pattern, '^(?:https?):', 'the schemes a URL may have');
  t.notOk(WHEN_ABSENT in url, `no ${WHEN_ABSENT} keyword`);
});

t.test('the JSON Schema accepts every file in config/', async (t) => {
  const validate = await validator();
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f));
  t.ok(files.length >= 4, 'examples exist');
  for (const f of files) {
    const text = await readFile(new URL(f, dir), 'utf8');
    t.equal(text.split('\n')[0], '# yaml-language-server: $schema=../schema/gateway.schema.json', `${f} names the schema on its first line`);
    t.ok(validate(parseYaml(text) ?? {}), `${f}: ${JSON.stringify(validate.errors)}`);
  }
});

/** A file with one upstream whose entry is `upstream` (over a minimal valid one). */
const withUpstream = (upstream: Record<string, unknown>) => ({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:3000/mcp', ...upstream }] });

t.test('editor-style: each typo the gateway refuses is flagged by the JSON Schema too, at its key', async (t) => {
  const validate = await validator();
  const typos: Array<[string, unknown, string]> = [
    ['a misspelt key', { server: { prot: 1 } }, '/server'],
    ['a misspelt nested key', { tasks: { defaultTTLMs: 5 } }, '/tasks'],
    ['a wrong type', { server: { port: '8080' } }, '/server/port'],
    ['a port out of range', { server: { port: 70000 } }, '/server/port'],
    ['a boolean as a string', { server: { metrics: { enabled: 'yes' } } }, '/server/metrics/enabled'],
    ['an unknown task mode', withUpstream({ tools: { '*': { task: 'nativ' } } }), '/upstreams/0/tools/*/task'],
    ['an unknown store kind', { store: { kind: 'redsi' } }, '/store'],
    ['a key of the other store kind', { store: { kind: 'memory', keyPrefix: 'x:' } }, '/store'],
    ['an unknown era', withUpstream({ era: 'modren' }), '/upstreams/0/era'],
    ['a negative timeout', withUpstream({ timeoutMs: -1 }), '/upstreams/0/timeoutMs'],
    ['a URL of another protocol', withUpstream({ url: 'ftp://example.com/mcp' }), '/upstreams/0/url'],
    ['a misspelt upstream key', withUpstream({ tool: {} }), '/upstreams/0'],
    ['an upstream without a name', { upstreams: [{ url: 'http://127.0.0.1:3000/mcp' }] }, '/upstreams/0'],
    [
      'a misspelt auth key',
      withUpstream({ auth: { mode: 'jwt', jwksUrl: 'https://id.example/jwks', issuer: 'i', audience: 'a', algorithm: ['RS256'] } }),
      '/upstreams/0/auth',
    ],
    ['an unknown auth mode', withUpstream({ auth: { mode: 'basic' } }), '/upstreams/0/auth'],
    ['a header name with a space', withUpstream({ headers: { 'x api key': 'k' } }), '/upstreams/0/headers'],
    ['a short secret', { secret: { value: 'short' } }, '/secret/value'],
    ['a list where a mapping goes', { server: [] }, '/server'],
  ];
  for (const [what, config, at] of typos) {
    t.throws(() => parseConfig(config), ConfigError, `${what}: the gateway refuses it`);
    t.notOk(validate(config), `${what}: the JSON Schema flags it`);
    t.ok(
      validate.errors?.some((e) => e.instancePath === at || e.instancePath.startsWith(`${at}/`)),
      `${what}: flagged at ${at} (${JSON.stringify(validate.errors?.map((e) => `${e.instancePath} ${e.message}`))})`,
    );
  }
});

t.test('what the JSON Schema cannot say is left to the gateway (and said in docs/configuration.md)', async (t) => {
  const validate = await validator();
  // Refinements across keys and checks in code have no JSON Schema form: an editor passes these, --check does not.
  const refinements: Array<[string, unknown]> = [
    ['url and command both', withUpstream({ command: ['node', 'server.js'] })],
    ['task auto without afterMs', withUpstream({ tools: { '*': { task: 'auto' } } })],
    ['a rule hidden by an earlier glob', withUpstream({ tools: { '*': { task: 'native' }, slow: { task: 'always' } } })],
    ['a trusted proxy that is no address', withUpstream({ auth: { mode: 'header', header: 'x-user', trustedProxies: ['proxy.local'] } })],
  ];
  for (const [what, config] of refinements) {
    t.ok(validate(config), `${what}: valid JSON Schema-wise`);
    t.throws(() => parseConfig(config), ConfigError, `${what}: refused by the gateway`);
  }
});
