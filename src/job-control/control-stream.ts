import { MAX_DELAY_MS } from '../core';
import type { StreamRetention } from '../topology';

/**
 * The job-control stream as the topology plans it, and what its readers must allow for. Its name comes
 * from topology naming (`<namespace>.warren.job-control`); the plan declares it with this retention.
 */

/** A record older than the longest delay can no longer meet its job: the stream keeps a day more. */
export const CONTROL_RETENTION_MS = MAX_DELAY_MS + 24 * 3_600_000;

/** The job-control stream's retention, planned with the topology: 1 GiB in 16 MiB segments. */
export const JOB_CONTROL_RETENTION: StreamRetention = Object.freeze({
  maxAgeMs: CONTROL_RETENTION_MS,
  maxBytes: 2 ** 30,
  segmentBytes: 2 ** 24,
});

/**
 * A process's first read ahead waits this long, ms, for a stream another process may still be creating
 * (RabbitMQ 3.10 takes 4–10 ms here; see JobControl.readAhead).
 */
export const READ_AHEAD_SETTLE_MS = 1000;
