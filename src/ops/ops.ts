// size-exception: one short delegate per operation of the API (removal, dead letters, schedules, marks live in files of their own); ~370.
import 'reflect-metadata';
import type { ConnectionManager } from '../connection';
import { ControlClient, PauseMarkers, type ControlReply, type ProcessStatus } from '../process-control';
import { resolveJobLimiters } from '../coordination';
import { ConfigurationError, createSilentLogger, type PublishedJob, type PublishOptions } from '../core';
import { readJobDefinition, type JobRef } from '../decorators';
import {
  readCronDeclarations,
  type AddedSchedule,
  type AddScheduleOptions,
  type ScheduleSpec,
  type TriggeredSchedule,
} from '../scheduler';
import type { JobStatus, RecentJobs } from '../history';
import { lookupJob, lookupRecentJobs } from './history-lookup';
import { readAggregatesView, type AggregatesView, type GraphRange } from './aggregate-ops';
import { appendMark, checkMarkInput, pauseMark, type MarkInput } from './mark-ops';
import { limitOps, type LimitOps } from './limit-ops';
import type { GraphMark } from '../aggregates';
import type { CancelledJob, DelayedJob } from '../job-control';
import type { JobEventSubscriber } from '../job-events';
import { resolvePublisherOptions } from '../publisher';
import { RecordTrust, type RecordSkips } from '../records';
import {
  isDeclaredJobQueue,
  isJobQueue,
  plannedStream,
  type PlannedJobQueue,
  type TopologyPlan,
} from '../topology';
import {
  planWarrenTopology,
  rescheduleAt,
  type NamespaceRemovalResult,
  type RemoveNamespaceOptions,
  type RescheduleOptions,
} from '../warren';
import { DeadLetterOps } from './dead-letter-ops';
import { mergeSchedules } from './describe-plan';
import { ManagementApi, type BrokerState } from './management-api';
import { OpsConnection, removeOpsNamespace } from './ops-connection';
import { overviewQueues } from './queue-overview';
import { ManagementApiError, UnknownQueueError } from './ops-errors';
import type { PauseResult, ProcessesReport, QueueOverview, ScheduleOverview } from './ops-results';
import { resolveOpsOptions, type OpsOptions, type ResolvedOpsOptions } from './options';
import { ScheduleOps } from './schedule-ops';
import { topologyOps, type TopologyOps } from './topology-ops';

/**
 * The operations API: what an operator can see and do, for code, the `warren` command and the dashboard
 * alike (neither can do anything this cannot). Typed results, typed errors, no printing. Connects on
 * first use; `topology.plan()` needs no broker at all. Create it with {@link createOps}.
 */
export class WarrenOps {
  /** @internal the plan the operations act on (tests read it; tooling uses topology.plan()) */
  readonly plan: TopologyPlan;
  private readonly crons: readonly ScheduleSpec[];
  private readonly options: ResolvedOpsOptions;
  private readonly connection: OpsConnection;
  /** The dead-letter log: browse, search, replay, purge (see DeadLetterOps). */
  readonly dead: DeadLetterOps;
  /**
   * Live job events from every process of the namespace, on the ops connection (docs/guide/events.md):
   * `ops.events.subscribe({ jobId })`. The dashboard's job page follows a job through it.
   */
  readonly events: JobEventSubscriber;
  /** Per-key limit overrides at run time (docs/guide/per-key-limits.md#changing-limits-at-run-time). */
  readonly limits: LimitOps;
  private readonly registry: ScheduleOps;
  private readonly trust: RecordTrust;

