import { checkInteger, checkKnownKeys } from '../core';

/**
 * The queue aggregates (docs/guide/aggregates.md): what each worker process counts per job queue per
 * bucket of time (completed, failed, retried, dead-lettered, wait and run times, depth, oldest waiting
 * job), appended to streams of the namespace for the dashboard's graphs. Three levels: buckets, hours (60
 * buckets) and days (1440 buckets), each its own stream with its own retention, so a graph reads at most
 * a few hundred records per process whatever its range.
 */
export interface AggregatesOptions {
  /**
   * The bucket length, ms: every process closes its bucket when the wall clock passes a multiple of it
   * (aligned on the epoch, so processes whose clocks differ by a few seconds write the same buckets).
   * Default 60 000 (a minute); seconds in tests. An hour is 60 buckets, a day 1440.
   */
  readonly bucketMs?: number;
  /** Bucket records older than this are dropped, ms. Default 26 hours (the day graph reads hours). */
  readonly bucketMaxAgeMs?: number;
  /** Hour records older than this are dropped, ms. Default 8 days (the week graph). */
  readonly hourMaxAgeMs?: number;
  /** Day records older than this are dropped, ms. Default 400 days. */
  readonly dayMaxAgeMs?: number;
  /** Each of the three streams is cut above this size, bytes. Default 256 MiB. */
  readonly maxBytes?: number;
  /** Segment size, bytes: the unit retention drops. Default 8 MiB. */
  readonly segmentBytes?: number;
}

export const AGGREGATES_DEFAULTS = Object.freeze({
  bucketMs: 60_000,
  bucketMaxAgeMs: 26 * 3_600_000,
  hourMaxAgeMs: 8 * 24 * 3_600_000,
  dayMaxAgeMs: 400 * 24 * 3_600_000,
  maxBytes: 256 * 1024 ** 2,
  segmentBytes: 8 * 1024 ** 2,
});

const KNOWN_KEYS = Object.freeze(
  Object.fromEntries(Object.keys(AGGREGATES_DEFAULTS).map((key) => [key, true as const])),
);

export type ResolvedAggregatesOptions = Readonly<Required<AggregatesOptions>>;

/** The levels an aggregate is kept at, each in its own stream; `hour` is 60 buckets, `day` 1440. */
export const AGGREGATE_LEVELS = ['bucket', 'hour', 'day'] as const;
export type AggregateLevel = (typeof AGGREGATE_LEVELS)[number];
const BUCKETS_PER: { readonly [L in AggregateLevel]: number } = { bucket: 1, hour: 60, day: 1440 };

/** A level's length, ms. */
export function levelMs(options: Pick<ResolvedAggregatesOptions, 'bucketMs'>, level: AggregateLevel): number {
  return options.bucketMs * BUCKETS_PER[level];
}

export function resolveAggregatesOptions(
  input: AggregatesOptions = {},
  path = 'aggregates',
): ResolvedAggregatesOptions {
  checkKnownKeys(path, input, KNOWN_KEYS);
  const d = AGGREGATES_DEFAULTS;
  const maxBytes = checkInteger(`${path}.maxBytes`, input.maxBytes ?? d.maxBytes, 1);
  return Object.freeze({
    bucketMs: checkInteger(`${path}.bucketMs`, input.bucketMs ?? d.bucketMs, 1000, 3_600_000),
    bucketMaxAgeMs: checkInteger(`${path}.bucketMaxAgeMs`, input.bucketMaxAgeMs ?? d.bucketMaxAgeMs, 1000),
    hourMaxAgeMs: checkInteger(`${path}.hourMaxAgeMs`, input.hourMaxAgeMs ?? d.hourMaxAgeMs, 1000),
    dayMaxAgeMs: checkInteger(`${path}.dayMaxAgeMs`, input.dayMaxAgeMs ?? d.dayMaxAgeMs, 1000),
    maxBytes,
    segmentBytes: checkInteger(
      `${path}.segmentBytes`,
      input.segmentBytes ?? Math.min(d.segmentBytes, maxBytes),
      1,
      maxBytes,
    ),
  });
}

/** A level's stream retention, as the plan takes it. */
export function levelRetention(
  options: ResolvedAggregatesOptions,
  level: AggregateLevel,
): { maxAgeMs: number; maxBytes: number; segmentBytes: number } {
  const maxAgeMs =
    level === 'bucket'
      ? options.bucketMaxAgeMs
      : level === 'hour'
        ? options.hourMaxAgeMs
        : options.dayMaxAgeMs;
  return { maxAgeMs, maxBytes: options.maxBytes, segmentBytes: options.segmentBytes };
}
