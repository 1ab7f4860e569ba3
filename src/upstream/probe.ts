/** The era probe (translation.md §3.1 "Client-side fallback to legacy"): one `server/discover`, judged by its answer. */
import { META, MODERN_VERSION, isObject, type Era } from '../translate/index.js';
import { fetchFailure } from './errors.js';

/**
 * Probes an upstream's era. A `DiscoverResult` listing the modern version → modern; any other answer (a legacy
 * server's 400 "no valid session", 404, 405, a non-modern error) → legacy. Network failure throws.
 */
export async function probeEra(url: string, headers: Record<string, string>, timeoutMs: number, signal?: AbortSignal): Promise<Era> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const body = {
    jsonrpc: '2.0',
    id: 'gateway-era-probe',
    method: 'server/discover',
    params: {
      _meta: {
        [META.protocolVersion]: MODERN_VERSION,
        [META.clientCapabilities]: {},
        [META.clientInfo]: { name: 'mcp-tasks-gateway', version: 'probe' },
      },
    },
  };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': 'server/discover',
      },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (cause) {
    throw fetchFailure(cause, signal, timeout);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) return 'legacy';
  const payload = lastJson(text);
  const result = isObject(payload) && isObject(payload.result) ? payload.result : undefined;
  const versions = result?.supportedVersions;
  return Array.isArray(versions) && versions.includes(MODERN_VERSION) ? 'modern' : 'legacy';
}

// The answer may be JSON or a short SSE stream whose last data line holds the response.
function lastJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const lines = text.split(/\r?\n/).filter((l) => l.startsWith('data:'));
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        return JSON.parse((lines[i] as string).slice(5).trim());
      } catch {
        // keep looking
      }
    }
    return undefined;
  }
}
