/**
 * One legacy-face session's state on this instance: what it decided at `initialize`, its live parts (requests in
 * flight, server→client requests of its calls, its GET stream and upstream listen), and how it shows to the upstream
 * and to the task runtime (its caller, built once per log level).
 */
import type { ServerResponse } from 'node:http';
import {
  modernClientCapabilities,
  type JsonObject,
  type JsonRpcNotification,
  type ListenFilter,
  type RequestId,
  type TraceCarrier,
} from '../../translate/index.js';
import type { CallerContext, UpstreamRoute } from '../../tasks/index.js';
import type { UpstreamCall, UpstreamCaller } from '../../upstream/index.js';
import { ANONYMOUS } from '../principal.js';

/** A server→client request the gateway sent for a call, waiting for the client's POSTed response. */
export interface Outbound {
  call: UpstreamCall;
  upstreamId: RequestId;
  /** The client request whose call asked. */
  owner: string;
  /** What was asked: the client's answer is checked against it before it goes upstream. */
  method: string;
  params: JsonObject | undefined;
}

/** Per-session state of the face. */
export interface FaceSession {
  id: string;
  principal: string;
  authorization: string | undefined;
  /** The upstream route the session works over (picked at initialize). */
  route: UpstreamRoute;
  /** Whether `initialize` advertised tasks (the route can run them). */
  tasks: boolean;
  /** What the client declared in `initialize`, as it declared it (decides which input requests it may get). */
  legacyCapabilities: JsonObject;
  /** The same in the modern per-request shape. */
  capabilities: JsonObject;
  clientInfo: JsonObject;
  /** The version the client asked for at initialize. */
  protocolVersion: string;
  /** Set through setLogLevel, which drops the callers built with the old level. */
  logLevel: string | undefined;
  /** The session as its upstream caller and as the runtime's caller, built once (until the log level changes). */
  caller: UpstreamCaller | undefined;
  context: CallerContext | undefined;
  /** When the shared copy's idle time last restarted (the registry's clock). */
  sharedAt: number;
  subscriptions: Set<string>;
  /** Client requests in flight, by request id key: aborting one cancels its upstream call. */
  inflight: Map<string, AbortController>;
  outbound: Map<string, Outbound>;
  nextOutbound: number;
  /** The open GET stream, if any. */
  stream: ServerResponse | undefined;
  /** A GET stream is open or opening: the upstream listen carries list changes. */
  streamWanted: boolean;
  backlog: JsonRpcNotification[];
  /** The upstream listen serving the session and the filter it was opened with. */
  listen: AbortController | undefined;
  listenKey: string;
  /** What the upstream's acknowledgement granted of that filter. */
  listenAccepted: ListenFilter | undefined;
  /** Orders listen changes (subscribe, unsubscribe, GET open and close). */
  listenChain: Promise<void>;
  /** The change still setting up its listen, if any: a newer change supersedes it (refreshListen). */
  listenSetup: AbortController | undefined;
  /** What the latest change's caller awaits; a superseded change's caller awaits it too. */
  listenLatest: Promise<void>;
  listenFailures: number;
  /** Aborted when the session ends. */
  ended: AbortController;
}

/** What a session decided at `initialize` besides its principal and route. */
export interface SessionDecisions {
  tasks: boolean;
  legacyCapabilities: JsonObject;
  clientInfo: JsonObject;
  protocolVersion: string;
  logLevel?: string;
}

/**
 * A rejection handler for background work of a session (the face logs it with the upstream and the error's name and
 * message, never the session id).
 */
export type BackgroundFailure = (level: 'debug' | 'warn', msg: string, s: FaceSession) => (e: unknown) => void;

/** The key of a client request id in a session's maps (a number and a string id of the same digits differ). */
export const idKey = (id: RequestId): string => `${typeof id}:${id}`;

/** A session's per-instance state, fresh: what it decided at initialize, nothing live yet. */
export function newSession(
  id: string,
  principal: string,
  authorization: string | undefined,
  route: UpstreamRoute,
  d: SessionDecisions,
  sharedAt: number,
): FaceSession {
  return {
    id,
    principal,
    authorization,
    route,
    tasks: d.tasks,
    legacyCapabilities: d.legacyCapabilities,
    capabilities: modernClientCapabilities(d.legacyCapabilities),
    clientInfo: d.clientInfo,
    protocolVersion: d.protocolVersion,
    logLevel: d.logLevel,
    caller: undefined,
    context: undefined,
    sharedAt,
    subscriptions: new Set(),
    inflight: new Map(),
    outbound: new Map(),
    nextOutbound: 0,
    stream: undefined,
    backlog: [],
    listen: undefined,
    listenKey: '',
    listenAccepted: undefined,
    streamWanted: false,
    listenChain: Promise.resolve(),
    listenSetup: undefined,
    listenLatest: Promise.resolve(),
    listenFailures: 0,
    ended: new AbortController(),
  };
}

/** Changes a session's log level; the callers built with the old one are built again. */
export function setLogLevel(s: FaceSession, level: string): void {
  s.logLevel = level;
  s.caller = undefined;
  s.context = undefined;
}

/** The session as its upstream's caller. */
export function callerOf(s: FaceSession, trace?: TraceCarrier): UpstreamCaller {
  // Built once per session (not per request): nothing downstream changes a caller, and its parts change only with
  // the log level. A request's trace context is its own (a copy, only for a traced request).
  if (trace) return { ...callerOf(s), trace };
  return (s.caller ??= {
    principal: s.principal,
    capabilities: s.capabilities,
    clientInfo: s.clientInfo,
    ...(s.authorization ? { authorization: s.authorization } : {}),
    ...(s.logLevel ? { logLevel: s.logLevel } : {}),
  });
}

/**
 * The session as the runtime's caller: its principal, and the session itself when it has no identity (its tasks
 * are then its own, 2025-11-25 basic/utilities/tasks §Security Considerations).
 */
export function contextOf(s: FaceSession, trace?: TraceCarrier): CallerContext {
  if (trace) return { ...contextOf(s), trace };
  return (s.context ??= { ...callerOf(s), principal: s.principal, ...(s.principal === ANONYMOUS ? { session: s.id } : {}) });
}
