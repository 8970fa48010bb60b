import 'reflect-metadata';
import { checkKnownKeys, ConfigurationError, type JobDefinition, type JobOptions } from '../core';
import { JOB_METADATA, type JobMetadata } from './job-metadata';

/** Dotted lowercase `domain.action`; digits, `-` and `_` allowed inside words. */
const JOB_NAME = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;

/** The keys of JobOptions: a key outside them (`retries`, `timeout`) is a mistake to report, not to ignore. */
export const JOB_OPTION_KEYS = {
  queue: true,
  attempts: true,
  backoff: true,
  timeoutMs: true,
  concurrency: true,
  priority: true,
  schema: true,
  breakers: true,
  key: true,
  limiter: true,
  perKeyConcurrency: true,
  activity: true,
  isolate: true,
  processor: true,
  hardTimeoutMs: true,
  memoryLimitMb: true,
  recycleAfter: true,
  pool: true,
  batch: true,
} as const satisfies Record<keyof JobOptions, true>;

/** A job defined by `defineJob`: a frozen object carrying its metadata itself (no class to decorate). */
export function isDefinedJob(target: unknown): boolean {
  return typeof target === 'object' && target !== null && Object.hasOwn(target, JOB_METADATA);
}

/** The job metadata of a defined job, of a @Job class or of an instance's class, if any. */
export function readJobMetadata(target: object): JobMetadata | undefined {
  if (isDefinedJob(target)) return (target as { [JOB_METADATA]: JobMetadata })[JOB_METADATA];
  const ctor = typeof target === 'function' ? target : (target as { constructor?: unknown }).constructor;
  if (typeof ctor !== 'function') return undefined;
  return Reflect.getMetadata(JOB_METADATA, ctor) as JobMetadata | undefined;
}

/**
 * What stands for one job among the sources of a configuration: a defined job itself, the class of a
 * @Job class or instance (an instance and its class given twice count once).
 */
export function jobIdentity(target: object): unknown {
  if (isDefinedJob(target) || typeof target === 'function') return target;
  return (target as { constructor?: unknown }).constructor ?? target;
}

/** How errors name a job source: `defineJob("email.welcome")`, or the class name. */
export function describeJobSource(target: object): string {
  if (isDefinedJob(target)) return `defineJob('${readJobMetadata(target)?.name}')`;
  if (typeof target === 'function') return target.name;
  return (target as { constructor?: { name?: string } }).constructor?.name ?? 'object';
}

/** Per class and per defined job: `warren.publish(EmailJob, ...)` reads the definition on every publish. */
const definitions = new WeakMap<object, JobDefinition>();

/**
 * Turns a decorated class (or instance) or a defined job into a JobDefinition, or says what is wrong
 * with it: the one reader of both forms.
 */
export function readJobDefinition(target: object): JobDefinition {
  if (typeof target !== 'function' && !isDefinedJob(target)) return validateJobDefinition(target);
  let definition = definitions.get(target);
  if (definition === undefined) {
    definition = validateJobDefinition(target);
    definitions.set(target, definition);
  }
  return definition;
}

function validateJobDefinition(target: object): JobDefinition {
  const metadata = readJobMetadata(target);
  const defined = isDefinedJob(target);
  const label = describeJobSource(target);
  if (metadata === undefined)
    throw new ConfigurationError(
      `${label} is not a job handler: decorate the class with @Job(name, options), or use defineJob(name, options, handler)`,
    );
  const { name, options } = metadata;
  const where = defined ? label : `@Job('${name}') on ${label}`;
  if (typeof name !== 'string' || !JOB_NAME.test(name)) {
    throw new ConfigurationError(
      `${defined ? 'defineJob' : `@Job`} name of ${label} must be dotted lowercase like 'email.welcome' (got ${JSON.stringify(name)})`,
    );
  }
  checkKnownKeys(`${where} options`, options, JOB_OPTION_KEYS);
  if (typeof options?.queue !== 'string' || options.queue.length === 0) {
    throw new ConfigurationError(
      `${where} must name its queue: ${defined ? 'defineJob' : '@Job'}('${name}', { queue: 'some-queue' }${defined ? ', handler' : ''})`,
    );
  }
  if (options.schema !== undefined && !isStandardSchema(options.schema))
    throw new ConfigurationError(
      `${where} options.schema is not a Standard Schema (standardschema.dev: zod 3.24+, valibot 1, arktype 2, ...): it has no '~standard' with version 1 and a validate function`,
    );
  if (options.key !== undefined && typeof options.key !== 'function')
    throw new ConfigurationError(
      `${where} options.key must be a function of the payload returning the key, like (data) => data.tenantId (got ${typeof options.key})`,
    );
  const proto = (typeof target === 'function' ? (target as { prototype?: unknown }).prototype : target) as
    | { handle?: unknown; handleBatch?: unknown }
    | undefined;
  if (options.batch !== undefined) {
    if (typeof proto?.handleBatch !== 'function')
      throw new ConfigurationError(
        `${where} sets batch, so it needs a handleBatch(jobs, ctx) method${defined ? ' (defineJob with batch takes (jobs, ctx) => result)' : ''}`,
      );
  } else if (typeof proto?.handle !== 'function') {
    throw new ConfigurationError(
      `${where} has no handle(data, ctx) method${typeof proto?.handleBatch === 'function' ? ' (a handleBatch method needs the batch option: @Job(name, { queue, batch: { size, timeoutMs } }))' : ''}`,
    );
  }
  return Object.freeze({ name, ...options });
}

function isStandardSchema(schema: unknown): boolean {
  if ((typeof schema !== 'object' && typeof schema !== 'function') || schema === null) return false;
  const standard = (schema as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return standard?.version === 1 && typeof standard.validate === 'function';
}