  /** Made by {@link createOps}; not meant to be called directly. */
  constructor(private readonly input: OpsOptions) {
    this.options = resolveOpsOptions(input);
    const jobs: readonly JobRef[] = input.jobs ?? [];
    const cron = readCronDeclarations(input.scheduler, jobs);
    const definitions = jobs.map((job) => readJobDefinition(job));
    this.crons = cron.crons;
    this.plan = planWarrenTopology(input, definitions, cron, resolveJobLimiters(definitions));
    this.trust = new RecordTrust(this.plan.naming.namespace, this.options.signing, createSilentLogger());
    this.connection = new OpsConnection(this.plan, input, this.trust);
    this.events = this.connection.events;
    this.limits = limitOps(this.plan, this.connection, this.trust);
    this.topology = topologyOps(
      this.plan,
      () => this.management(),
      this.options.management !== undefined,
      () => this.connect(),
    );
    this.registry = new ScheduleOps(
      this.plan,
      this.crons,
      cron.scheduler,
      resolvePublisherOptions(input.publisher).timeoutMs,
      async () => {
        const { manager, confirms, publisher, trust } = await this.connection.open();
        const publish = (job: string, data: unknown, jobId: string) =>
          publisher.publish(job, data, { jobId });
        return { manager, confirms, publish, trust, read: (run) => this.connection.read(run) };
      },
    );
    this.dead = new DeadLetterOps(
      this.plan,
      this.options.deadLetterLog,
      this.options.deadLetterIndex,
      resolvePublisherOptions(input.publisher).timeoutMs,
      async () => {
        const { manager, confirms, trust } = await this.connection.open();
        return {
          openChannel: () => manager.openChannel(),
          send: (m) => confirms.send(m),
          trust,
          read: (run) => this.connection.read(run),
        };
      },
    );
  }

  /** Every job queue: ready, consumers, dead letters, operator pause; unacked with the management API. */
  async queues(): Promise<QueueOverview[]> {
    const manager = await this.connect();
    const management = this.options.management ? await this.management().state() : undefined;
    return overviewQueues(this.plan.queues.filter(isJobQueue), manager, this.markers(manager), management);
  }

  /** The warren processes of this namespace that answer within `replyTimeoutMs`, with what they run. */
  async processes(): Promise<ProcessesReport> {
    const { replies, silent } = await this.ask({ command: 'status' });
    return { processes: replies.map((r) => r.process), silent };
  }

  /**
   * Pauses a job queue in every process: records the pause on the broker (so processes that start or
   * reconnect later stay paused), then tells every process, which stops taking jobs from it (running
   * ones finish). Combines with circuit breakers: the queue runs only when nobody holds it.
   */
  async pause(queue: string): Promise<PauseResult> {
    return this.setPaused(queue, true);
  }

  /** Undoes `pause`. A queue an open circuit breaker (or code) still holds stays paused until released. */
  async resume(queue: string): Promise<PauseResult> {
    return this.setPaused(queue, false);
  }

  /**
   * Every schedule (held by the running processes, the config's `@Cron`s, the broker's registry): next
   * fire time, the process firing it, and whether any does (`isFired`, `notFired`). Reads the registry once.
   */
  async schedules(): Promise<ScheduleOverview[]> {
    const now = Date.now();
    const declared = this.crons.map((spec) => ({
      id: spec.id,
      job: spec.job,
      pattern: spec.cron.pattern,
      tz: spec.cron.tz,
      nextFireAt: new Date(spec.cron.nextAfter(now)),
    }));
    const [report, registry] = await Promise.all([this.processes(), this.registry.read()]);
    return mergeSchedules(report.processes, declared, registry);
  }

  /**
   * Adds or replaces a schedule in the broker's schedule registry, as `warren.cron.add` does. The result
   * says whether a process fires it; while none runs the scheduler it carries a `warning`.
   */
  addSchedule(
    job: string,
    pattern: string,
    data: unknown,
    options?: AddScheduleOptions,
  ): Promise<AddedSchedule> {
    return this.registry.add(job, pattern, data, options);
  }

  /** Removes a schedule from the registry (the config's `@Cron` ids are refused: pause them). */
  removeSchedule(id: string): Promise<void> {
    return this.registry.remove(id);
  }

  /** Pauses a schedule (registry or code-declared) in every process, until resumed. */
  pauseSchedule(id: string): Promise<void> {
    return this.registry.setPaused(id, true);
  }

  resumeSchedule(id: string): Promise<void> {
    return this.registry.setPaused(id, false);
  }

  /** Publishes one firing of a schedule now (`<id>@manual-<ms>`); no leader needed. */
  triggerSchedule(id: string): Promise<TriggeredSchedule> {
    return this.registry.trigger(id);
  }

