/**
 * One legacy-face session on this instance: its identity (what it decided at `initialize`), how it shows to the
 * upstream and to the task runtime (its caller, built once per log level), and its live parts, each owned by the file
 * that serves it (calls.ts: requests in flight and their server→client requests; listens.ts: the GET stream and the
 * upstream listen; tasks.ts: the task relay's following of it), which it ends through their own `end()`.
 */
import { modernClientCapabilities, type JsonObject, type JsonRpcNotification, type TraceCarrier } from '../../translate/index.js';
import type { CallerContext, CallerSubject, UpstreamRoute } from '../../tasks/index.js';
import type { UpstreamCaller } from '../../upstream/index.js';
import { ANONYMOUS } from '../principal.js';
import type { SessionCalls } from './calls.js';
import type { SessionStream } from './listens.js';
import type { StreamSink, TaskSessionView } from './tasks.js';

/** What a session decided at `initialize` besides its principal and route. */
export interface SessionDecisions {
  tasks: boolean;
  legacyCapabilities: JsonObject;
  clientInfo: JsonObject;
  protocolVersion: string;
  logLevel?: string;
}

/** A live part of a session, ended with it. */
export interface SessionPart {
  end(): void;
}

/** Where a session's parts are made: each by the file that owns it. */
export interface SessionPartMakers {
  calls(): SessionCalls;
  stream(s: ClientSession): SessionStream;
  tasks(s: TaskSessionView): SessionPart;
}

/**
 * A rejection handler for background work of a session (the face logs it with the upstream and the error's name and
 * message, never the session id).
 */
export type BackgroundFailure = (level: 'debug' | 'warn', msg: string, s: ClientSession) => (e: unknown) => void;

/** One session's identity and its live parts. */
export class ClientSession implements TaskSessionView {
  readonly id: string;
  readonly principal: string;
  /** The upstream route the session works over (picked at initialize). */
  readonly route: UpstreamRoute;
  /** Whether `initialize` advertised tasks (the route can run them). */
  readonly tasks: boolean;
  /** What the client declared in `initialize`, as it declared it (decides which input requests it may get). */
  readonly legacyCapabilities: JsonObject;
  /** The same in the modern per-request shape. */
  readonly capabilities: JsonObject;
  readonly clientInfo: JsonObject;
  /** The version the client asked for at initialize. */
  readonly protocolVersion: string;
  /** Its client requests in flight and the server→client requests of their calls (calls.ts). */
  readonly calls: SessionCalls;
  /** Its GET stream, subscriptions and upstream listen (listens.ts). */
  readonly stream: SessionStream;
  /** The task relay's following of the session (tasks.ts). */
  private readonly taskPart: SessionPart;
  private readonly authorization: string | undefined;
  /** Set through setLogLevel, which drops the callers built with the old level. */
  private level: string | undefined;
  /** The session as its upstream caller and as the runtime's caller, built once (until the log level changes). */
  private caller: UpstreamCaller | undefined;
  private context: CallerContext | undefined;
  private subject: CallerSubject | undefined;
  /** Aborted when the session ends. */
  private readonly endedController = new AbortController();

  constructor(id: string, principal: string, authorization: string | undefined, route: UpstreamRoute, d: SessionDecisions, parts: SessionPartMakers) {
    this.id = id;
    this.principal = principal;
    this.authorization = authorization;
    this.route = route;
    this.tasks = d.tasks;
    this.legacyCapabilities = d.legacyCapabilities;
    this.capabilities = modernClientCapabilities(d.legacyCapabilities);
    this.clientInfo = d.clientInfo;
    this.protocolVersion = d.protocolVersion;
    this.level = d.logLevel;
    this.calls = parts.calls();
    this.stream = parts.stream(this);
    this.taskPart = parts.tasks(this);
  }

  /** The log level the client set (logging/setLevel), if any. */
  get logLevel(): string | undefined {
    return this.level;
  }

  /** Aborted when the session ends. */
  get ended(): AbortSignal {
    return this.endedController.signal;
  }

  /** Changes the session's log level; the callers built with the old one are built again. */
  setLogLevel(level: string): void {
    this.level = level;
    this.caller = undefined;
    this.context = undefined;
  }

  /** What access rules read of the caller (docs/federation.md §Access): the latest request's. */
  useSubject(subject: CallerSubject | undefined): void {
    if (subject === this.subject || (subject?.name === this.subject?.name && subject?.claims === this.subject?.claims)) return;
    this.subject = subject;
    this.caller = undefined;
    this.context = undefined;
  }

  /** The session as its upstream's caller. */
  callerOf(trace?: TraceCarrier): UpstreamCaller {
    // Built once per session (not per request): nothing downstream changes a caller, and its parts change only with
    // the log level. A request's trace context is its own (a copy, only for a traced request).
    if (trace) return { ...this.callerOf(), trace };
    return (this.caller ??= {
      clientEra: 'legacy',
      principal: this.principal,
      capabilities: this.capabilities,
      clientInfo: this.clientInfo,
      ...(this.authorization ? { authorization: this.authorization } : {}),
      ...(this.level ? { logLevel: this.level } : {}),
      // A federated route reads it for its access rules on every request that is not a tool call (tools/list above all).
      ...(this.subject ? { subject: this.subject } : {}),
    });
  }

  /**
   * The session as the runtime's caller: its principal, and the session itself when it has no identity (its tasks
   * are then its own, 2025-11-25 basic/utilities/tasks §Security Considerations).
   */
  contextOf(trace?: TraceCarrier): CallerContext {
    if (trace) return { ...this.contextOf(), trace };
    return (this.context ??= {
      ...this.callerOf(),
      principal: this.principal,
      ...(this.principal === ANONYMOUS ? { session: this.id } : {}),
      ...(this.subject ? { subject: this.subject } : {}),
    });
  }

  /** A notification for the session's GET stream (kept for it while none is open). */
  notify(n: JsonRpcNotification): void {
    this.stream.deliver(n);
  }

  /** The session's open GET stream as a place to send to, if one is open. */
  openStream(): StreamSink | undefined {
    return this.stream.sink();
  }

  /** The session's copy here ended: its live parts (task relay, calls, server→client requests, listen, GET stream) end. */
  end(): void {
    this.endedController.abort();
    this.taskPart.end();
    this.calls.end();
    this.stream.end();
  }
}
