import { BreakerPauses, BreakerRegistry } from '../breaker';
import { ConnectionManager } from '../connection';
import type { PublishOptions, PublishOrigin } from '../core';
import { applyTopology, plannedStream, requireBrokerFeatures } from '../topology';
import { DeadLetters, Worker } from '../worker';
import { RecordTrust } from '../records';
import { LimitsStream } from '../limit-overrides';
import { EventRelay, JobEventSubscriber } from '../job-events';
import { CronService } from '../scheduler';
import type { WarrenConfig } from './config';
import { createControl } from './control';
import { createDeadLetterLog } from './dead-letter-log';
import { membershipProof } from './membership-proof';
import type { WarrenEventSink } from './event-sink';
import { announcePublished, createHistory } from './history';
import { createAggregates } from './aggregates';
import { queueConcurrency } from './job-settings';
import { reconnectSteps } from './reconnect-steps';
import { createOutbox } from './outbox';
import type { WarrenParts } from './parts';
import { wirePublishing, type PublishingParts } from './publishing';
import { WorkerSwitch } from './worker-switch';

/** What the consumer side is wired on: the configuration, its connection, its publishing and events. */
interface SharedParts {
  readonly config: WarrenConfig;
  readonly manager: ConnectionManager;
  readonly publishing: PublishingParts;
  readonly events: WarrenEventSink;
  /** Declares the plan again (on every connect, and when a consumer finds a queue gone). */
  readonly reapplyTopology: () => Promise<void>;
  /** Publishes a job for a part (cron, `ctx.publish`), announcing it like `warren.publish` does. */
  readonly publishAndAnnounce: (
    name: string,
    data: unknown,
    options?: PublishOptions,
    origin?: PublishOrigin,
  ) => ReturnType<PublishingParts['publisher']['publish']>;
}

/**
 * The wiring step of `createWarren`: builds every part of a warren from its resolved configuration and
 * gives the connection its reconnect steps (in wireOperations; their order: reconnect-steps.ts). Creates
 * the outbox table if asked to; connects nothing (the caller starts the connection).
 */
export async function wireWarren(config: WarrenConfig, events: WarrenEventSink): Promise<WarrenParts> {
  const { plan, log, options } = config;
  const manager = new ConnectionManager(config.connection, log.child({ component: 'connection' }));
  const publishing = wirePublishing(plan, manager, config.publisher, log.child({ component: 'publisher' }), {
    trust: new RecordTrust(plan.naming.namespace, config.signing, log.child({ component: 'records' })),
    instrumentation: config.instrumentation,
    results: true,
    deduplication: options.deduplication,
  });
  const outbox = await createOutbox(
    options.outbox,
    publishing.publisher,
    log.child({ component: 'outbox' }),
    events.emit,
  );
  const base: SharedParts = {
    config,
    manager,
    publishing,
    events,
    reapplyTopology: async () => {
      requireBrokerFeatures(plan, manager.broker);
      return applyTopology(plan, () => manager.openChannel());
    },
    publishAndAnnounce: (name, data, publishOptions, origin) =>
      announcePublished(
        publishing.publisher.publish(name, data, publishOptions, origin),
        publishOptions,
        events.emit,
        () => events.listens('published'),
      ),
  };
  const consumers = wireConsumers(base);
  const operations = wireOperations(base, consumers);
  const deadLetters = new DeadLetters({
    plan,
    manager,
    confirms: publishing.confirms,
    publishTimeoutMs: config.worker.republishTimeoutMs,
    log: log.child({ component: 'dead-letters' }),
  });
  return {
    plan,
    log,
    events,
    manager,
    connectionOptions: config.connection,
    ...publishing,
    ...consumers,
    ...operations,
    deadLetters,
    outbox,
    slipActivities: config.slipActivities,
    slipSeal: config.slipSeal,
    shutdownGraceMs: config.worker.shutdownGraceMs,
  };
}

/** The breaker pauses and registry, the scheduling (cron and its leadership) and the worker (with its rate limiters). */
function wireConsumers(base: SharedParts) {
  const { config, manager, events, reapplyTopology } = base;
  const { plan, log, options } = config;
  const queues = new WorkerSwitch();
  const pauses = new BreakerPauses(queues, log.child({ component: 'breaker' }));
  for (const job of config.jobs.values())
    for (const breaker of job.breakers) pauses.use(breaker, job.planned.queue);
  const breakers = new BreakerRegistry(
    options.breakers ?? {},
    config.breakerDefaults,
    (name, state) => {
      events.emit('breakerStateChanged', { breaker: name, state });
      pauses.stateChanged(name, state);
    },
    log.child({ component: 'breaker' }),
  );
  const scheduling = wireScheduling(base);
  const worker = new Worker(
    {
      plan,
      jobs: config.jobs,
      confirms: base.publishing.confirms,
      proveAnswer: (content, jobId) => base.publishing.trust.proof('job-result', content, jobId),
      options: config.worker,
      emit: events.emit,
      listens: events.listens,
      log: log.child({ component: 'worker' }),
      publishJob: base.publishAndAnnounce,
      breaker: (name, queue) => {
        pauses.use(name, queue);
        return breakers.get(name);
      },
      idempotency: options.idempotency,
      deduplication: options.deduplication,
      jobControl: base.publishing.jobControl,
      instrumentation: config.instrumentation,
      manager,
      reapplyTopology,
      concurrencyOf: (queueName) => queueConcurrency(config.jobs.values(), queueName, config.jobDefaults),
      membershipProof: (exchange) => membershipProof(base.publishing.trust, exchange),
    },
    log.child({ component: 'worker' }),
  );
  queues.connect(worker);
  return { pauses, breakers, scheduling, worker };
}

