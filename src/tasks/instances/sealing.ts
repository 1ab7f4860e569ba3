/**
 * Sealed values: what one gateway instance hands another through the shared store or its event channel and no one
 * else may read or alter (a caller's credentials for a task another instance takes over, a relayed MRTR retry).
 * AES-256-GCM under a key derived from the gateway's shared secret; the `purpose` is bound as associated data, so a
 * value sealed for one use does not open for another.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { JsonObject } from '../../translate/index.js';

/** Seals and opens JSON values with one key. */
export class Sealer {
  private readonly key: Buffer;

  /** `secret`: the shared secret (every instance of a deployment holds the same one). */
  constructor(secret: Uint8Array) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'mcp-tasks-gateway seal v1', 32));
  }

  /** The value, encrypted and authenticated, as one URL-safe string. */
  seal(purpose: string, value: JsonObject): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url');
  }

  /** The value `seal(purpose, …)` made, or `undefined` for anything else (tampered, another key or purpose). */
  open(purpose: string, sealed: string): JsonObject | undefined {
    try {
      const raw = Buffer.from(sealed, 'base64url');
      if (raw.length < 29) return undefined;
      const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      d.setAAD(Buffer.from(purpose));
      d.setAuthTag(raw.subarray(12, 28));
      const text = Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
      const v: unknown = JSON.parse(text);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : undefined;
    } catch {
      return undefined;
    }
  }
}
