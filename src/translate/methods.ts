/**
 * The method registry of the modern client face: how the gateway treats every method a modern client may send.
 * Exhaustive by construction: a method not listed here gets `UNKNOWN_METHOD_POLICY`, explicitly.
 */

/** What the gateway does with a method. */
export type MethodKind =
  | 'discover' // answered by the gateway from the upstream's identity (2026-07-28 server/discover)
  | 'forward' // forwarded to the upstream, result translated
  // forwarded; the upstream may ask for input, bridged to MRTR (2026-07-28 basic/patterns/mrtr: tools/call,
  // prompts/get, resources/read)
  | 'forward-input'
  | 'listen' // subscriptions/listen, bridged to the legacy GET stream (2026-07-28 basic/patterns/subscriptions)
  | 'tasks' // methods of the tasks extension (io.modelcontextprotocol/tasks), answered by the task runtime
  | 'removed'; // removed from the modern era: 404 + -32601 (2026-07-28 changelog; conformance sep-2575-http-server-method-not-found-404-*)

/** One method's policy. */
export interface MethodPolicy {
  kind: MethodKind;
  /**
   * The params key whose value must be mirrored in the `Mcp-Name` header (2026-07-28 basic/transports/streamable-http
   * §Request Metadata; tasks extension §Streamable HTTP: Routing Headers).
   */
  nameParam?: 'name' | 'uri' | 'taskId';
  /** Cacheable results carry `ttlMs` and `cacheScope` (2026-07-28 server/utilities/caching). */
  cacheable?: boolean;
}

const REGISTRY: Readonly<Record<string, MethodPolicy>> = {
  'server/discover': { kind: 'discover', cacheable: true },
  'tools/list': { kind: 'forward', cacheable: true },
  'tools/call': { kind: 'forward-input', nameParam: 'name' },
  'prompts/list': { kind: 'forward', cacheable: true },
  'prompts/get': { kind: 'forward-input', nameParam: 'name' },
  'resources/list': { kind: 'forward', cacheable: true },
  'resources/templates/list': { kind: 'forward', cacheable: true },
  'resources/read': { kind: 'forward-input', nameParam: 'uri', cacheable: true },
  'completion/complete': { kind: 'forward' },
  'subscriptions/listen': { kind: 'listen' },
  'tasks/get': { kind: 'tasks', nameParam: 'taskId' },
  'tasks/update': { kind: 'tasks', nameParam: 'taskId' },
  'tasks/cancel': { kind: 'tasks', nameParam: 'taskId' },
  initialize: { kind: 'removed' },
  ping: { kind: 'removed' },
  'logging/setLevel': { kind: 'removed' },
  'resources/subscribe': { kind: 'removed' },
  'resources/unsubscribe': { kind: 'removed' },
  'tasks/result': { kind: 'removed' },
  'tasks/list': { kind: 'removed' },
};

/** Methods the gateway does not know are forwarded; the upstream's -32601 comes back as 404. */
export const UNKNOWN_METHOD_POLICY: MethodPolicy = { kind: 'forward' };

/** The policy for a method. */
export function methodPolicy(method: string): MethodPolicy {
  return Object.hasOwn(REGISTRY, method) ? (REGISTRY[method] as MethodPolicy) : UNKNOWN_METHOD_POLICY;
}
