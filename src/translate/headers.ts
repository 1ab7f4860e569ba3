/**
 * HTTP header value rules of 2026-07-28 Streamable HTTP (2026-07-28 basic/transports/streamable-http §Value Encoding,
 * §Server Validation).
 */

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
// Visible ASCII plus inner spaces; anything else must have been sentinel-encoded.
const PLAIN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** Result of decoding one header value. */
export type DecodedHeader = { ok: true; value: string } | { ok: false; message: string };

/** Decodes a standard MCP header value: plain visible ASCII, or the `=?base64?…?=` sentinel form. */
export function decodeHeaderValue(raw: string): DecodedHeader {
  const m = SENTINEL.exec(raw);
  if (m) {
    const bytes = Buffer.from(m[1] ?? '', 'base64');
    if (bytes.toString('base64').replace(/=+$/, '') !== (m[1] ?? '').replace(/=+$/, '')) return { ok: false, message: 'malformed base64 header value' };
    try {
      return { ok: true, value: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
    } catch {
      return { ok: false, message: 'base64 header value is not UTF-8' };
    }
  }
  if (raw.startsWith('=?base64?') && raw.endsWith('?=')) return { ok: false, message: 'malformed base64 header value' };
  if (raw === '' || PLAIN.test(raw)) return { ok: true, value: raw };
  return { ok: false, message: 'header value contains characters that require base64 encoding' };
}

/** Encodes a value for a standard MCP header, using the sentinel form only where it is needed. */
export function encodeHeaderValue(value: string): string {
  if (value !== '' && PLAIN.test(value) && !SENTINEL.test(value)) return value;
  return `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** Reads one header from a Node-style header map (lower-case keys); repeated headers are not accepted. */
export function singleHeader(headers: Record<string, string | string[] | undefined>, name: string): string | undefined | null {
  const v = headers[name];
  if (Array.isArray(v)) return v.length === 1 ? v[0] : null;
  return v;
}
