import { ConfigurationError, validationMessage, type PublishOptions } from '../core';
import { readJobDefinition, type JobRef, type JobData } from '../decorators';
import type { BatchResult } from '../publisher';

/**
 * Augment this interface to type `publish` by job name:
 * `declare module 'warren' { interface WarrenJobs { 'email.welcome': { userId: string } } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: an interface (not a type) so users can augment it
export interface WarrenJobs {}

/** A map of job name to payload type. */
export type JobMap = Record<string, unknown>;
/** The job names `publish` takes: any string until WarrenJobs (or the Warren's type argument) names them. */
export type JobName<TJobs> = [keyof TJobs] extends [never] ? string : Extract<keyof TJobs, string>;
/** The payload type of job `K`. */
export type JobPayload<TJobs, K> = K extends keyof TJobs ? TJobs[K] : unknown;

/**
 * One job of a {@link Warren.publishMany} call: a job class or a job name, its payload (typed like
 * `publish`'s) and its publish options.
 */
export interface PublishManyEntry<TJobs = WarrenJobs, J = JobRef | JobName<TJobs>> {
  readonly job: J;
  readonly data: J extends JobRef ? JobData<J> : JobPayload<TJobs, J>;
  readonly options?: PublishOptions;
}

/**
 * The outcome of one job of a {@link Warren.publishMany} call: `confirmed` by the broker, or `failed`
 * with the typed error a `publish` of it alone would have rejected with.
 */
export type PublishManyResult = BatchResult;

/** The job name of a `publish`-like call's first argument: the name itself, or its class's `@Job` name. */
export function jobNameOf(job: string | JobRef): string {
  if (typeof job === 'string') return job;
  if ((typeof job !== 'function' && typeof job !== 'object') || job === null)
    throw new ConfigurationError(
      validationMessage('the job', 'must be a job name, a @Job class or a defineJob job', job),
    );
  return readJobDefinition(job).name;
}

/** {@link jobNameOf} for a call that returns a promise: a bad job rejects it instead of throwing. */
export function nameOrRejection(job: string | JobRef): string | Promise<never> {
  try {
    return jobNameOf(job);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** {@link jobNameOf} for the jobs of one `publishMany` call: one metadata read per class, not per job. */
export function jobNameResolver(): (job: string | JobRef) => string {
  const names = new Map<JobRef, string>();
  return (job) => {
    if (typeof job === 'string') return job;
    const known = names.get(job);
    if (known !== undefined) return known;
    const name = jobNameOf(job);
    names.set(job, name);
    return name;
  };
}