  /**
   * Where job X is: waiting, delayed (until), running (in which process), completed (when, how long),
   * retrying (attempt, next run) or dead (why), from the history stream the workers write with
   * `history` on; `unknown` when the history holds nothing of it (off, expired, or never published).
   * Reads the history from its oldest record: the CLI's case, measured on docs/performance.md.
   */
  async job(jobId: string): Promise<JobStatus> {
    return lookupJob(
      this.plan,
      this.connection,
      this.trust,
      this.input.history,
      this.options.deadLetterLog.endIdleMs,
      jobId,
    );
  }

  /**
   * The newest completed and failed (retrying or dead) jobs of a job queue, or of all, from the history
   * (`history` on the workers): up to 20 of each from the last 15 minutes (less when that is more than
   * 2,000 batches). `undefined` when no history stream exists.
   */
  async recentJobs(queue?: string): Promise<RecentJobs | undefined> {
    if (queue !== undefined && !this.jobQueues().some((q) => q.key === queue))
      throw new UnknownQueueError(
        queue,
        this.jobQueues().map((q) => q.key),
      );
    const idleMs = this.options.deadLetterLog.endIdleMs;
    return lookupRecentJobs(this.plan, this.connection, this.trust, this.input.history, idleMs, queue);
  }

  /**
   * The queue aggregates the workers write with `aggregates` on (give the same `aggregates` here): per queue
   * and for all queues (`*`), a point per bucket of the last hour, or per hour of the last day or week.
   */
  aggregates(range: GraphRange = 'hour'): Promise<AggregatesView> {
    const idleMs = this.options.deadLetterLog.endIdleMs;
    return readAggregatesView(this.plan, this.connection, this.trust, this.input.aggregates, idleMs, range);
  }

  /**
   * Marks a deploy on the graphs' time axis (docs/guide/aggregates.md#marks): one signed record in the
   * namespace's marks stream, confirmed by the broker, at this machine's clock. Returns the mark.
   */
  async mark(input: MarkInput): Promise<GraphMark> {
    const mark = checkMarkInput(input);
    await appendMark(this.plan, this.connection, mark, true);
    return mark;
  }

  /** Publishes a job by name (confirmed by the broker), as `warren.publish` does. */
  async publish(job: string, data: unknown, options?: PublishOptions): Promise<PublishedJob> {
    return (await this.connection.publisher()).publish(job, data, options);
  }

  /**
   * Delayed jobs by id, as `warren.delayed.*` (docs/guide/job-control.md); each reads the control stream first
   * (once more on the next connection when the connection was lost under the read; a cancel records itself
   * without what it could not read).
   */
  readonly delayed = {
    cancel: async (jobId: string): Promise<CancelledJob> =>
      (await this.connection.jobControl()).cancel(jobId),
    promote: (jobId: string): Promise<void> =>
      this.connection.read(async ({ jobControl }) => jobControl.promote(jobId)),
    reschedule: (jobId: string, options: RescheduleOptions): Promise<void> =>
      this.connection.read(async ({ jobControl }) =>
        jobControl.reschedule(jobId, rescheduleAt(jobId, options)),
      ),
    /**
     * The `controllable` delayed jobs due next, soonest first (at most `limit`, default 20), of one job
     * queue or of all. Jobs published without `controllable` keep no copy on the stream: not listed.
     */
    dueNext: async (
      options: { readonly queue?: string; readonly limit?: number } = {},
    ): Promise<DelayedJob[]> => {
      const { queue, limit = 20 } = options;
      if (queue !== undefined && !this.jobQueues().some((q) => q.key === queue))
        throw new UnknownQueueError(
          queue,
          this.jobQueues().map((q) => q.key),
        );
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
        throw new ConfigurationError(
          `delayed.dueNext: limit must be a whole number from 1 to 1000 (got ${String(limit)})`,
        );
      const keys = new Map(this.plan.queues.filter((q) => q.role === 'job').map((q) => [q.name, q.key]));
      return this.connection.read(({ jobControl }) =>
        jobControl.dueNext(limit, (name) => keys.get(name), queue),
      );
    },
  };

  /**
   * The records this ops client skipped (job control, dead-letter log, history, schedule registry,
   * control replies): forged, replayed, unsigned while a key is set, malformed or out of bounds.
   */
  skippedRecords(): RecordSkips {
    return this.trust.skipped();
  }

