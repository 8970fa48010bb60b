import {
  checkBackoff,
  checkInteger,
  type BackoffOptions,
  type JobDefinition,
  type ResolvedJobDefaults,
} from '../core';

/** A job's run settings once every level is merged. */
export interface JobSettings {
  readonly attempts: number;
  readonly backoff: BackoffOptions;
  readonly timeoutMs: number;
  readonly concurrency: number;
}

/**
 * The precedence of a job's run settings below the publish call: the job definition (`@Job` options)
 * over the warren's `jobDefaults`, which `resolveJobDefaults` already merged over JOB_DEFAULTS. A value
 * the definition sets is checked here, naming `@Job('<name>')`. Per-call options come later: a
 * publish's `priority` and `timeoutMs` in the publisher, its `attempts` (which can only lower the job's)
 * in the worker's delivery checks.
 */
export function resolveJobSettings(
  definition: Pick<JobDefinition, 'name' | 'attempts' | 'backoff' | 'timeoutMs' | 'concurrency'>,
  defaults: ResolvedJobDefaults,
): JobSettings {
  const path = `@Job('${definition.name}')`;
  return {
    attempts: checkInteger(`${path}.attempts`, definition.attempts ?? defaults.attempts, 1),
    backoff: checkBackoff(`${path}.backoff`, definition.backoff ?? defaults.backoff),
    timeoutMs: checkInteger(`${path}.timeoutMs`, definition.timeoutMs ?? defaults.timeoutMs, 1),
    concurrency: definition.concurrency ?? defaults.concurrency,
  };
}

/**
 * A queue's prefetch: the largest concurrency of the jobs this process runs from it. A batch job's
 * concurrency defaults to twice its batch size: one batch running while the next fills.
 */
export function queueConcurrency(
  jobs: Iterable<{
    readonly planned: Pick<JobDefinition, 'concurrency'> & { readonly queueName: string };
    readonly batch?: { readonly size: number } | undefined;
  }>,
  queueName: string,
  defaults: ResolvedJobDefaults,
): number {
  return Math.max(
    ...[...jobs]
      .filter((job) => job.planned.queueName === queueName)
      .map(
        (job) =>
          job.planned.concurrency ?? (job.batch !== undefined ? 2 * job.batch.size : defaults.concurrency),
      ),
  );
}
