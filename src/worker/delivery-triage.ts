import type * as amqp from 'amqplib';
import { DecodeError, UnknownJobError } from '../core';
import type { ClaimResult } from '../idempotency';
import { decodeJob, HEADERS, type DeadReason, type DecodedJob } from '../message';
import type { PlannedJobQueue } from '../topology';
import { checkDelivery, isRefusal } from './delivery-checks';
import type { RegisteredJob } from './registered-job';

/** Classic queues: a redelivered job re-enters its queue after this many ms times its redelivery count. */
const REDELIVERY_BACKOFF_MS = 1_000;
/** The longest wait of a redelivered job before it re-enters its queue. */
const REDELIVERY_BACKOFF_MAX_MS = 10_000;

/**
 * A delivery that does not run now: dead-lettered with its reason, or sent back through the delay levels
 * (with `headers` changed) to come back in `delayMs`. The worker carries it out (JobProcessor).
 */
export type DeliveryVerdict =
  | {
      readonly action: 'dead-letter';
      readonly reason: DeadReason;
      readonly error: Error;
      readonly job: DecodedJob | undefined;
    }
  | {
      readonly action: 'redelay';
      readonly delayMs: number;
      readonly headers: Record<string, unknown> | undefined;
      readonly job: DecodedJob;
    };

/** What triage needs of a delivery: a Delivery, or any message and queue (the unit tests). */
export interface TriagedDelivery {
  readonly message: Pick<amqp.Message, 'content' | 'properties'>;
  readonly queue: Pick<PlannedJobQueue, 'name' | 'key'>;
}

/** What triage checks a delivery against: the jobs this worker runs and the largest body it parses. */
export interface TriageRules {
  readonly jobs: ReadonlyMap<string, RegisteredJob>;
  /** `worker.maxBodyBytes`. */
  readonly maxBodyBytes: number;
}

/**
 * What to do with a delivery before anything stateful is asked (job control, permits, idempotency): a body
 * over `maxBodyBytes` is `too-large` unparsed, one that does not decode is `undecodable`, a job no handler
 * of this worker knows is `unknown-job`, forged control headers or the wrong queue are refused
 * (checkDelivery), and a job due later than `now` is re-delayed. Otherwise the decoded job itself, with its
 * attempts clamped: on the hot path this allocates nothing beyond decoding.
 */
export function triageDelivery(
  delivery: TriagedDelivery,
  rules: TriageRules,
  now: number,
): DeliveryVerdict | DecodedJob {
  const { message, queue } = delivery;
  const { jobs, maxBodyBytes } = rules;
  if (message.content.length > maxBodyBytes) {
    const error = new DecodeError(
      `body of ${message.content.length} bytes is over worker.maxBodyBytes (${maxBodyBytes}); not parsed`,
      { queue: queue.key },
    );
    return { action: 'dead-letter', reason: 'too-large', error, job: undefined };
  }
  let decoded: DecodedJob;
  try {
    decoded = decodeJob(message, now);
  } catch (error) {
    return { action: 'dead-letter', reason: 'undecodable', error: error as Error, job: undefined };
  }
  const registered = jobs.get(decoded.name);
  if (registered === undefined) {
    const error = new UnknownJobError(decoded.name, { queue: queue.key, known: [...jobs.keys()] });
    return { action: 'dead-letter', reason: 'unknown-job', error, job: decoded };
  }
  const checked = checkDelivery(decoded, registered, queue, now);
  if (isRefusal(checked))
    return { action: 'dead-letter', reason: checked.reason, error: checked.error, job: decoded };
  // Delays longer than one pass through the levels carry their due time and re-enter the levels.
  if (checked.deliverAt !== undefined && checked.deliverAt > now)
    return { action: 'redelay', delayMs: checked.deliverAt - now, headers: undefined, job: checked };
  return checked;
}

export function isVerdict(value: DeliveryVerdict | DecodedJob): value is DeliveryVerdict {
  return 'action' in value;
}

/**
 * A job a classic queue redelivered (its worker crashed or lost its channel before settling it): counted
 * in `warren-redeliveries` and re-delayed by a growing backoff, or dead-lettered `delivery-limit` once the
 * count reaches `redeliveryLimit`. The wait gives the original's ack time to reach the broker before a
 * crash-looping job can take the process down again.
 */
export function decideRedelivery(job: DecodedJob, redeliveryLimit: number): DeliveryVerdict {
  const count = job.redeliveries + 1;
  if (count >= redeliveryLimit) {
    const error = new Error(
      `delivered ${count + 1} times without being settled (the worker crashed or lost its channel each time)`,
    );
    return { action: 'dead-letter', reason: 'delivery-limit', error, job };
  }
  const delayMs = Math.min(REDELIVERY_BACKOFF_MS * count, REDELIVERY_BACKOFF_MAX_MS);
  return { action: 'redelay', delayMs, headers: { [HEADERS.redeliveries]: count }, job };
}

/**
 * What an idempotency claim means for the delivery: run it, ack it unrun (a duplicate of a completed job),
 * or re-delay it while another worker holds the claim (never sooner than one delay unit).
 */
export function decideClaim(claim: ClaimResult, delayUnitMs: number): 'run' | 'duplicate' | number {
  if (claim.status === 'claimed') return 'run';
  if (claim.status === 'completed') return 'duplicate';
  return Math.max(delayUnitMs, claim.retryInMs);
}