  /** Topology as code against the broker: plan (offline), diff and verify (management API), apply. */
  readonly topology: TopologyOps;

  /**
   * Removes the namespace, as `warren.removeNamespace` does (docs/operating/removing-a-namespace.md); this
   * ops client is closed after (create a new one to go on).
   */
  async removeNamespace(options: RemoveNamespaceOptions = {}): Promise<NamespaceRemovalResult> {
    const manager = await this.connect();
    return removeOpsNamespace(this.input, this.plan, this.trust, manager, () => this.close(), {
      replyTimeoutMs: this.options.replyTimeoutMs,
      ...options,
    });
  }

  /** Closes the connection (if one was opened). */
  async close(): Promise<void> {
    await this.dead.close().catch(() => undefined);
    await this.connection.close();
  }

  private async setPaused(queue: string, paused: boolean): Promise<PauseResult> {
    const planned = this.jobQueues().find((q) => q.key === queue);
    if (!planned)
      throw new UnknownQueueError(
        queue,
        this.jobQueues().map((q) => q.key),
      );
    const manager = await this.connect();
    const markers = this.markers(manager);
    if (paused) await markers.mark(queue);
    else await markers.unmark(queue);
    // A mark on the graphs' time axis, where the marks stream is planned or exists (mark-ops.ts).
    await appendMark(
      this.plan,
      this.connection,
      pauseMark(queue, paused),
      plannedStream(this.plan, 'marks') !== undefined,
    );
    const { replies, silent } = await this.ask({ command: 'sync-pause', queue });
    const runners = replies.map((r) => r.process).filter((p) => p.queues.some((q) => q.key === queue));
    const obeyed = (p: ProcessStatus) => {
      const state = p.queues.find((q) => q.key === queue)!;
      return paused
        ? state.paused && state.holders.includes('operator')
        : !state.holders.includes('operator');
    };
    return {
      queue,
      paused,
      confirmed: runners.filter(obeyed),
      unconfirmed: runners.filter((p) => !obeyed(p)),
      silent,
    };
  }

  /** Asks every process; with the management API, stops once every listener answered and counts the silent. */
  private async ask(request: { command: 'status' | 'sync-pause'; queue?: string }) {
    const manager = await this.connect();
    const client = new ControlClient(this.plan.naming, () => manager.openChannel(), this.trust);
    const listeners = this.options.management ? await this.listeners() : undefined;
    const replies: ControlReply[] = await client.ask(request, this.options.replyTimeoutMs, listeners);
    const silent = listeners === undefined ? undefined : Math.max(0, listeners - replies.length);
    return { replies, silent };
  }

  /** The processes listening on the control exchange now: the queues bound to it. */
  private listeners(): Promise<number> {
    return this.management()
      .bindingCount(this.plan.naming.controlExchange())
      .catch((error: unknown) => {
        if ((error as ManagementApiError).status === 404) return 0;
        throw error;
      });
  }

  /** The job queues, without their lanes (a queue's overview lists its lanes). */
  private jobQueues(): PlannedJobQueue[] {
    return this.plan.queues.filter(isDeclaredJobQueue);
  }

  private markers(manager: ConnectionManager): PauseMarkers {
    return new PauseMarkers(this.plan.naming, () => manager.openChannel(), this.input.queues?.expiresMs);
  }

  private management(): ManagementApi {
    if (!this.options.management)
      throw new ManagementApiError(
        'MANAGEMENT_NOT_CONFIGURED',
        'this needs the RabbitMQ management API: give management.url (CLI: --management-url or WARREN_MANAGEMENT_URL)',
      );
    return new ManagementApi(this.options.management);
  }

  private connect(): Promise<ConnectionManager> {
    return this.connection.manager();
  }
}

/**
 * Creates the operations API for an application's topology and job classes (the same ones its
 * createWarren gets). Validates them at once; connects on first use.
 *
 * @example
 * const ops = createOps({ url: process.env.AMQP_URL, topology, jobs: [WelcomeEmail] });
 * const { confirmed } = await ops.pause('email');   // every process stops taking email jobs
 * await ops.resume('email');
 * await ops.close();
 */
export function createOps(options: OpsOptions): WarrenOps {
  return new WarrenOps(options);
}

export type { BrokerState };