/** Cron with its leadership. */
function wireScheduling(base: SharedParts): CronService {
  const { manager, reapplyTopology, publishAndAnnounce } = base;
  const { plan, log, cron, publisher: publisherOptions } = base.config;
  const confirms = base.publishing.confirms;
  const emit = base.events.emit;
  const scheduling = new CronService({
    plan,
    declarations: cron,
    manager,
    confirms,
    publish: (job, data, jobId) => publishAndAnnounce(job, data, { jobId }, 'cron'),
    publishTimeoutMs: publisherOptions.timeoutMs,
    reapplyTopology,
    emit,
    log,
    trust: base.publishing.trust,
  });
  return scheduling;
}

/**
 * The control listener (warren/ops), the dead-letter log and the history; the connection's reconnect
 * steps (their order: reconnect-steps.ts) and its events forwarded to the instance's.
 */
function wireOperations(base: SharedParts, consumers: ReturnType<typeof wireConsumers>) {
  const { config, manager, events, publishing } = base;
  const { plan, log, options } = config;
  const { pauses, breakers, scheduling, worker } = consumers;
  const control = createControl({
    plan,
    manager,
    pauses,
    breakers: () => breakers,
    consumers: () => worker.health(),
    isLeader: () => scheduling.isLeader,
    schedules: () => scheduling.schedules(),
    running: config.aggregates ? () => config.aggregates!.collector.running() : undefined,
    log: log.child({ component: 'control' }),
    trust: publishing.trust,
  });
  const deadLetterLog = createDeadLetterLog(
    options.deadLetterLog,
    plan,
    manager,
    publishing.confirms,
    config.publisher.timeoutMs,
    log.child({ component: 'dead-letter-log' }),
    publishing.trust,
  );
  const { processId } = control;
  const historyPart = createHistory(options.history, { plan, manager, processId, log, publishing });
  const aggregates = createAggregates(config, manager, processId, publishing.trust);
  const jobEvents = wireJobEvents(base, processId);
  const limits = followLimits(base, worker);
  manager.useReadySteps(
    reconnectSteps({
      reapplyTopology: base.reapplyTopology,
      history: historyPart,
      aggregates,
      controlListener: control.listener,
      jobEvents,
      confirms: publishing.confirms,
      // the limits stream right after the consumers: overrides apply from the first records on
      worker: {
        open: async (generation) => {
          await worker.open(generation);
          await limits?.open();
        },
      },
      scheduling,
      deadLetterLog,
    }),
  );
  manager.on('connected', ({ url }) => events.emit('connected', { url }));
  manager.on('disconnected', ({ error }) => events.emit('disconnected', { error }));
  manager.on('blocked', ({ reason }) => events.emit('blocked', { reason }));
  manager.on('unblocked', () => events.emit('unblocked'));
  const history = historyPart?.parts ?? [];
  const parts = [jobEvents, deadLetterLog, ...history, aggregates?.writer, publishing.jobControl, limits];
  const addOns = parts.filter((p) => p !== undefined);
  return { control, history: historyPart, addOns, eventSubscriber: jobEvents.subscriber };
}

/**
 * The limits stream's follower, when this process consumes jobs with per-key limits: each override it reads goes
 * to the worker (docs/guide/per-key-limits.md#changing-limits-at-run-time).
 */
function followLimits(base: SharedParts, worker: Worker): LimitsStream | undefined {
  const stream = plannedStream(base.config.plan, 'limits');
  if (stream === undefined || !worker.hasKeyLimits) return undefined;
  return new LimitsStream({
    stream: stream.name,
    assertion: stream.assertion,
    openChannel: () => base.manager.openChannel(),
    confirms: base.publishing.confirms,
    trust: base.publishing.trust,
    onRecord: (record) =>
      worker.applyKeyLimitOverride(
        record.target,
        record.key,
        record.concurrency === undefined && record.max === undefined
          ? undefined
          : {
              ...(record.concurrency !== undefined ? { concurrency: record.concurrency } : {}),
              ...(record.max !== undefined ? { max: record.max } : {}),
            },
      ),
  });
}

/**
 * The live job events: the relay that sends this process's events to subscribers elsewhere (fed by the
 * event sink), and the subscriber behind `warren.events`, on this warren's connection.
 */
function wireJobEvents(base: SharedParts, processId: string) {
  const { config, manager, events, publishing } = base;
  const log = config.log.child({ component: 'job-events' });
  const relay = new EventRelay(config.plan.naming, processId, config.events, publishing.trust, log);
  events.relayTo(relay);
  const subscriber = new JobEventSubscriber({
    plan: config.plan,
    openChannel: () => manager.openConfirmChannel(),
    trust: publishing.trust,
    log,
  });
  return {
    subscriber,
    // A live view never fails a reconnect: without its channel, events go unsent (and subscribers count
    // them as a gap) until the next connect.
    open: async () => {
      await relay
        .open(() => manager.openChannel())
        .catch((error: unknown) =>
          log.warn({ err: error }, 'live job events unavailable until the next connect'),
        );
      await subscriber.reopen();
    },
    stop: async () => {
      await subscriber.close();
      await relay.stop();
    },
  };
}
