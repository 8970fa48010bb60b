import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isAbsolute } from 'node:path';
import {
  checkInteger,
  checkKnownKeys,
  checkOneOf,
  ConfigurationError,
  type IsolateKind,
  type JobDefinition,
} from '../core';

/** An isolated job's settings, resolved once at createWarren (docs/guide/isolated-processors.md). */
export interface IsolateSettings {
  readonly kind: IsolateKind;
  /** The processor module as import() takes it: a file URL. */
  readonly processor: string;
  /** When `ctx.signal` aborts inside the isolate, ms after the job started there. */
  readonly timeoutMs: number;
  /** When the isolate is killed (`hard-timeout`), ms after the job started there. */
  readonly hardTimeoutMs: number;
  readonly memoryLimitMb: number | undefined;
  readonly recycleJobs: number | undefined;
  readonly recycleMb: number | undefined;
  readonly size: number;
  readonly warm: number;
  readonly idleMs: number;
}

export const ISOLATE_DEFAULTS = Object.freeze({
  /** Isolates kept started: one, so that `start()` proves the processor loads and the first job waits for none. */
  warm: 1,
  /** An isolate idle this long beyond the warm minimum stops, ms. */
  idleMs: 30_000,
});

/**
 * The broker's default `consumer_timeout` (30 min): RabbitMQ before 3.12 ignores the per-consumer
 * `x-consumer-timeout` warren sets, so an isolated job must be killed before the broker closes the channel.
 */
export const BROKER_CONSUMER_TIMEOUT_MS = 30 * 60_000;

const ISOLATE_KEYS = ['processor', 'hardTimeoutMs', 'memoryLimitMb', 'recycleAfter', 'pool'] as const;

/**
 * The isolate settings of a job, or undefined for an inline job; a job's `timeoutMs` and `concurrency`
 * are already resolved (its definition over the warren's `jobDefaults`). Throws a ConfigurationError for an
 * isolate option without `isolate`, a missing or relative `processor`, a `hardTimeoutMs` below
 * `timeoutMs` or at the broker's consumer timeout.
 */
export function resolveIsolateSettings(
  definition: JobDefinition,
  resolved: { readonly timeoutMs: number; readonly concurrency: number; readonly isTimeoutSet: boolean },
  cores: number = availableParallelism(),
): IsolateSettings | undefined {
  const path = `@Job('${definition.name}')`;
  if (definition.isolate === undefined) {
    const stray = ISOLATE_KEYS.find((key) => definition[key] !== undefined);
    if (stray !== undefined)
      throw new ConfigurationError(
        `${path}.${stray} needs ${path}.isolate ('thread' or 'process'): without it the handler runs inline`,
      );
    return undefined;
  }
  const kind = checkOneOf(`${path}.isolate`, definition.isolate, ['thread', 'process']);
  const processor = processorUrl(path, definition.processor);
  const hardTimeoutMs = checkInteger(
    `${path}.hardTimeoutMs`,
    definition.hardTimeoutMs ?? resolved.timeoutMs,
    1,
  );
  // timeoutMs left to its default follows a hard timeout given below it: the kill is the timeout
  const timeoutMs = resolved.isTimeoutSet ? resolved.timeoutMs : Math.min(resolved.timeoutMs, hardTimeoutMs);
  if (hardTimeoutMs < timeoutMs)
    throw new ConfigurationError(
      `${path}.hardTimeoutMs must be >= its timeoutMs (${timeoutMs} ms), which aborts ctx.signal before the isolate is killed (got ${hardTimeoutMs})`,
    );
  if (hardTimeoutMs >= BROKER_CONSUMER_TIMEOUT_MS)
    throw new ConfigurationError(
      `${path}.hardTimeoutMs must be below the broker's consumer_timeout (${BROKER_CONSUMER_TIMEOUT_MS} ms by default; RabbitMQ before 3.12 ignores warren's per-consumer timeout), or the broker closes the channel first (got ${hardTimeoutMs})`,
    );
  const memoryLimitMb =
    definition.memoryLimitMb === undefined
      ? undefined
      : checkInteger(`${path}.memoryLimitMb`, definition.memoryLimitMb, 16);
  const recycle = definition.recycleAfter ?? {};
  checkKnownKeys(`${path}.recycleAfter`, recycle, { jobs: true, rssMb: true });
  const pool = definition.pool ?? {};
  checkKnownKeys(`${path}.pool`, pool, { size: true, warm: true, idleMs: true });
  const size = checkInteger(`${path}.pool.size`, pool.size ?? Math.min(resolved.concurrency, cores), 1);
  const warm = checkInteger(`${path}.pool.warm`, pool.warm ?? Math.min(ISOLATE_DEFAULTS.warm, size), 0);
  if (warm > size)
    throw new ConfigurationError(`${path}.pool.warm must be <= pool.size (${size}) (got ${warm})`);
  return Object.freeze({
    kind,
    processor,
    timeoutMs,
    hardTimeoutMs,
    memoryLimitMb,
    recycleJobs:
      recycle.jobs === undefined ? undefined : checkInteger(`${path}.recycleAfter.jobs`, recycle.jobs, 1),
    recycleMb:
      recycle.rssMb === undefined ? undefined : checkInteger(`${path}.recycleAfter.rssMb`, recycle.rssMb, 1),
    size,
    warm,
    idleMs: checkInteger(`${path}.pool.idleMs`, pool.idleMs ?? ISOLATE_DEFAULTS.idleMs, 1),
  });
}

function processorUrl(path: string, processor: JobDefinition['processor']): string {
  if (processor instanceof URL || (typeof processor === 'string' && processor.startsWith('file:'))) {
    const url = new URL(String(processor));
    if (url.protocol !== 'file:')
      throw new ConfigurationError(
        `${path}.processor must be a file: URL or an absolute path (got ${url.href})`,
      );
    fileURLToPath(url); // throws on a malformed file URL
    return url.href;
  }
  if (typeof processor !== 'string' || !isAbsolute(processor))
    throw new ConfigurationError(
      `${path}.processor must name the module the isolate imports, as an absolute path (require.resolve('./my-processor')) or a file: URL (got ${JSON.stringify(processor)})`,
    );
  return pathToFileURL(processor).href;
}
