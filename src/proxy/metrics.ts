/**
 * The gateway's Prometheus metrics: one prom-client `Registry` per gateway (never the process-wide default, so that
 * several gateways in one process keep their own counts), served in the text exposition format at `/metrics`.
 * Names follow Prometheus conventions (`mcp_gateway_` prefix, `_total` counters, `_seconds` histograms, base units);
 * every label takes values from a bounded set: configured upstream names, known MCP methods (else `other`), the
 * first tools seen per upstream (then `other`), catalog codes and fixed outcome words. Never a principal, a task id
 * or a session id. The layers below the edge know nothing of prom-client: they are handed plain callbacks (an
 * `AuditLog`, `TaskMetrics`, a store observer).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValueWithName } from 'prom-client';
import { ERROR_CATALOG, type ErrorKind } from '../translate/index.js';
import type { AuditEvent, AuditLog, TaskMetrics } from '../tasks/index.js';
import { outcomeLabel, type RequestOutcome } from './request-outcome.js';

/** Every metric name starts so. */
const METRIC_PREFIX = 'mcp_gateway_';

/**
 * The MCP methods a request line may name, of both eras (2025-11-25 and 2026-07-28 method lists), plus the HTTP
 * methods of legacy session traffic (`GET` streams, `DELETE`) and `response` (a client's answer to a server request).
 * Anything else is `other`: a client may send any string as a method.
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'subscriptions/listen',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'tasks/update',
  'GET',
  'DELETE',
  'response',
]);

/** Catalog kinds that say the upstream failed (the ones counted in `mcp_gateway_upstream_errors_total`). */
const UPSTREAM_ERROR_KINDS: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  'GW_UPSTREAM_TIMEOUT',
  'GW_UPSTREAM_UNAVAILABLE',
  'GW_UPSTREAM_HTTP',
  'GW_UPSTREAM_DOWN',
  'GW_UPSTREAM_BAD_MESSAGE',
]);

/** The metric label of a method name: itself when known, else `other`. */
export function methodLabel(method: unknown): string {
  return typeof method === 'string' && KNOWN_METHODS.has(method) ? method : 'other';
}

/** Whether `s` is a catalog code. */
export function isErrorKind(s: string): s is ErrorKind {
  return Object.hasOwn(ERROR_CATALOG, s);
}

/**
 * Label values that grow with use (tool names), bounded: the first `max` distinct values per scope keep their name,
 * later ones are `other`. Scopes are upstream names (bounded by the configuration).
 */
export class BoundedLabels {
  private readonly seen = new Map<string, Set<string>>();

  constructor(private readonly max: number) {}

  /** The label for `value` within `scope`. */
  of(scope: string, value: string | undefined): string {
    if (value === undefined || value === '') return 'none';
    let names = this.seen.get(scope);
    if (!names) {
      names = new Set();
      this.seen.set(scope, names);
    }
    if (names.has(value)) return value;
    if (names.size >= this.max) return 'other';
    names.add(value);
    return value;
  }
}

/** How the metrics are kept. */
export interface MetricsSettings {
  /** Distinct tool names labelled per upstream; later ones count as `other`. */
  maxToolLabels: number;
  /** Include prom-client's process metrics (CPU, memory, event loop lag, GC), prefixed `mcp_gateway_`. */
  defaultMetrics: boolean;
}

/** One request, as the operator log line says it. */
export interface RequestObservation {
  upstream: string;
  method: unknown;
  /** The client's era. */
  clientEra: 'legacy' | 'modern';
  /** The era of the upstream client that served it (a passed-through request: the client's; `unknown`: not learned). */
  upstreamEra: 'legacy' | 'modern' | 'unknown';
  /** `passthrough`: forwarded unchanged; `gateway`: answered by the gateway's faces (translated or its own tasks). */
  mode: 'passthrough' | 'gateway';
  /** What the request ended as (its label, and its failure's catalog kind when it failed with one). */
  outcome: RequestOutcome;
  seconds: number;
}

