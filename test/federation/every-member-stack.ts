/**
 * One federated endpoint in front of five members of every kind the gateway serves (not a test file), and the four
 * clients that use it. The members, each under its own namespace on `/mcp`:
 *  - `ev`: the npm `@modelcontextprotocol/server-everything` (2025-11-25, Streamable HTTP), a third-party server with
 *    its own 2025-11-25 task (`simulate-research-query`, `taskSupport: required`);
 *  - `m`: the modern fixture in its 2026-07-28-only mode with the JSON-lines framing of the conformance project's
 *    everything-server (test/fixtures/modern-server.ts `jsonLines`), running its task tools as its own tasks;
 *  - `l`: the legacy fixture (2025-11-25) with core tasks;
 *  - `j`: the hand-rolled job server (test/fixtures/job-server.ts) driven by `JOB_RULES` (`task: job`);
 *  - `io`: the stdio 2025-11-25 server (test/fixtures/stdio-legacy-server.ts) whose synchronous `slow_compute` a
 *    `task: always` rule wraps into a gateway-owned task.
 * The clients (`Caller`): the v2 client (`@modelcontextprotocol/client`, 2026-07-28) declaring the tasks extension
 * (its tasks through an ext-tasks session on the same client) and one that does not; SDK 1.32.2 (2025-11-25) sending
 * `task` (test/helpers/era-clients.ts `legacyClient`) and one that never does. Every one declares elicitation and
 * answers each form with valid values for what it requires (the gateway refuses an answer that does not fit the
 * schema, test/proxy/legacy-face and src/translate/input-answers.ts).
 */
import { fileURLToPath } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type ApplicationInputRequest, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../../src/app.js';
import { JOB_RULES, startJobServer, type JobServer } from '../fixtures/job-server.js';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture, type ModernFixture } from '../fixtures/modern-server.js';
import { startServerEverything, type ServerEverything } from '../fixtures/server-everything.js';
import { bounded, CLIENT_BOUND_MS, legacyClient, type LegacyEraClient, type Outcome } from '../helpers/era-clients.js';
import { fetchDispatch, type DispatchRecord } from '../helpers/ext-tasks.js';
import { startGateway } from '../helpers/gateway.js';
import { MODERN } from '../helpers/modern.js';
import { connectLegacy } from '../helpers/modern-stack.js';
import { DECLARING } from '../helpers/task-helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/stdio-legacy-server.ts', import.meta.url));

/** Task poll interval of the fixtures and the gateway, so that clients poll fast. */
export const POLL_MS = 50;

/** The namespaces, one per member. */
export const NAMESPACES = ['ev', 'm', 'l', 'j', 'io'] as const;

/** The running members and the gateway in front of them. */
export interface EveryMember {
  /** The federated endpoint. */
  url: string;
  gateway: Gateway;
  everything: ServerEverything;
  modern: ModernFixture;
  legacy: LegacyFixture;
  jobs: JobServer;
}

/** Starts the five members and one gateway whose `/mcp` federates them; all stopped at `t`'s teardown. */
export async function startEveryMember(t: { teardown(fn: () => unknown): void }): Promise<EveryMember> {
  const timing = { taskPollIntervalMs: POLL_MS };
  const everything = await startServerEverything();
  t.teardown(() => everything.close());
  const modern = await startModernFixture({ mode: 'modern', jsonLines: true, tasks: 'native', ...timing });
  t.teardown(() => modern.close());
  const legacy = await startLegacyFixture({ tasks: 'native', ...timing });
  t.teardown(() => legacy.close());
  const jobs = await startJobServer({ era: 'legacy', stepMs: 20 });
  t.teardown(() => jobs.close());
  const { url, gateway } = await startGateway(
    {
      tasks: { pollIntervalMs: POLL_MS },
      upstreams: [
        { name: 'everything', path: '/mcp', url: everything.url, expose: { namespace: 'ev' } },
        { name: 'conformance-modern', path: '/mcp', url: modern.url, expose: { namespace: 'm' } },
        { name: 'core-tasks', path: '/mcp', url: legacy.url, expose: { namespace: 'l' } },
        { name: 'jobs', path: '/mcp', url: jobs.url, expose: { namespace: 'j' }, tools: { ...JOB_RULES } },
        {
          name: 'stdio',
          path: '/mcp',
          command: [process.execPath, '--import', 'tsx', STDIO_FIXTURE],
          cwd: ROOT,
          expose: { namespace: 'io' },
          tools: { slow_compute: { task: 'always', pollIntervalMs: POLL_MS } },
        },
      ],
    },
    { t },
  );
  return { url, gateway, everything, modern, legacy, jobs };
}

/**
 * A valid answer to a form: every required property (all of them when the schema names none) filled by its type —
 * booleans true, numbers their minimum or 1, enums their first value, strings "Ada".
 */
export function answerForm(params: unknown): { action: 'accept'; content: Record<string, string | number | boolean> } {
  const schema = ((params as { requestedSchema?: unknown } | undefined)?.requestedSchema ?? {}) as {
    properties?: Record<string, { type?: string; minimum?: number; enum?: string[]; oneOf?: Array<{ const: string }> }>;
    required?: string[];
  };
  const properties = schema.properties ?? {};
  const content: Record<string, string | number | boolean> = {};
  for (const name of schema.required ?? Object.keys(properties)) {
    const p = properties[name] ?? {};
    if (p.type === 'boolean') content[name] = true;
    else if (p.type === 'number' || p.type === 'integer') content[name] = p.minimum ?? 1;
    else content[name] = p.enum?.[0] ?? p.oneOf?.[0]?.const ?? 'Ada';
  }
  return { action: 'accept', content };
}

/** A plain call's answer, and the progress values the caller was notified of. */
export interface Called {
  result: any;
  progress: number[];
}

