/**
 * DNS-rebinding protection (2026-07-28 basic/transports/streamable-http §Security Warning): the `Host` and `Origin` of
 * every request are checked against allow-lists before anything else. Bound to loopback, the defaults admit only
 * loopback names.
 */

const LOOPBACK = ['localhost', '127.0.0.1', '::1'];

/** The allow-lists in force; `null` admits anything. */
export interface HostPolicy {
  hosts: string[] | null;
  origins: string[] | null;
}

/** Whether a bind address is a loopback one. */
function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The policy for a gateway bound to `bindHost`, given the configured lists. */
export function hostPolicy(bindHost: string, allowedHosts?: readonly string[], allowedOrigins?: readonly string[]): HostPolicy {
  const loopback = isLoopbackHost(bindHost);
  return {
    hosts: allowedHosts ? allowedHosts.map((h) => h.toLowerCase()) : loopback ? [...LOOPBACK] : null,
    origins: allowedOrigins ? allowedOrigins.map((o) => o.toLowerCase()) : loopback ? [...LOOPBACK] : null,
  };
}

/** Splits `host[:port]` (IPv6 in brackets) into a lower-case hostname and an optional port. */
function splitHost(value: string): { name: string; port?: string } | undefined {
  const v = value.trim().toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]\s/]+)(?::(\d{1,5}))?$/.exec(v);
  if (!m?.[1]) return undefined;
  const name = m[1].replace(/^\[|\]$/g, '');
  return m[2] ? { name, port: m[2] } : { name };
}

function nameMatches(entry: string, name: string, port: string | undefined): boolean {
  if (entry === '*') return true;
  // A bare IPv6 literal ("::1") is written without brackets in allow-lists; splitHost needs them.
  const bracketed = !entry.startsWith('[') && (entry.match(/:/g) ?? []).length > 1 ? `[${entry}]` : entry;
  const e = splitHost(bracketed.replace(/^\*\./, 'wildcard.'));
  if (entry.startsWith('*.')) return name.endsWith(entry.slice(1));
  if (!e) return false;
  return e.name === name && (e.port === undefined || e.port === port);
}

/** `undefined` when admitted, else the reason (for the log, not the client). */
export function checkHostOrigin(host: string | undefined, origin: string | undefined, policy: HostPolicy): string | undefined {
  if (policy.hosts) {
    const h = host ? splitHost(host) : undefined;
    if (!h) return 'missing or malformed Host header';
    if (!policy.hosts.some((e) => nameMatches(e, h.name, h.port))) return `Host ${h.name} is not allowed`;
  }
  if (origin !== undefined && policy.origins) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return 'malformed Origin header';
    }
    const full = `${url.protocol}//${url.host}`.toLowerCase();
    const name = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const ok = policy.origins.some((e) => e === '*' || e === full || (!e.includes('://') && nameMatches(e, name, url.port || undefined)));
    if (!ok) return `Origin ${full} is not allowed`;
  }
  return undefined;
}

/**
 * A health or readiness probe made on the gateway's own machine: a loopback peer naming a loopback Host (a container
 * HEALTHCHECK, a kubelet exec probe). It is admitted whatever `allowedHosts` says: a DNS-rebinding page makes the
 * browser send the attacker's own host name, never a loopback one, and a loopback peer is already on this machine.
 */
export function isLocalProbe(path: string, host: string | undefined, remoteAddress: string | undefined): boolean {
  if (path !== '/healthz' && path !== '/readyz') return false;
  const h = host ? splitHost(host) : undefined;
  const peer = remoteAddress?.replace(/^::ffff:/, '');
  return h !== undefined && isLoopbackHost(h.name) && peer !== undefined && isLoopbackHost(peer);
}
