import {
  type BatchContext,
  type BatchJob,
  type BatchOptions,
  checkKnownKeys,
  ConfigurationError,
  type JobContext,
  type JobOptions,
  type SlipLogEntry,
  type StandardSchemaV1,
} from '../core';
import type { CronMetadata, CronOptions } from './cron';
import { CRON_METADATA, JOB_METADATA, type JobMetadata } from './job-metadata';
import { JOB_OPTION_KEYS, readJobDefinition } from './read-job-definition';
import { batchOfOne } from './batch-of-one';

/** One cron schedule of a defined job: a pattern, or a pattern with the options `@Cron` takes. */
export type DefineJobCron<TInput = unknown> =
  | string
  | (CronOptions<TInput> & {
      /** 5 fields, or 6 with seconds first (docs/guide/cron.md). */
      readonly pattern: string;
    });

/** The options of {@link defineJob}: `@Job`'s options, plus what the class form says with `@Cron` and methods. */
export interface DefineJobOptions<TInput = unknown, TData = TInput>
  extends Omit<JobOptions<TData>, 'schema' | 'activity'> {
  /** Standard Schema (zod, valibot, arktype, ...) checked on publish and before the handler runs; types the data. */
  readonly schema?: StandardSchemaV1<TInput, TData>;
  /** Publish the job on a cron pattern (or several), as `@Cron` does for a class. Default none. */
  readonly cron?: DefineJobCron<TInput> | readonly DefineJobCron<TInput>[];
  /**
   * The job may be a step of a routing slip: `true`, or `{ compensate }` that undoes a completed step (it
   * receives the step's log entry and runs at least once, so it must be idempotent). Default false.
   */
  readonly activity?:
    | boolean
    | { readonly compensate?: (log: SlipLogEntry, ctx: JobContext) => Promise<unknown> | unknown };
}

/**
 * A job in the function form: what {@link defineJob} returns. Frozen; give it wherever a job class or a
 * handler instance goes: `handlers` (this process runs it), `jobs` (it only publishes), `publish`,
 * `publishWithResult`, `slip().step`, `runJob`.
 */
export interface DefinedJob<TData = unknown, TResult = unknown, TInput = TData> {
  readonly name: string;
  readonly options: DefineJobOptions<TInput, TData>;
  /** The handler given to defineJob. */
  readonly handle: (data: TData, ctx: JobContext) => TResult;
  /**
   * A batch job's handler (`batch` set): the worker calls it with up to `batch.size` jobs; `handle` then
   * runs it with a batch of one (what `runJob` and a slip step call).
   */
  readonly handleBatch?: (jobs: readonly BatchJob<TData>[], ctx: BatchContext) => unknown;
  /** An activity's compensation (`activity: { compensate }`), for the slip step handler. */
  readonly compensate?: (log: SlipLogEntry, ctx: JobContext) => Promise<unknown> | unknown;
}

const DEFINE_JOB_OPTION_KEYS = { ...JOB_OPTION_KEYS, cron: true } as const satisfies Record<
  keyof DefineJobOptions,
  true
>;

/**
 * Defines job `name` as a function: the plain shape of `@Job` for JavaScript without a compiler, and for
 * TypeScript that prefers it. The handler gets the payload and the same context a class's `handle` gets;
 * what it returns is the job's result. The data type comes from `options.schema` (a Standard Schema) or
 * from the type argument. Every feature of the class form is an option: retries, timeouts, breakers,
 * limits, `cron`, `activity`. Invalid options throw a ConfigurationError here, at the definition.
 *
 * @example
 * export const welcomeEmail = defineJob('email.welcome', { queue: 'email', attempts: 5 }, async (data, ctx) => {
 *   await mailer.send(data.email, 'welcome', ctx.signal);
 * });
 * const warren = await createWarren({ topology, handlers: [welcomeEmail] });
 * await warren.publish(welcomeEmail, { email: 'ada@example.com' });
 */
