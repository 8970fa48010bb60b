import { hostname } from 'node:os';
import { withThrowawayChannel, type ConnectionManager, type OutgoingMessage } from '../connection';
import type { EmitEvent, Logger, PublishedJob, PublishOptions, WarrenEvents } from '../core';
import {
  firstLine,
  HistoryIndex,
  HistoryIndexer,
  HistoryWriter,
  LiveHistory,
  LookupServer,
  keptPayload,
  keptResult,
  resolveHistoryOptions,
  type HistoryOptions,
  type ResolvedHistoryOptions,
} from '../history';
import type { RecordTrust } from '../records';
import {
  CHECKPOINT_RETENTION,
  lookupQueueAssertion,
  requireStream,
  streamAssertion,
  type PlannedStream,
  type TopologyPlan,
} from '../topology';

/** The part of a warren instance the history listens to. */
interface EventSource {
  on<K extends keyof WarrenEvents>(event: K, listener: (...args: WarrenEvents[K]) => void): unknown;
}

/** The history of an instance: its writer, and the reconnect step that declares the stream and opens it. */
export interface WarrenHistory {
  readonly writer: HistoryWriter;
  readonly options: ResolvedHistoryOptions;
  /** Indexes what the writer appends, in the background. */
  readonly indexer: HistoryIndexer;
  /** Answers lookups from memory (`serveLookups`); undefined when this process does not. */
  readonly server: LookupServer | undefined;
  /**
   * What a close stops, in order: the lookup server, the indexer (a round in progress ends on a live
   * connection), the writer.
   */
  readonly parts: readonly { stop(): Promise<void> }[];
  /** Opens the writer's channel (a step of reconnect-steps.ts, after the topology step declared the stream). */
  readonly open: () => Promise<void>;
}

/**
 * `createWarren({ history })`: the writer of the history stream (a stream of the plan, declared by the
 * topology step before `open`), opened on every (re)connect by `open`; undefined when history is off (the
 * default: it costs CPU on the job path, see docs/performance.md). Then {@link recordHistory}.
 */
export function createHistory(
  input: HistoryOptions | undefined,
  deps: {
    readonly plan: TopologyPlan;
    readonly manager: ConnectionManager;
    readonly processId: string;
    /** The instance's logger (the history logs as its `history` component). */
    readonly log: Logger;
    readonly publishing: {
      readonly trust: RecordTrust;
      readonly confirms: { send(message: OutgoingMessage): Promise<void> };
    };
  },
): WarrenHistory | undefined {
  const { plan, manager, processId, publishing } = deps;
  const log = deps.log.child({ component: 'history' });
  const { trust, confirms } = publishing;
  if (input === undefined) return undefined;
  const options = resolveHistoryOptions(input);
  const stream = requireStream(plan, 'history');
  const origin = { p: processId, h: hostname(), pid: process.pid };
  const writer = new HistoryWriter(stream.name, options, origin, log, trust);
  const send = (message: OutgoingMessage) => confirms.send(message);
  const index = historyIndex({ plan, stream, manager, trust, idleMs: INDEXER_IDLE_MS, send });
  const indexer = new HistoryIndexer(index, (error) =>
    log.debug({ err: error }, 'indexing the history failed: the next append tries again'),
  );
  writer.onAppended = () => indexer.appended();
  const server = options.serveLookups ? lookupServer(deps, stream.name, origin, options, log) : undefined;
  // The stream is in the plan (planWarrenTopology): the topology step before this one declares it.
  return {
    writer,
    options,
    indexer,
    server,
    parts: server === undefined ? [indexer, writer] : [server, indexer, writer],
    open: async () => {
      await writer.open(() => manager.openChannel());
      // lookups fall back to reading the streams: a server that cannot open never fails a reconnect
      await server
        ?.open()
        .catch((error: unknown) => log.warn({ err: error }, 'not serving lookups until the next connect'));
    },
  };
}

/** `history.serveLookups`: the lookup server of this process, following the history in memory. */
function lookupServer(
  deps: Parameters<typeof createHistory>[1],
  stream: string,
  origin: { p: string; h: string; pid: number },
  options: ResolvedHistoryOptions,
  log: Logger,
): LookupServer {
  const { plan, manager, publishing } = deps;
  const openChannel = () => manager.openChannel();
  return new LookupServer({
    stream,
    queue: { name: plan.naming.historyLookups(), assertion: lookupQueueAssertion() },
    live: new LiveHistory({
      stream,
      openChannel,
      cacheBytes: options.lookupCacheBytes,
      // the stream drops a whole segment only once past maxBytes: keep what it may still hold
      retention: { maxAgeMs: options.maxAgeMs, maxBytes: options.maxBytes + 2 * options.segmentBytes },
    }),
    openChannel,
    trust: publishing.trust,
    username: () => manager.username,
    origin,
    log,
  });
}

/** The background indexer's reads: no record for this long means the end (as ops' reads by default), ms. */
const INDEXER_IDLE_MS = 200;

