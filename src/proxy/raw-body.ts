/**
 * The request body as it arrived, kept next to Fastify's parsed one: traffic that passes through goes upstream byte
 * for byte, without being serialized again from the parsed object.
 */
import type { FastifyRequest } from 'fastify';

const raw = new WeakMap<FastifyRequest, string>();

/** Keeps `body` as the text of `request`. */
export function keepRawBody(request: FastifyRequest, body: string): void {
  raw.set(request, body);
}

/** The text `request` arrived with, if it had a JSON body. */
export function rawBodyOf(request: FastifyRequest): string | undefined {
  return raw.get(request);
}
