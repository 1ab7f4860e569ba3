/** translate/legacy-handshake: the legacy face's `initialize` and per-session → per-request capabilities (translation.md §4.1). */
import t from 'tap';
import {
  isLegacyLogLevel,
  legacyInitializeResult,
  legacyServerCapabilities,
  modernClientCapabilities,
  negotiateLegacyVersion,
  readInitializeParams,
} from '../../src/translate/legacy-handshake.js';
import type { UpstreamIdentity } from '../../src/translate/results-to-modern.js';
import { K, LEGACY, MODERN } from '../fixtures/translate-wire.js';

/** What a modern upstream's `server/discover` tells the modern upstream client (S2 `DiscoverResult`). */
const identity: UpstreamIdentity = {
  protocolVersion: MODERN,
  capabilities: {
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    logging: {},
    completions: {},
    extensions: { [K.tasksExtension]: {}, 'com.example/x': { a: 1 } },
  },
  serverInfo: { name: 'modern-fixture', version: '2.0.0' },
  instructions: 'Be nice.',
};

t.test('readInitializeParams', async (t) => {
  t.strictSame(readInitializeParams({ protocolVersion: LEGACY, capabilities: { roots: {} }, clientInfo: { name: 'c', version: '1' } }), {
    protocolVersion: LEGACY,
    capabilities: { roots: {} },
    clientInfo: { name: 'c', version: '1' },
  });
  t.strictSame(readInitializeParams({ protocolVersion: LEGACY, clientInfo: { name: 'c', version: '1' } })?.capabilities, {}, 'capabilities default to {}');
  t.equal(readInitializeParams(undefined), undefined, 'no params');
  t.equal(readInitializeParams({ protocolVersion: 7, clientInfo: {} }), undefined, 'version not a string');
  t.equal(readInitializeParams({ protocolVersion: LEGACY }), undefined, 'no clientInfo');
});

t.test('negotiateLegacyVersion', async (t) => {
  t.equal(negotiateLegacyVersion(LEGACY), LEGACY);
  t.equal(negotiateLegacyVersion('2025-06-18'), '2025-06-18', 'an older legacy version the client asked for is kept');
  t.equal(negotiateLegacyVersion(MODERN), LEGACY, 'a modern version never appears in initialize');
  t.equal(negotiateLegacyVersion('1999-01-01'), LEGACY, 'unknown → newest legacy');
});

t.test('legacyServerCapabilities', async (t) => {
  t.strictSame(
    legacyServerCapabilities(identity.capabilities),
    {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      logging: {},
      completions: {},
    },
    'no extensions slot, everything else kept',
  );
  t.strictSame(
    legacyServerCapabilities({ tasks: { list: {} }, prompts: {} }),
    { prompts: {} },
    'a tasks slot is never advertised (this face serves no tasks/*)',
  );
  t.strictSame(legacyServerCapabilities({}), {});
});

t.test('legacyInitializeResult', async (t) => {
  t.strictSame(legacyInitializeResult(identity, LEGACY), {
    protocolVersion: LEGACY,
    capabilities: legacyServerCapabilities(identity.capabilities),
    serverInfo: identity.serverInfo,
    instructions: 'Be nice.',
  });
  const { instructions: _i, ...bare } = identity;
  const r = legacyInitializeResult(bare, '2025-03-26');
  t.equal(r.protocolVersion, '2025-03-26', "the client's legacy version is negotiated");
  t.notOk('instructions' in r, 'no instructions key when the upstream gave none');
  t.equal(legacyInitializeResult(identity, MODERN).protocolVersion, LEGACY);
});

t.test('modernClientCapabilities', async (t) => {
  t.strictSame(
    modernClientCapabilities({
      elicitation: {},
      sampling: { tools: {} },
      roots: { listChanged: true },
      tasks: { requests: { elicitation: { create: {} } } },
      experimental: { x: {} },
    }),
    {
      experimental: { x: {} },
      roots: { listChanged: true },
      sampling: { tools: {} },
      elicitation: { form: {} },
    },
    'legacy elicitation {} means form; no tasks key upstream',
  );
  t.strictSame(modernClientCapabilities({ elicitation: { url: {} } }), { elicitation: { url: {} } }, 'explicit modes are kept');
  t.strictSame(modernClientCapabilities({}), {}, '{} means no optional capabilities');
  t.strictSame(modernClientCapabilities({ sampling: true, roots: 'x' }), {}, 'non-object values dropped');
  t.strictSame(
    modernClientCapabilities({ extensions: { 'com.example/y': {} } }, { tasksExtension: true }),
    {
      extensions: { 'com.example/y': {}, [K.tasksExtension]: {} },
    },
    'extensions kept, tasks extension added on request',
  );
});

t.test('isLegacyLogLevel', async (t) => {
  for (const level of ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']) t.ok(isLegacyLogLevel(level), level);
  t.notOk(isLegacyLogLevel('warn'));
  t.notOk(isLegacyLogLevel(3));
});
