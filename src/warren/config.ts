import { configureAggregates, type ConfiguredAggregates } from './aggregates';
import { resolveBreakerOptions, type ResolvedBreakerOptions } from '../breaker';
import {
  resolveConnectionOptions,
  type ConnectionOptions,
  type ResolvedConnectionOptions,
} from '../connection';
import {
  combineInstrumentation,
  ConfigurationError,
  resolveLogger,
  resolveJobDefaults,
  type EmitEvent,
  type Instrumentation,
  type JobDefinition,
  type JobHandler,
  type Logger,
  type ResolvedJobDefaults,
} from '../core';
import { describeJobSource, readJobDefinition } from '../decorators';
import { resolvePublisherOptions, type ResolvedPublisherOptions } from '../publisher';
import type { TopologyPlan } from '../topology';
import { resolveEventsOptions, type ResolvedEventsOptions } from '../job-events';
import {
  checkBatchPrefetch,
  checkBatchQueue,
  resolveBatchSettings,
  resolveIsolateSettings,
  resolveWorkerOptions,
  type RegisteredJob,
  type ResolvedWorkerOptions,
} from '../worker';
import { planSlipJobs, slipJobName, type SlipSeal } from '../workflow';
import { slipSeal } from './slip-seal';
import { resolveJobLimiters } from '../coordination';
import { readCronDeclarations, type CronDeclarations } from '../scheduler';
import { resolveRecordSigning, type ResolvedRecordSigning } from '../records';
import { queueConcurrency, resolveJobSettings } from './job-settings';
import { planWarrenTopology } from './plan-warren-topology';
import { checkWarrenOptionKeys, resolveWarrenTopologyOptions, type WarrenOptions } from './options';

/**
 * Everything `createWarren` decides before it touches a broker: each option resolved and validated, the
 * handlers read, the topology planned, every job this process runs with its settings merged. The stores,
 * the outbox and the dead-letter log and history options pass through as given (in `options`).
 */
export interface WarrenConfig {
  readonly options: WarrenOptions;
  readonly log: Logger;
  readonly connection: ResolvedConnectionOptions;
  readonly publisher: ResolvedPublisherOptions;
  readonly worker: ResolvedWorkerOptions;
  readonly jobDefaults: ResolvedJobDefaults;
  readonly breakerDefaults: ResolvedBreakerOptions;
  readonly instrumentation: Instrumentation | undefined;
  readonly cron: CronDeclarations;
  readonly plan: TopologyPlan;
  /** The jobs this process runs (its handlers and the slip steps it has handlers for), by job name. */
  readonly jobs: ReadonlyMap<string, RegisteredJob>;
  /** The job names `warren.slip()` may use as steps. */
  readonly slipActivities: ReadonlySet<string>;
  /** The key that signs and verifies warren's own records; undefined without `signingKey`. */
  readonly signing: ResolvedRecordSigning | undefined;
  /** Seals the slip envelopes this process publishes (a no-op without a key). */
  readonly slipSeal: SlipSeal;
  /** The live job events this process sends (`events`). */
  readonly events: ResolvedEventsOptions;
  /** The queue aggregates' options and their collector on the job path; undefined while off. */
  readonly aggregates: ConfiguredAggregates | undefined;
}

const IGNORE_EVENTS: EmitEvent = () => undefined;

/**
 * The pure configuration step of `createWarren`: options in, a resolved and validated configuration and
 * topology plan out; no broker, no I/O. Invalid configuration throws a ConfigurationError here, naming
 * its path. `emit` is where the slip steps' events go (the warren's event sink; ignored by default).
 * A `@Cron`'s data is checked against its job's schema afterwards, by `checkCronData` (schemas may be
 * asynchronous).
 */
export function resolveWarrenConfig(
  options: WarrenOptions = {},
  emit: EmitEvent = IGNORE_EVENTS,
): WarrenConfig {
  checkWarrenOptionKeys(options);
  const log = resolveLogger('logger', options.logger);
  const connection = resolveWarrenConnectionOptions(options);
  const topologyOptions = resolveWarrenTopologyOptions(options);
  const publisher = resolvePublisherOptions(options.publisher);
  const worker = resolveWorkerOptions(options.worker);
  const jobDefaults = resolveJobDefaults(options.jobDefaults);
  const breakerDefaults = resolveBreakerOptions(options.breakerDefaults, 'breakerDefaults');
  const signing = resolveRecordSigning(options.signingKey);
  const events = resolveEventsOptions(options.events);
  const handlers = readHandlers(options.handlers ?? []);
  const definitions = [...handlers.values()].map((h) => h.definition);
  for (const job of options.jobs ?? []) definitions.push(readJobDefinition(job));
  const handlerByName = new Map([...handlers].map(([name, h]) => [name, h.handler]));
  const seal = slipSeal(signing, topologyOptions.namespace);
  const slips = planSlipJobs(
    listActivities(options.activities ?? [], [...handlerByName.values(), ...(options.jobs ?? [])]),
    handlerByName,
    emit,
    jobDefaults.timeoutMs,
    options.joins,
    seal,
  );
  definitions.push(...slips.definitions);
  const cron = readCronDeclarations(options.scheduler, [...handlerByName.values(), ...(options.jobs ?? [])]);
  const limiters = resolveJobLimiters([...handlers.values()].map((h) => h.definition));
  const plan = planWarrenTopology(options, definitions, cron, limiters, topologyOptions);
  // A slip step runs under its activity's limiter, as the plain job does.
  const activityOf = new Map([...slips.activities].map((name) => [slipJobName(name), name]));
  const limiterOf = (name: string) => limiters.ofJob.get(activityOf.get(name) ?? name);
  const jobs = registerJobs(plan, [...handlerByName, ...slips.handlers], jobDefaults, limiterOf);
  const aggregates = configureAggregates(options.aggregates);
  const instrumentation = combineInstrumentation([
    ...listInstrumentation(options.instrumentation),
    ...(aggregates ? [aggregates.collector] : []),
  ]);
  return {
    options,
    log,
    connection,
    publisher,
    worker,
    jobDefaults,
    breakerDefaults,
    instrumentation,
    cron,
    plan,
    jobs,
    slipActivities: slips.activities,
    signing,
    slipSeal: seal,
    events,
    aggregates,
  };
}

