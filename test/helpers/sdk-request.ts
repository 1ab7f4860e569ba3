/**
 * Node's request as the MCP SDK's Node adapter takes it.
 */
import type { IncomingMessage } from 'node:http';
import type { NodeIncomingMessageLike } from '@modelcontextprotocol/node';

/**
 * `req` as the SDK's `NodeIncomingMessageLike`. A cast: that type declares `method?: string` and `url?: string`,
 * which Node's own `IncomingMessage` (`string | undefined`) cannot satisfy under `exactOptionalPropertyTypes`; the
 * adapter reads an absent and an `undefined` method alike.
 */
export function sdkRequest(req: IncomingMessage): NodeIncomingMessageLike {
  return req as NodeIncomingMessageLike;
}
