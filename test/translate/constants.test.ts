/** translate/constants: the protocol constants of both eras (translation.md §3, §3.9). */
import t from 'tap';
import {
  CLIENT_CAPABILITIES_META_KEY_V2 as MODERN_CLIENT_CAPABILITIES_META_KEY,
  TASKS_EXTENSION_ID_V2 as MODERN_TASKS_EXTENSION_ID,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import {
  ErrorCode,
  GATEWAY_OWN_PATHS,
  OAUTH_WELL_KNOWN,
  LEGACY_VERSION,
  LEGACY_VERSIONS,
  LOG_LEVELS,
  META,
  MODERN_VERSION,
  SUPPORTED_MODERN_VERSIONS,
  TASKS_EXTENSION,
} from '../../src/translate/constants.js';

t.test('versions', async (t) => {
  t.equal(MODERN_VERSION, '2026-07-28');
  t.equal(LEGACY_VERSION, '2025-11-25');
  t.same([...SUPPORTED_MODERN_VERSIONS], ['2026-07-28']);
  t.ok(LEGACY_VERSIONS.includes(LEGACY_VERSION), 'the legacy revision is a legacy version');
  for (const v of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) t.ok(LEGACY_VERSIONS.includes(v), `${v} is legacy`);
  t.notOk(LEGACY_VERSIONS.includes(MODERN_VERSION), 'the modern revision is not legacy');
  for (const v of SUPPORTED_MODERN_VERSIONS) t.notOk(LEGACY_VERSIONS.includes(v), `${v} is not in both lists`);
});

t.test('reserved _meta keys (S2 RequestMetaObject)', async (t) => {
  const table: Array<[keyof typeof META, string]> = [
    ['protocolVersion', 'io.modelcontextprotocol/protocolVersion'],
    ['clientCapabilities', 'io.modelcontextprotocol/clientCapabilities'],
    ['clientInfo', 'io.modelcontextprotocol/clientInfo'],
    ['logLevel', 'io.modelcontextprotocol/logLevel'],
    ['serverInfo', 'io.modelcontextprotocol/serverInfo'],
    ['subscriptionId', 'io.modelcontextprotocol/subscriptionId'],
    ['relatedTask', 'io.modelcontextprotocol/related-task'],
  ];
  for (const [k, v] of table) t.equal(META[k], v, k);
  t.same(Object.keys(META).sort(), table.map(([k]) => k).sort(), 'no untested META key');
  t.equal(TASKS_EXTENSION, 'io.modelcontextprotocol/tasks');
  t.equal(TASKS_EXTENSION, MODERN_TASKS_EXTENSION_ID, 'the id ext-tasks uses');
  t.equal(META.clientCapabilities, MODERN_CLIENT_CAPABILITIES_META_KEY, 'the clientCapabilities key ext-tasks uses');
});

t.test('error codes (B2 §Error Codes, translation.md §3.9)', async (t) => {
  const table: Array<[keyof typeof ErrorCode, number]> = [
    ['ParseError', -32700],
    ['InvalidRequest', -32600],
    ['MethodNotFound', -32601],
    ['InvalidParams', -32602],
    ['InternalError', -32603],
    ['LegacyResourceNotFound', -32002],
    ['LegacyUrlElicitationRequired', -32042],
    ['HeaderMismatch', -32020],
    ['MissingRequiredClientCapability', -32021],
    ['UnsupportedProtocolVersion', -32022],
  ];
  for (const [k, v] of table) t.equal(ErrorCode[k], v, k);
  t.same(Object.keys(ErrorCode).sort(), table.map(([k]) => k).sort(), 'no untested ErrorCode');
  t.equal(new Set(Object.values(ErrorCode)).size, table.length, 'codes are distinct');
});

t.test('LOG_LEVELS: the eight RFC 5424 levels in increasing severity (2025-11-25 server/utilities/logging §Log Levels)', async (t) => {
  t.strictSame([...LOG_LEVELS], ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);
});

t.test('OAUTH_WELL_KNOWN: RFC 9728, RFC 8414 and OpenID discovery documents; GATEWAY_OWN_PATHS never passed through', async (t) => {
  t.strictSame(
    [...OAUTH_WELL_KNOWN],
    ['/.well-known/oauth-protected-resource', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'],
  );
  t.strictSame([...GATEWAY_OWN_PATHS], ['/healthz', '/readyz', '/metrics']);
});