/** What the gauges read on each scrape (cheap counts the edge and the runtime keep anyway). */
export interface ScrapeSources {
  /** Gateway-owned tasks whose call runs on this instance now. */
  liveTasks(): number;
  /** Calls held between MRTR rounds on this instance. */
  heldCalls(): number;
  upstreams(): ReadonlyArray<{
    name: string;
    /** Upstream sessions held, by the era of the client holding them. */
    sessions: { legacy: number; modern: number };
    /** Sessions the legacy face minted for 2025-11-25 clients. */
    clientSessions: number;
    /** Open client streams: `subscriptions/listen` streams and the legacy face's GET streams. */
    streams: { listen: number; get: number };
    state: 'up' | 'down' | 'unknown';
  }>;
}

/** Task events counted, each its own counter (their sum would mean nothing). */
const TASK_EVENTS: ReadonlyArray<[AuditEvent, string]> = [
  ['task.created', 'created'],
  ['task.completed', 'completed'],
  ['task.failed', 'failed'],
  ['task.cancelled', 'cancelled'],
  ['task.expired', 'expired'],
];

type RequestLabel = 'upstream' | 'method' | 'client_era' | 'upstream_era' | 'mode' | 'outcome';
type DurationLabel = 'upstream' | 'method' | 'client_era' | 'mode';
const REQUEST_LABELS: RequestLabel[] = ['upstream', 'method', 'client_era', 'upstream_era', 'mode', 'outcome'];
const DURATION_LABELS: DurationLabel[] = ['upstream', 'method', 'client_era', 'mode'];
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Store call buckets (seconds): from a memory store's microseconds to a store command's timeout. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** One label set of `requests_total`: its count not yet handed to prom-client, and its duration series. */
interface RequestSeries {
  readonly labels: Record<RequestLabel, string>;
  pending: number;
  readonly duration: DurationSeries;
}

/** One label set of a `SeriesHistogram`: per-bucket counts (not cumulative), sum and count. */
class DurationSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<DurationLabel, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= (b[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        return;
      }
    }
  }
}

/**
 * A prom-client histogram whose series are observed directly (`series(labels).observe(v)`, no per-call label work) and
 * exposed in prom-client's own shape when scraped: `_bucket` samples cumulative with `le` (the last `+Inf`), then
 * `_sum` and `_count`, each series' labels on every sample.
 */
class SeriesHistogram extends Histogram<DurationLabel> {
  private readonly own = new Map<string, DurationSeries>();
  private readonly bounds: readonly number[];
  private readonly metricName: string;
  private readonly metricHelp: string;

  constructor(config: { name: string; help: string; labelNames: DurationLabel[]; buckets: number[]; registers: Registry[] }) {
    super(config);
    this.metricName = config.name;
    this.metricHelp = config.help;
    this.bounds = [...config.buckets].sort((a, b) => a - b);
  }

