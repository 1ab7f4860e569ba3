/**
 * A federated endpoint's tool call on its member (docs/federation.md §Eras and tasks): resolved to the member's route and
 * the member's own name, then run there exactly as on a single endpoint; a failure that says the member may be down has
 * the member asked again at once.
 */
import { GatewayError, type JsonObject, type ModernRequest } from '../../translate/index.js';
import type { CallerContext, FederationRouting, UpstreamRoute } from '../route.js';

/** The member route of a federated tool call and its params under the member's own name; an unseen name: an unknown tool. */
async function memberOf(
  route: UpstreamRoute,
  params: JsonObject,
  caller: CallerContext,
  signal: AbortSignal,
): Promise<{ route: UpstreamRoute; params: JsonObject }> {
  const tool = typeof params.name === 'string' ? params.name : '';
  // Unknown, filtered out or denied: one answer, whoever's the name is.
  const m = await (route.federation as FederationRouting).target('tool', tool, caller, signal);
  if (!m) throw new GatewayError('GW_TOOL_NOT_FOUND', { args: [tool] });
  return { route: m.route, params: { ...params, name: m.name } };
}

/** Runs `run` for a federated endpoint's call on `member`; its failure is told to the federation. */
export async function onMember<T>(route: UpstreamRoute, member: UpstreamRoute, run: () => Promise<T>): Promise<T> {
  if (member === route) return run();
  try {
    return await run();
  } catch (e) {
    route.federation?.failed(member.name, e);
    throw e;
  }
}

/** `run` on the member of a federated endpoint's tool call, with the params under the member's own name. */
export async function viaMember<T>(
  route: UpstreamRoute,
  params: JsonObject,
  caller: CallerContext,
  signal: AbortSignal,
  run: (member: UpstreamRoute, own: JsonObject) => Promise<T>,
): Promise<T> {
  const m = await memberOf(route, params, caller, signal);
  return onMember(route, m.route, () => run(m.route, m.params));
}

/** A federated endpoint's `tools/call` as its member's: the member route, the request under the member's own name. */
export async function memberCall(
  route: UpstreamRoute,
  req: ModernRequest,
  caller: CallerContext,
  signal: AbortSignal,
): Promise<{ route: UpstreamRoute; req: ModernRequest }> {
  const m = await memberOf(route, req.params, caller, signal);
  return { route: m.route, req: { ...req, params: m.params } };
}
