import 'reflect-metadata';
import { ConfigurationError, type JobDefinition } from '../core';
import { JOB_METADATA } from './job-metadata';
import type { JobMetadata } from './job';

/** Dotted lowercase `domain.action`; digits, `-` and `_` allowed inside words. */
const JOB_NAME = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;

/** The @Job metadata of a class or of an instance's class, if any. */
export function readJobMetadata(target: object): JobMetadata | undefined {
  const ctor = typeof target === 'function' ? target : (target as { constructor?: unknown }).constructor;
  if (typeof ctor !== 'function') return undefined;
  return Reflect.getMetadata(JOB_METADATA, ctor) as JobMetadata | undefined;
}

/** Per class: `warren.publish(EmailJob, ...)` reads the definition on every publish. */
const definitions = new WeakMap<object, JobDefinition>();

/** Turns a decorated class (or instance) into a JobDefinition, or says what is wrong with it. */
export function readJobDefinition(target: object): JobDefinition {
  if (typeof target !== 'function') return validateJobDefinition(target);
  let definition = definitions.get(target);
  if (definition === undefined) {
    definition = validateJobDefinition(target);
    definitions.set(target, definition);
  }
  return definition;
}

function validateJobDefinition(target: object): JobDefinition {
  const metadata = readJobMetadata(target);
  const label =
    typeof target === 'function'
      ? target.name
      : ((target as { constructor: { name: string } }).constructor?.name ?? 'object');
  if (metadata === undefined)
    throw new ConfigurationError(
      `${label} is not a job handler: decorate the class with @Job(name, options)`,
    );
  const { name, options } = metadata;
  if (typeof name !== 'string' || !JOB_NAME.test(name)) {
    throw new ConfigurationError(
      `@Job name of ${label} must be dotted lowercase like 'email.welcome' (got ${JSON.stringify(name)})`,
    );
  }
  if (typeof options?.queue !== 'string' || options.queue.length === 0) {
    throw new ConfigurationError(
      `@Job('${name}') on ${label} must name its queue: @Job('${name}', { queue: 'some-queue' })`,
    );
  }
  const proto =
    typeof target === 'function' ? (target as { prototype?: { handle?: unknown } }).prototype : target;
  if (typeof (proto as { handle?: unknown } | undefined)?.handle !== 'function') {
    throw new ConfigurationError(`@Job('${name}') on ${label} has no handle(data, ctx) method`);
  }
  return Object.freeze({ name, ...options });
}