  /** The series of `labels` (made at its first use). */
  series(labels: Record<DurationLabel, string>): DurationSeries {
    const key = DURATION_LABELS.map((l) => labels[l]).join('\u0000');
    let s = this.own.get(key);
    if (!s) {
      s = new DurationSeries(labels, this.bounds);
      this.own.set(key, s);
    }
    return s;
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<DurationLabel>>> {
    return this.exported();
  }

  /** What prom-client's registry asks a histogram for when it writes the text format. */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<DurationLabel>>> {
    return this.exported();
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class's fields exist.
    (this.own as Map<string, DurationSeries> | undefined)?.clear();
  }

  private exported(): MetricObjectWithValues<MetricValueWithName<DurationLabel>> {
    const name = this.metricName;
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const s of this.own.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i] as number;
        values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: this.bounds[i] as number }, value: acc });
      }
      values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${name}_count`, labels: s.labels, value: s.count });
    }
    // prom-client's typings give `type` as a numeric enum and the histogram labels without `le`; at run time (what its
    // registry reads) the type is the word, and `le` is one more label.
    return { name, help: this.metricHelp, type: 'histogram', values, aggregator: 'sum', collect: () => undefined } as unknown as MetricObjectWithValues<
      MetricValueWithName<DurationLabel>
    >;
  }
}

/** The metrics of one gateway. */
export class GatewayMetrics {
  /** This gateway's registry (its own, not prom-client's global one). */
  readonly registry = new Registry();
  private readonly tools: BoundedLabels;
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: held so that the counter's registration has an owner; series are reached through `series`
  private readonly requests: Counter<RequestLabel>;
  private readonly duration: SeriesHistogram;
  /** The request series seen so far, by label values (bounded, as every label is). */
  private readonly series = new Map<string, RequestSeries>();
  private readonly taskCounters = new Map<AuditEvent, Counter<'upstream' | 'tool'>>();
  private readonly rounds: Counter<'upstream'>;
  private readonly storeErrors: Counter<'operation' | 'kind'>;
  private readonly storeDuration: Histogram<'store' | 'operation'>;
  private readonly upstreamErrors: Counter<'upstream' | 'kind'>;
  private readonly collisions: Counter<'endpoint' | 'kept' | 'hidden'>;
  private sources: ScrapeSources | undefined;

  constructor(settings: MetricsSettings) {
    const registers = [this.registry];
    this.tools = new BoundedLabels(settings.maxToolLabels);
    if (settings.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    const series = this.series;
    this.requests = new Counter({
      name: `${METRIC_PREFIX}requests_total`,
      help:
        'MCP requests served, by upstream, method, client era, upstream era, mode (passthrough or gateway) and outcome (ok, task_created, ' +
        'input_required, a catalog code, ...).',
      labelNames: REQUEST_LABELS,
      registers,
      // The counts kept per series since the last scrape are added now (see `request`).
      collect() {
        for (const s of series.values()) {
          if (s.pending === 0) continue;
          this.inc(s.labels, s.pending);
          s.pending = 0;
        }
      },
    });
    this.duration = new SeriesHistogram({
      name: `${METRIC_PREFIX}request_duration_seconds`,
      help: 'Time from a request to the end of its answer (a streamed answer: its end), by upstream, method, client era and mode.',
      labelNames: DURATION_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });
    for (const [event, word] of TASK_EVENTS) {
      this.taskCounters.set(
        event,
        new Counter({
          name: `${METRIC_PREFIX}tasks_${word}_total`,
          help: `Tasks ${word} (as the audit trail records them on this instance), by upstream and tool (the first tools per upstream, then other).`,
          labelNames: ['upstream', 'tool'],
          registers,
        }),
      );
    }
    const self = this;
    new Gauge({
      name: `${METRIC_PREFIX}tasks_live`,
      help: 'Gateway-owned tasks whose call runs on this instance now (not the whole store: other instances count their own).',
      registers,
      collect() {
        this.set(self.sources?.liveTasks() ?? 0);
      },
    });
    this.rounds = new Counter({
      name: `${METRIC_PREFIX}mrtr_rounds_total`,
      help: 'MRTR rounds that ended asking the client for input (input_required results sent), by upstream.',
      labelNames: ['upstream'],
      registers,
    });
    new Gauge({
      name: `${METRIC_PREFIX}mrtr_held_calls`,
      help: 'Upstream calls held on this instance between MRTR rounds, waiting for the client to retry with input.',
      registers,
      collect() {
        this.set(self.sources?.heldCalls() ?? 0);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}upstream_sessions`,
      help: 'Upstream sessions held, by upstream and the era of the client holding them (a stateless 2026-07-28 client holds none).',
      labelNames: ['upstream', 'era'],
      registers,
      collect() {
        for (const u of self.sources?.upstreams() ?? []) {
          this.set({ upstream: u.name, era: 'legacy' }, u.sessions.legacy);
          this.set({ upstream: u.name, era: 'modern' }, u.sessions.modern);
        }
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}client_sessions`,
      help: 'Sessions the legacy face holds for 2025-11-25 clients, by upstream.',
      labelNames: ['upstream'],
      registers,
      collect() {
        for (const u of self.sources?.upstreams() ?? []) this.set({ upstream: u.name }, u.clientSessions);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}streams`,
      help: 'Open long-lived client streams, by upstream and kind (listen: subscriptions/listen; get: legacy GET streams the face serves).',
      labelNames: ['upstream', 'kind'],
      registers,
      collect() {
        for (const u of self.sources?.upstreams() ?? []) {
          this.set({ upstream: u.name, kind: 'listen' }, u.streams.listen);
          this.set({ upstream: u.name, kind: 'get' }, u.streams.get);
        }
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}upstream_up`,
      help: 'Whether the upstream is reachable: 1 when its eras are known (probed or pinned) and it is not down, else 0.',
      labelNames: ['upstream'],
      registers,
      collect() {
        for (const u of self.sources?.upstreams() ?? []) this.set({ upstream: u.name }, u.state === 'up' ? 1 : 0);
      },
    });
    this.storeErrors = new Counter({
      name: `${METRIC_PREFIX}store_errors_total`,
      help: 'Task store calls that failed, by store operation and catalog code (GW_STORE_UNAVAILABLE, GW_STORE_FULL) or other.',
      labelNames: ['operation', 'kind'],
      registers,
    });
    this.storeDuration = new Histogram({
      name: `${METRIC_PREFIX}store_duration_seconds`,
      help: 'Task store calls, by store (memory, redis, postgres) and operation, and how long each took (failed ones included).',
      labelNames: ['store', 'operation'],
      buckets: STORE_BUCKETS,
      registers,
    });
    this.collisions = new Counter({
      name: `${METRIC_PREFIX}federation_collisions_total`,
      help: 'Names a federated member showed that an earlier member of the same path already shows (hidden; docs/federation.md), by path and members.',
      labelNames: ['endpoint', 'kept', 'hidden'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: `${METRIC_PREFIX}upstream_errors_total`,
      help:
        'Requests failed by their upstream, by upstream and catalog code (GW_UPSTREAM_TIMEOUT, GW_UPSTREAM_UNAVAILABLE, GW_UPSTREAM_HTTP, ' +
        'GW_UPSTREAM_DOWN, GW_UPSTREAM_BAD_MESSAGE).',
      labelNames: ['upstream', 'kind'],
      registers,
    });
  }

  /** Where the gauges read their values on a scrape. */
  watch(sources: ScrapeSources): void {
    this.sources = sources;
  }

  /**
   * Counts one request and its duration; a failure of its upstream also counts as an upstream error. Every request
   * passes here, so the two request metrics are kept in plain fields of their series, found by one lookup, and handed
   * to prom-client only when scraped: its `inc`/`observe` validate the labels and build and look up a key string from
   * them on each call, which measured as several percent of the gateway's CPU on the pass-through path.
   */
  request(r: RequestObservation): void {
    const method = methodLabel(r.method);
    const outcome = outcomeLabel(r.outcome);
    const key = `${r.upstream}\u0000${method}\u0000${r.clientEra}\u0000${r.upstreamEra}\u0000${r.mode}\u0000${outcome}`;
    let s = this.series.get(key);
    if (!s) {
      s = {
        labels: { upstream: r.upstream, method, client_era: r.clientEra, upstream_era: r.upstreamEra, mode: r.mode, outcome },
        pending: 0,
        duration: this.duration.series({ upstream: r.upstream, method, client_era: r.clientEra, mode: r.mode }),
      };
      this.series.set(key, s);
    }
    s.pending++;
    s.duration.observe(r.seconds);
    const kind = r.outcome.failure;
    if (kind && UPSTREAM_ERROR_KINDS.has(kind)) this.upstreamErrors.inc({ upstream: r.upstream, kind });
  }

  /** Counts a name hidden on a federated path because an earlier member shows it (told once per name and pair). */
  federationCollision(endpoint: string, kept: string, hidden: string): void {
    this.collisions.inc({ endpoint, kept, hidden });
  }

  /**
   * What the store wrapper at the composition root tells: each call's duration (one histogram series per operation,
   * its child kept so that an observation does no label work) and each failed call.
   */
  storeObserver(store: string): { error(operation: string, kind: string): void; duration(operation: string, seconds: number): void } {
    const series = new Map<string, { observe(v: number): void }>();
    return {
      error: (operation, kind) => this.storeErrors.inc({ operation, kind: isErrorKind(kind) ? kind : 'other' }),
      duration: (operation, seconds) => {
        let s = series.get(operation);
        if (!s) series.set(operation, (s = this.storeDuration.labels({ store, operation })));
        s.observe(seconds);
      },
    };
  }

  /** The task events of the audit trail, counted by upstream and (bounded) tool. */
  readonly audit: AuditLog = {
    record: (event, fields) => {
      const counter = this.taskCounters.get(event);
      if (!counter) return;
      const upstream = fields.upstream ?? 'none';
      counter.inc({ upstream, tool: this.tools.of(upstream, fields.tool) });
    },
  };

  /** What the task layer tells the metrics. */
  readonly tasks: TaskMetrics = {
    mrtrRound: (upstream) => this.rounds.inc({ upstream }),
  };

  /** The exposition: Prometheus text format, and its Content-Type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  /** Stops what the default metrics started (event loop monitor): the registry is dropped. */
  close(): void {
    this.registry.clear();
  }
}