/** Each handled job with its planned queue and its settings: what the worker runs. */
function registerJobs(
  plan: TopologyPlan,
  handlers: readonly (readonly [string, JobHandler])[],
  jobDefaults: ResolvedJobDefaults,
  limiterOf: (name: string) => RegisteredJob['limiter'],
): Map<string, RegisteredJob> {
  const jobs = new Map<string, RegisteredJob>();
  for (const [name, handler] of handlers) {
    const planned = plan.jobs.get(name)!;
    const { attempts, backoff, timeoutMs, concurrency } = resolveJobSettings(planned, jobDefaults);
    const isolate = resolveIsolateSettings(planned, {
      timeoutMs,
      concurrency,
      isTimeoutSet: planned.timeoutMs !== undefined,
    });
    const batch = resolveBatchSettings(planned, { timeoutMs });
    checkBatchQueue(
      name,
      batch,
      plan.queues.find((q) => q.role === 'job' && q.name === planned.queueName) as
        | { key: string; fairness?: unknown; partitions?: unknown }
        | undefined,
    );
    checkInPlaceAttempts(plan, name, planned.queueName, attempts);
    jobs.set(name, {
      planned,
      handler,
      attempts,
      backoff,
      timeoutMs,
      schema: planned.schema,
      breakers: planned.breakers ?? [],
      limiter: limiterOf(name),
      ...(isolate !== undefined ? { isolate, timeoutMs: isolate.timeoutMs } : {}),
      ...(batch !== undefined ? { batch } : {}),
    });
  }
  checkBatchPrefetch(jobs.values(), (queueName) => queueConcurrency(jobs.values(), queueName, jobDefaults));
  return jobs;
}

/**
 * On a queue that retries in place every retry is a delivery the broker counts towards the queue's
 * delivery limit: a job with more attempts than that limit would be dead-lettered by the broker
 * (`delivery_limit`) before its last attempt ran.
 */
function checkInPlaceAttempts(plan: TopologyPlan, name: string, queueName: string, attempts: number): void {
  const queue = plan.queues.find((q) => q.name === queueName);
  if (queue?.role !== 'job' || queue.inPlaceRetryMs === undefined || queue.deliveryLimit === undefined)
    return;
  if (attempts > queue.deliveryLimit)
    throw new ConfigurationError(
      `@Job('${name}').attempts (${attempts}) is over the delivery limit (${queue.deliveryLimit}) of its queue '${queue.key}', which retries in place (inPlaceRetryMs): each retry counts towards that limit, so raise topology.queues.${queue.key}.deliveryLimit to at least ${attempts}`,
    );
}

/** `url` and `connection` of WarrenOptions (or OpsOptions) as one resolved ConnectionOptions. */
export function resolveWarrenConnectionOptions(
  options: Pick<WarrenOptions, 'url' | 'connection'>,
  defaults: Omit<ConnectionOptions, 'url'> = {},
): ResolvedConnectionOptions {
  return resolveConnectionOptions({
    ...defaults,
    ...options.connection,
    ...(options.url !== undefined ? { url: options.url } : {}),
  });
}

/**
 * The handler instances and defined jobs by job name, each with its definition; a class or a second
 * handler of one name is refused.
 */
function readHandlers(
  handlers: readonly object[],
): Map<string, { readonly handler: JobHandler; readonly definition: JobDefinition }> {
  const read = new Map<string, { handler: JobHandler; definition: JobDefinition }>();
  for (const handler of handlers) {
    if (typeof handler === 'function')
      throw new ConfigurationError(
        `handlers takes instances (new ${(handler as { name: string }).name}(...)); pass classes you only publish as jobs`,
      );
    const definition = readJobDefinition(handler);
    const earlier = read.get(definition.name);
    if (earlier)
      throw new ConfigurationError(
        `two handlers for job '${definition.name}': ${describeJobSource(earlier.handler)} and ${describeJobSource(handler)}`,
      );
    read.set(definition.name, { handler: handler as JobHandler, definition });
  }
  return read;
}

/**
 * The slip activities of a configuration: the `activities` option, then every job of `handlers` and
 * `jobs` whose definition says `activity: true` (once per name: listing it in both is allowed).
 */
function listActivities(declared: readonly object[], sources: readonly object[]): object[] {
  const activities = [...declared];
  const names = new Set(declared.map((activity) => readJobDefinition(activity).name));
  for (const source of sources) {
    const { name, activity } = readJobDefinition(source);
    if (activity !== true || names.has(name)) continue;
    names.add(name);
    activities.push(source);
  }
  return activities;
}

function listInstrumentation(input: WarrenOptions['instrumentation']): readonly Instrumentation[] {
  if (input === undefined) return [];
  return Array.isArray(input) ? (input as readonly Instrumentation[]) : [input as Instrumentation];
}
