import { DecodeError, MAX_DELAY_MS } from '../core';
import { deliveredKey, HEADERS, laneOf, type DeadReason, type DecodedJob } from '../message';
import type { PlannedJobQueue } from '../topology';
import type { RegisteredJob } from './registered-job';

const DAY_MS = 86_400_000;

/** Why a decoded delivery may not run: its dead-letter reason and the error that says why. */
export interface Refusal {
  readonly reason: DeadReason;
  readonly error: DecodeError;
}

/**
 * What warren trusts of a delivery's control headers (docs/reference/trust.md): the job must be
 * declared on the queue it came from (a job of queue B put into queue A would bypass B's concurrency,
 * limits and permissions), and `warren-*` values must be integers in range. `warren-max-attempts` can
 * lower the job's attempts, never raise them; an attempt past the maximum is clamped to the last one;
 * `warren-attempt: 0` and a `warren-deliver-at` more than MAX_DELAY_MS ahead are refused.
 */
export function checkDelivery(
  job: DecodedJob,
  registered: RegisteredJob,
  queue: Pick<PlannedJobQueue, 'name' | 'key' | 'lane'>,
  now: number,
): Refusal | DecodedJob {
  const context = { jobName: job.name, jobId: job.jobId, queue: queue.key };
  if (registered.planned.queueName !== (queue.lane?.of ?? queue.name)) {
    const error = new DecodeError(
      `job '${job.name}' belongs to queue '${registered.planned.queue}', ` +
        `not to '${queue.key}' it was delivered from`,
      context,
    );
    return { reason: 'wrong-queue', error };
  }
  const lane = queue.lane;
  if (lane?.ordered) {
    // a foreign publisher's mistake: warren's own publisher refuses a keyless job and hashes the key itself
    const key = deliveredKey(job.headers);
    if (key === undefined)
      return {
        reason: 'missing-key',
        error: new DecodeError(
          'a job of ordered partitions needs a warren-key header (1 to 255 bytes of UTF-8): without a key it has no order to keep',
          context,
        ),
      };
    const index = laneOf(key, lane.count);
    if (index !== lane.index)
      return {
        reason: 'wrong-partition',
        error: new DecodeError(
          `key '${key}' belongs to partition ${index} of ${lane.count}, not to partition ${lane.index} it was delivered from (fnv1a32(key) mod ${lane.count})`,
          context,
        ),
      };
  }
  const problems = [...job.headerProblems];
  if (job.headers[HEADERS.attempt] !== undefined && job.attempt < 1)
    problems.push(`warren-attempt must be >= 1 (got ${job.attempt})`);
  if (job.maxAttempts !== undefined && job.maxAttempts < 1)
    problems.push(`warren-max-attempts must be >= 1 (got ${job.maxAttempts})`);
  if (job.deliverAt !== undefined && job.deliverAt > now + MAX_DELAY_MS)
    problems.push(
      `warren-deliver-at is ${Math.round((job.deliverAt - now) / DAY_MS)} days ahead, ` +
        `more than the longest delay (${MAX_DELAY_MS / DAY_MS} days)`,
    );
  if (problems.length > 0)
    return {
      reason: 'invalid-headers',
      error: new DecodeError(`forged control headers: ${problems.join('; ')}`, context),
    };
  const maxAttempts = Math.min(job.maxAttempts ?? registered.attempts, registered.attempts);
  return { ...job, maxAttempts, attempt: Math.min(job.attempt, maxAttempts) };
}

export function isRefusal(value: Refusal | DecodedJob): value is Refusal {
  return 'reason' in value;
}