/** Records each job's lifecycle by listening to the instance's own events. */
export function recordHistory(
  writer: HistoryWriter,
  options: ResolvedHistoryOptions,
  warren: EventSource,
): void {
  warren.on('published', (e) =>
    writer.record({ j: e.jobId, n: e.name, q: e.queue, k: 'published', t: e.publishedAt, ...runAt(e.runAt) }),
  );
  warren.on('started', (e) =>
    writer.record({ j: e.jobId, n: e.name, q: e.queue, k: 'started', t: Date.now(), a: e.attempt }),
  );
  warren.on('progress', (e) =>
    writer.record({
      j: e.jobId,
      n: e.name,
      q: e.queue,
      k: 'progress',
      t: Date.now(),
      a: e.attempt,
      g: e.progress,
    }),
  );
  recordOutcomes(writer, options, warren);
  recordCancels(writer, warren);
}

/**
 * A run's end: completed, retrying or dead, with the job's payload (the event's `body`, its own bytes as
 * text, never serialized again) and a completion with its result, as `options` keep them.
 */
function recordOutcomes(writer: HistoryWriter, options: ResolvedHistoryOptions, warren: EventSource): void {
  const payload = (body: Buffer | undefined) =>
    options.payloads ? keptPayload(body, options.maxPayloadBytes) : {};
  const result = (value: unknown) => (options.results ? keptResult(value, options.maxResultBytes) : {});
  warren.on('completed', (e) =>
    writer.record({
      j: e.jobId,
      n: e.name,
      q: e.queue,
      k: 'completed',
      t: Date.now(),
      a: e.attempt,
      d: e.durationMs,
      ...payload(e.body),
      ...result(e.result),
    }),
  );
  warren.on('retried', (e) => {
    const t = Date.now();
    writer.record({
      j: e.jobId,
      n: e.name,
      q: e.queue,
      k: 'retrying',
      t,
      a: e.attempt,
      d: e.durationMs,
      u: t + e.delayMs,
      x: firstLine(e.error),
      ...payload(e.body),
    });
  });
  warren.on('deadLettered', (e) =>
    writer.record({
      j: e.jobId,
      n: e.name ?? '',
      q: e.queue,
      k: 'dead',
      t: Date.now(),
      a: e.attempt,
      d: e.durationMs,
      r: e.reason,
      x: firstLine(e.error),
      ...payload(e.body),
    }),
  );
}

/** A cancel at the call, in the cancelling process; and its held message dropped when due, in the worker. */
function recordCancels(writer: HistoryWriter, warren: EventSource): void {
  warren.on('cancelled', (e) =>
    writer.record({
      j: e.jobId,
      n: e.name ?? '',
      q: e.queue ?? '',
      k: 'cancelled',
      t: e.cancelledAt,
      ...runAt(e.dueAt),
    }),
  );
  warren.on('discarded', (e) =>
    writer.record({ j: e.jobId, n: e.name, q: e.queue, k: 'cancelled', t: Date.now(), a: e.attempt }),
  );
}

function runAt(at: number | undefined): { u?: number } {
  return at === undefined ? {} : { u: at };
}

/**
 * Emits `published` once a publish is confirmed, while anyone listens (the history does): for
 * `warren.publish`, `ctx.publish` and cron alike.
 */
export function announcePublished(
  published: Promise<PublishedJob>,
  options: PublishOptions | undefined,
  emit: EmitEvent,
  listens: () => boolean,
): Promise<PublishedJob> {
  if (!listens()) return published;
  const publishedAt = Date.now();
  const at = options?.runAt?.getTime() ?? (options?.delayMs ? publishedAt + options.delayMs : undefined);
  return published.then((job) => {
    emit('published', { ...job, publishedAt, ...(at !== undefined ? { runAt: at } : {}) });
    return job;
  });
}

/**
 * The history's index as a process sees it (a lookup's, or a writer's that indexes in the background): its
 * streams are declared only beside an existing history, never creating one.
 */
export function historyIndex(deps: {
  readonly plan: TopologyPlan;
  readonly stream: PlannedStream;
  readonly manager: ConnectionManager;
  readonly trust: RecordTrust;
  readonly idleMs: number;
  readonly send: (message: OutgoingMessage) => Promise<void>;
}): HistoryIndex {
  const { plan, stream, manager, trust, idleMs, send } = deps;
  const openChannel = () => manager.openChannel();
  const indexStream = plan.naming.jobHistoryIndex();
  const checkpointStream = plan.naming.jobHistoryCheckpoints();
  return new HistoryIndex({
    openChannel,
    stream: stream.name,
    indexStream,
    checkpointStream,
    idleMs,
    trust,
    username: () => manager.username,
    declareStreams: () =>
      withThrowawayChannel(openChannel, async (channel) => {
        await channel.checkQueue(stream.name);
        await channel.assertQueue(indexStream, stream.assertion);
        await channel.assertQueue(checkpointStream, streamAssertion(CHECKPOINT_RETENTION));
      }),
    append: ({ stream: to, content, contentType, headers, userId }) =>
      send({
        exchange: '',
        routingKey: to,
        content,
        properties: { persistent: true, contentType, headers, ...(userId === undefined ? {} : { userId }) },
        deadline: Date.now() + 10_000,
        context: {},
      }),
  });
}
