import { checkInteger, checkKnownKeys, ConfigurationError, type JobDefinition } from '../core';
import { BROKER_CONSUMER_TIMEOUT_MS } from './isolate-settings';

/** A batch job's settings, resolved once at createWarren (docs/guide/batch-and-debounce.md). */
export interface BatchSettings {
  readonly size: number;
  readonly timeoutMs: number;
}

export const BATCH_DEFAULTS = Object.freeze({
  /** Jobs per batch: Oban Pro's Chunk default, about where one multi-row INSERT stops getting cheaper per row. */
  size: 100,
  /** How long the oldest job waits for its batch to fill, ms. */
  timeoutMs: 1_000,
});

/**
 * The job options a batch does not compose with yet, each with the reason createWarren gives (a queue's
 * `fairness` and its ordered `partitions` are refused by {@link checkBatchQueue}).
 */
const REFUSED_WITH_BATCH = {
  isolate:
    'an isolate runs one job at a time in its thread or process, and a batch is one handleBatch call over many deliveries in the main process; run the CPU-heavy part of the batch in your own worker_threads, or drop batch',
} as const satisfies Partial<Record<keyof JobDefinition, string>>;

/**
 * The batch settings of a job, or undefined without `batch`. `timeoutMs` is the job's resolved timeout:
 * the oldest job of a batch holds its delivery for the batch's wait and then the run, and both together
 * must end before the broker's consumer_timeout, or the broker closes the channel mid-batch (RabbitMQ
 * before 3.12 ignores warren's per-consumer timeout). Throws a ConfigurationError for an unknown key, a
 * size or wait that is not a positive integer, or a feature a batch does not compose with.
 */
export function resolveBatchSettings(
  definition: JobDefinition,
  resolved: { readonly timeoutMs: number },
): BatchSettings | undefined {
  const { batch } = definition;
  if (batch === undefined) return undefined;
  const path = `@Job('${definition.name}').batch`;
  if (batch === null || typeof batch !== 'object')
    throw new ConfigurationError(`${path} must be { size, timeoutMs } (got ${JSON.stringify(batch)})`);
  checkKnownKeys(path, batch, { size: true, timeoutMs: true });
  const size = checkInteger(`${path}.size`, batch.size ?? BATCH_DEFAULTS.size, 1);
  const timeoutMs = checkInteger(`${path}.timeoutMs`, batch.timeoutMs ?? BATCH_DEFAULTS.timeoutMs, 1);
  for (const [option, reason] of Object.entries(REFUSED_WITH_BATCH))
    if (definition[option as keyof typeof REFUSED_WITH_BATCH] !== undefined)
      throw new ConfigurationError(`@Job('${definition.name}') sets both batch and ${option}: ${reason}`);
  if (timeoutMs + resolved.timeoutMs >= BROKER_CONSUMER_TIMEOUT_MS)
    throw new ConfigurationError(
      `@Job('${definition.name}'): batch.timeoutMs (${timeoutMs}) plus the job's timeoutMs (${resolved.timeoutMs}) must stay below the broker's consumer_timeout (${BROKER_CONSUMER_TIMEOUT_MS} ms by default): the oldest job of a batch waits for the batch, then for its run, unacked; lower either`,
    );
  return Object.freeze({ size, timeoutMs });
}

/**
 * A queue's prefetch must hold a full batch of each batch job consumed from it, or a batch never fills
 * and every job waits the whole `timeoutMs`.
 */
export function checkBatchPrefetch(
  jobs: Iterable<{
    readonly planned: JobDefinition & { readonly queueName: string };
    readonly batch?: BatchSettings | undefined;
  }>,
  prefetchOf: (queueName: string) => number,
): void {
  for (const { planned, batch } of jobs) {
    if (batch === undefined) continue;
    const prefetch = prefetchOf(planned.queueName);
    if (prefetch < batch.size)
      throw new ConfigurationError(
        `@Job('${planned.name}').concurrency (the prefetch of queue '${planned.queue}', ${prefetch}) is below its batch.size (${batch.size}): the broker would never hand over a full batch; leave concurrency unset (twice the size) or set it to a multiple of the size`,
      );
  }
}

/**
 * A batch job may not be consumed from a queue with fairness (docs/guide/fair-share.md) or with ordered
 * partitions (one call over many keys' jobs undoes their order). With fairness, the consumer
 * schedules deliveries across the lanes one job at a time, and a batch that gathers `size` of them
 * across lanes would take a heavy key's share in one go and hold the light keys' slots for its wait.
 */
export function checkBatchQueue(
  name: string,
  batch: BatchSettings | undefined,
  queue: { readonly key: string; readonly fairness?: unknown; readonly partitions?: unknown } | undefined,
): void {
  if (batch === undefined || queue === undefined) return;
  if (queue.partitions !== undefined)
    throw new ConfigurationError(
      `@Job('${name}') sets batch, and its queue '${queue.key}' has ordered partitions: a batch runs the jobs of many keys as one call, out of their per-key order (docs/guide/ordered-partitions.md). Batch jobs need a queue without partitions`,
    );
  if (queue.fairness === undefined) return;
  throw new ConfigurationError(
    `@Job('${name}') sets batch, and its queue '${queue.key}' has fairness: fair share schedules deliveries across the lanes one job at a time, and a batch gathering ${batch.size} of them across lanes would undo it (a heavy key takes a batch's worth of the prefetch at once). Batch jobs need a queue without fairness, for now`,
  );
}