export function defineJob<TData = unknown, TResult = unknown>(
  name: string,
  options: DefineJobOptions<TData> & { readonly batch: BatchOptions },
  handler: (jobs: readonly BatchJob<TData>[], ctx: BatchContext) => TResult,
): DefinedJob<TData, Promise<unknown>>;
export function defineJob<TInput, TData, TResult>(
  name: string,
  options: DefineJobOptions<TInput, TData> & { readonly schema: StandardSchemaV1<TInput, TData> },
  handler: (data: TData, ctx: JobContext) => TResult,
): DefinedJob<TData, TResult, TInput>;
export function defineJob<TData = unknown, TResult = unknown>(
  name: string,
  options: DefineJobOptions<TData>,
  handler: (data: TData, ctx: JobContext) => TResult,
): DefinedJob<TData, TResult>;
export function defineJob(
  name: string,
  options: DefineJobOptions,
  handler:
    | ((data: unknown, ctx: JobContext) => unknown)
    | ((jobs: readonly BatchJob[], ctx: BatchContext) => unknown),
): DefinedJob {
  const where = `defineJob('${name}')`;
  checkKnownKeys(`${where} options`, options, DEFINE_JOB_OPTION_KEYS);
  if (options === undefined)
    throw new ConfigurationError(
      `${where} needs options with its queue: defineJob(name, { queue }, handler)`,
    );
  if (typeof handler !== 'function')
    throw new ConfigurationError(
      `${where} needs a handler function (data, ctx) => result as its third argument (got ${typeof handler})`,
    );
  if (/^class\b/.test(Function.prototype.toString.call(handler)))
    throw new ConfigurationError(
      `${where} takes a handler function, not a class: decorate the class with @Job and pass an instance in handlers`,
    );
  const { cron, activity, ...jobOptions } = options;
  const compensate = compensationOf(where, activity);
  const metadata: JobMetadata = Object.freeze({
    name,
    options: Object.freeze({
      ...jobOptions,
      ...(activity !== undefined ? { activity: activity !== false } : {}),
    }) as JobOptions,
  });
  const defined: DefinedJob = Object.freeze({
    name,
    options: Object.freeze({ ...options }),
    ...(options.batch !== undefined
      ? batchHandlers(handler as NonNullable<DefinedJob['handleBatch']>)
      : { handle: handler as DefinedJob['handle'] }),
    ...(compensate !== undefined ? { compensate } : {}),
    [JOB_METADATA]: metadata,
    [CRON_METADATA]: cronEntries(where, cron),
  });
  readJobDefinition(defined); // every check the class form gets, here at the definition
  return defined;
}

function batchHandlers(handleBatch: NonNullable<DefinedJob['handleBatch']>) {
  return { handle: batchOfOne(handleBatch), handleBatch };
}

function compensationOf(where: string, activity: DefineJobOptions['activity']): DefinedJob['compensate'] {
  if (activity === undefined || typeof activity === 'boolean') return undefined;
  if (activity === null || typeof activity !== 'object')
    throw new ConfigurationError(
      `${where} options.activity must be true, false or { compensate } (got ${JSON.stringify(activity)})`,
    );
  checkKnownKeys(`${where} options.activity`, activity, { compensate: true });
  if (activity.compensate !== undefined && typeof activity.compensate !== 'function')
    throw new ConfigurationError(
      `${where} options.activity.compensate must be a function (log, ctx) => unknown (got ${typeof activity.compensate})`,
    );
  return activity.compensate;
}

const CRON_KEYS = { pattern: true, tz: true, data: true, id: true, missedTicks: true } as const;

/** The `cron` option as the `@Cron` entries a class would carry; the patterns are resolved by createWarren. */
function cronEntries(where: string, cron: DefineJobOptions['cron']): readonly CronMetadata[] {
  if (cron === undefined) return Object.freeze([]);
  const list: readonly DefineJobCron[] =
    typeof cron === 'string' || !Array.isArray(cron) ? [cron as DefineJobCron] : cron;
  return Object.freeze(
    list.map((entry, i) => {
      const path = Array.isArray(cron) ? `${where} options.cron[${i}]` : `${where} options.cron`;
      if (typeof entry === 'string') return Object.freeze({ pattern: entry, options: Object.freeze({}) });
      checkKnownKeys(path, entry, CRON_KEYS);
      if (typeof entry?.pattern !== 'string')
        throw new ConfigurationError(
          `${path} must be a cron pattern or { pattern, tz?, data?, id?, missedTicks? } (got ${JSON.stringify(entry)})`,
        );
      const { pattern, ...rest } = entry;
      return Object.freeze({ pattern, options: Object.freeze(rest) });
    }),
  );
}