/** The kinds of client. */
export type CallerKind = 'modern+tasks' | 'modern' | 'legacy+task' | 'legacy';

/** One connected client, whatever its era. */
export interface Caller {
  readonly kind: CallerKind;
  /** The message of every form the client was asked to fill (modern: an MRTR round; legacy: elicitation/create). */
  readonly asked: string[];
  /** tools/list, every page: the names. */
  list(): Promise<string[]>;
  /** tools/call without a task, with a progress token. */
  call(tool: string, args: Record<string, unknown>): Promise<Called>;
  /** Only the task-capable clients: calls `tool` as a task and drives it to its end; its id and how it ended. */
  task?(tool: string, args: Record<string, unknown>): Promise<{ taskId: string; outcome: Outcome }>;
  /** Only the task-sending 2025-11-25 client: the ids `tasks/list` returns, every page. */
  taskList?(): Promise<string[]>;
  close(): Promise<void>;
}

/** Connects a client of `kind` to `url`. */
export function connectCaller(kind: CallerKind, url: string): Promise<Caller> {
  return kind.startsWith('modern') ? modernCaller(kind, url) : legacyCaller(kind, url);
}

const INFO = { name: 'every-member', version: '1.0.0' };

async function modernCaller(kind: CallerKind, url: string): Promise<Caller> {
  const withTasks = kind === 'modern+tasks';
  const capabilities = withTasks ? DECLARING : { elicitation: {} };
  const client = new ModernClient(INFO, { versionNegotiation: { mode: 'auto' }, capabilities: capabilities as never });
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(String((req.params as { message?: unknown }).message));
    return answerForm(req.params);
  });
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url))), `${kind}: connect`);
  if (client.getProtocolEra() !== 'modern') throw new Error(`${kind}: negotiated ${client.getProtocolEra()}, not the 2026-07-28 era`);
  const wire: DispatchRecord[] = [];
  const session: TaskEnabledSession | undefined = withTasks
    ? createTaskSessionFromClient(client, {
        endpointId: 'every-member',
        rawDispatch: fetchDispatch(url, wire),
        v2RequestFraming: { protocolVersion: MODERN, clientInfo: INFO, clientCapabilities: { elicitation: {} } },
        onInputRequest: (async (req: ApplicationInputRequest) => {
          if (req.kind !== 'elicitation') throw new Error(`unexpected input kind ${req.kind}`);
          asked.push(String(req.params.message));
          return answerForm(req.params);
        }) as never,
      })
    : undefined;
  const caller: Caller = {
    kind,
    asked,
    async list() {
      const names: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const r = await bounded(client.listTools(cursor === undefined ? undefined : { cursor }, { cacheMode: 'bypass' } as never), `${kind}: tools/list`);
        names.push(...r.tools.map((x) => x.name));
        cursor = r.nextCursor;
        if (!cursor) return names;
      }
      throw new Error('tools/list: more than 100 pages');
    },
    async call(tool, args) {
      const progress: number[] = [];
      const result = await bounded(
        client.callTool({ name: tool, arguments: args }, {
          onprogress: (p: { progress: number }) => progress.push(p.progress),
          timeout: CLIENT_BOUND_MS,
        } as never),
        `${kind}: ${tool}`,
      );
      return { result, progress };
    },
    async close() {
      await session?.close();
      await client.close();
    },
  };
  if (session)
    caller.task = async (tool, args) => {
      const execution = await bounded(session.callTool(tool, args as Record<string, never>), `${kind}: ${tool} creation`);
      if (execution.kind !== 'task') throw new Error(`${tool}: expected a task, got ${execution.kind}`);
      const { outcome } = await bounded(execution.settle(), `${kind}: ${tool} settle`);
      const ended: Outcome =
        outcome.status === 'completed'
          ? { status: 'completed', result: outcome.result }
          : outcome.status === 'failed'
            ? { status: 'failed', error: { code: Number((outcome.error as { code?: number }).code), message: outcome.error.message } }
            : { status: outcome.status };
      return { taskId: execution.handle.taskId, outcome: ended };
    };
  return caller;
}

async function legacyCaller(kind: CallerKind, url: string): Promise<Caller> {
  const asked: string[] = [];
  let tasks: LegacyEraClient | undefined;
  let client: LegacyClient;
  if (kind === 'legacy+task') {
    tasks = await legacyClient(url);
    client = tasks.sdk;
  } else {
    client = new LegacyClient(INFO, { capabilities: { elicitation: {} } });
    await bounded(connectLegacy(url, {}, client), `${kind}: connect`);
  }
  // The era client's own handler fills every property, which a schema with typed optional fields refuses.
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(String(req.params.message));
    return answerForm(req.params);
  });
  const caller: Caller = {
    kind,
    asked,
    async list() {
      const names: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const r = await bounded(client.listTools(cursor === undefined ? undefined : { cursor }), `${kind}: tools/list`);
        names.push(...r.tools.map((x) => x.name));
        cursor = r.nextCursor;
        if (!cursor) return names;
      }
      throw new Error('tools/list: more than 100 pages');
    },
    async call(tool, args) {
      const progress: number[] = [];
      const result = await bounded(
        client.callTool({ name: tool, arguments: args }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress), timeout: CLIENT_BOUND_MS }),
        `${kind}: ${tool}`,
      );
      return { result, progress };
    },
    async close() {
      await (tasks ? tasks.close() : client.close());
    },
  };
  if (tasks) {
    const era = tasks;
    caller.task = async (tool, args) => {
      const created = await era.start(tool, args);
      return { taskId: created.taskId, outcome: await era.settle(created.taskId) };
    };
    caller.taskList = () => era.list!();
  }
  return caller;
}
