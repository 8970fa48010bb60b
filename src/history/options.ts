import { checkBoolean, checkInteger } from '../core';

/**
 * The job history (lifecycle event log): a stream of what happened to each job, for `ops.job(id)` and
 * `warren job <id>`. Retention is by age and size (a stream has no count limit), a segment at a time.
 */
export interface HistoryOptions {
  /** Events older than this are dropped, ms. Default 24 hours (BullMQ keeps completed jobs by age or count). */
  readonly maxAgeMs?: number;
  /** The log is cut above this size, bytes. Default 512 MiB. */
  readonly maxBytes?: number;
  /** Segment size, bytes: the unit retention drops. Default 16 MiB. */
  readonly segmentBytes?: number;
  /**
   * Events are written in batches, one stream record per batch: at most this long after the event, ms.
   * Default 200. A process that crashes loses at most this much history (never a job).
   */
  readonly flushMs?: number;
  /** ...or once this many events wait. Default 1000. */
  readonly maxBatch?: number;
  /**
   * Keep each job's payload with its outcome (`completed`, `retrying`, `dead`): the message body's own
   * bytes as text, never serialized again, its first `maxPayloadBytes`. Default true: the history is
   * opt-in, and whoever may read it may read the queues and the dead-letter log, which keep payloads whole;
   * false keeps payloads out of the history (personal data that must not stay for `maxAgeMs`).
   */
  readonly payloads?: boolean;
  /**
   * Keep a completed job's result (what its handler returned, as JSON), its first `maxResultBytes`.
   * Default true; false for results that must not be kept.
   */
  readonly results?: boolean;
  /** A payload longer than this is kept cut to its first bytes, with its full size, bytes. Default 1024. */
  readonly maxPayloadBytes?: number;
  /** A result's JSON longer than this is kept cut to its first bytes, with its full size, bytes. Default 1024. */
  readonly maxResultBytes?: number;
  /**
   * Serve lookups: this process follows the whole history and answers `ops.job(id)` for every process of the
   * namespace from memory (docs/operating/cli.md#a-lookup-server), in about half the time of reading the
   * streams. Default false: following costs this process a read of every batch any process writes. Turn it
   * on in one or two long-running processes (a second stands by).
   */
  readonly serveLookups?: boolean;
  /**
   * A lookup server keeps the newest batches whole up to this size, so a lookup of a recent job reads
   * nothing; older ones are read from the stream at their offsets, bytes. Default 64 MiB.
   */
  readonly lookupCacheBytes?: number;
}

export const HISTORY_DEFAULTS = Object.freeze({
  maxAgeMs: 24 * 3600_000,
  maxBytes: 512 * 1024 ** 2,
  segmentBytes: 16 * 1024 ** 2,
  flushMs: 200,
  maxBatch: 1000,
  payloads: true,
  results: true,
  maxPayloadBytes: 1024,
  maxResultBytes: 1024,
  serveLookups: false,
  lookupCacheBytes: 64 * 1024 ** 2,
});

/** The largest payload or result a history event may keep, bytes (readers accept text up to this). */
export const MAX_HISTORY_VALUE_BYTES = 65_536;

export type ResolvedHistoryOptions = Readonly<Required<HistoryOptions>>;

export function resolveHistoryOptions(input: HistoryOptions = {}, path = 'history'): ResolvedHistoryOptions {
  const d = HISTORY_DEFAULTS;
  const maxBytes = checkInteger(`${path}.maxBytes`, input.maxBytes ?? d.maxBytes, 1);
  return Object.freeze({
    maxAgeMs: checkInteger(`${path}.maxAgeMs`, input.maxAgeMs ?? d.maxAgeMs, 1000),
    maxBytes,
    segmentBytes: checkInteger(
      `${path}.segmentBytes`,
      input.segmentBytes ?? Math.min(d.segmentBytes, maxBytes),
      1,
      maxBytes,
    ),
    flushMs: checkInteger(`${path}.flushMs`, input.flushMs ?? d.flushMs, 1, 60_000),
    maxBatch: checkInteger(`${path}.maxBatch`, input.maxBatch ?? d.maxBatch, 1, 100_000),
    payloads: checkBoolean(`${path}.payloads`, input.payloads ?? d.payloads),
    results: checkBoolean(`${path}.results`, input.results ?? d.results),
    maxPayloadBytes: checkInteger(
      `${path}.maxPayloadBytes`,
      input.maxPayloadBytes ?? d.maxPayloadBytes,
      1,
      MAX_HISTORY_VALUE_BYTES,
    ),
    maxResultBytes: checkInteger(
      `${path}.maxResultBytes`,
      input.maxResultBytes ?? d.maxResultBytes,
      1,
      MAX_HISTORY_VALUE_BYTES,
    ),
    serveLookups: checkBoolean(`${path}.serveLookups`, input.serveLookups ?? d.serveLookups),
    lookupCacheBytes: checkInteger(
      `${path}.lookupCacheBytes`,
      input.lookupCacheBytes ?? d.lookupCacheBytes,
      0,
    ),
  });
}
