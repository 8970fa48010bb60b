/**
 * warren's header names: the one place they are spelled. They carry no `x-` prefix because the broker
 * owns `x-`. Part of the wire format contract (docs/reference/wire-format.md).
 *
 * - `warren-attempt`      1 for the first run, incremented on every retry.
 * - `warren-enqueued-at`  ms since epoch when the job was first published (kept across retries).
 * - `warren-deliver-at`   ms since epoch before which the job must not run (delays longer than the
 *                         delay levels' range re-enter the levels until then).
 * - `warren-max-attempts` per-publish override of the job's attempts.
 * - `warren-redeliveries` on classic queues: how often the broker redelivered this job (crash loops).
 * - `warren-dead-reason`, `warren-last-error`, `warren-dead-at`, `warren-queue`: on dead letters.
 * - `warren-log-kind`     on a dead-letter log record: `letter` (a dead letter) or `marker` (replayed or
 *                         purged letters, by offset).
 * - `warren-replay-of`    on a replayed job: the log offset of the letter it was replayed from.
 * - `warren-replays`      on a replayed job: how many times it has been replayed.
 * - `warren-reply-to`    the publisher's direct reply-to address, moved here from `reply_to` when the
 *                         job is republished (a retry must not carry `reply_to`: docs/guide/results.md).
 * - `warren-dedup`       1 on a job published with `deduplicate`: the worker releases its id when it ends.
 * - `warren-delayed`     on a delayed publish: its due time (ms since epoch). A job carrying it is checked
 *                         against the job-control records when it comes due (docs/guide/job-control.md); other jobs are never looked up.
 * - `warren-control-copy` on the copy a promote or reschedule publishes: the control record that made it,
 *                         so that the copy runs while the original is dropped.
 * - `warren-proof`       on a record of warren's own streams and control messages, when a signing key is
 *                         configured: `1.<key id>.<writer id>.<seq>.<mac>` (docs/reference/trust.md).
 * - `warren-event`       on a message of the live job events exchange: `event` (a job event), `interest` (a
 *                         subscriber's filter) or `hello` (a publisher that just connected); with
 *                         `warren-job-id`, `warren-job-name` and `warren-queue` (the queue key) on an event,
 *                         the headers a subscriber's binding matches (docs/guide/events.md).
 * - `warren-key`         the job's key (tenant, account, document): a non-empty string of at most 255 UTF-8
 *                         bytes. A queue with `fairness` schedules by it (docs/guide/fair-share.md).
 * - `warren-limited`     on a job re-delayed because its key was at a per-key limit: `concurrency` or `rate`
 *                         (docs/guide/per-key-limits.md). Its attempt is unchanged: waiting spends none.
 * - `traceparent`, `tracestate`  W3C trace context: the publisher's span (warren/observability sets them;
 *                         a foreign publisher may), passed through untouched on retries and delays.
 * - `warren-trace-link`   W3C traceparent of the span before this run (the previous attempt, or the
 *                         publish of a delayed job): the next run's span links to it (or, with
 *                         `traces: 'keep'`, continues it).
 */
export const HEADERS = {
  attempt: 'warren-attempt',
  enqueuedAt: 'warren-enqueued-at',
  deliverAt: 'warren-deliver-at',
  maxAttempts: 'warren-max-attempts',
  redeliveries: 'warren-redeliveries',
  deadReason: 'warren-dead-reason',
  lastError: 'warren-last-error',
  deadAt: 'warren-dead-at',
  queue: 'warren-queue',
  logKind: 'warren-log-kind',
  replayOf: 'warren-replay-of',
  replays: 'warren-replays',
  replyTo: 'warren-reply-to',
  dedup: 'warren-dedup',
  delayed: 'warren-delayed',
  controlCopy: 'warren-control-copy',
  debounce: 'warren-debounce',
  proof: 'warren-proof',
  /** On a record of the history's index: which append it belongs to, while its writer learns its offset. */
  indexAppend: 'warren-index-append',
  /** On a history batch: the hashes of the job ids it holds events of (history/index-state.ts). */
  indexKeys: 'warren-index-keys',
  /** On an empty history batch a lookup server appends: its token, seen back when it has read that far. */
  lookupMarker: 'warren-lookup-marker',
  event: 'warren-event',
  jobId: 'warren-job-id',
  jobName: 'warren-job-name',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  traceLink: 'warren-trace-link',
  key: 'warren-key',
  limited: 'warren-limited',
} as const;

/** Broker-owned headers that must never be copied onto a republished message (DESIGN: cycle detection). */
export const BROKER_DEATH_HEADERS = [
  'x-death',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-first-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
  'x-last-death-exchange',
  'x-delivery-count',
] as const;

/**
 * RabbitMQ's sender-selected distribution headers: a message carrying them is copied into the queues they
 * name as it is published. Never passed on by a republish, a replay or a copy warren publishes.
 */
export const SENDER_ROUTING_HEADERS = ['CC', 'BCC'] as const;

/** Why a job is in dead letters. */
export type DeadReason =
  | 'attempts-exhausted'
  | 'unrecoverable'
  /** A routing slip's compensation used up its attempts; the slip is parked here. */
  | 'compensation-failed'
  | 'undecodable'
  | 'unknown-job'
  | 'invalid-payload'
  | 'delivery-limit'
  | 'expired'
  | 'rejected'
  /** The job's `type` names a job declared on another queue. */
  | 'wrong-queue'
  /** A job in an ordered partition without a valid `warren-key`: it has no order to keep. */
  | 'missing-key'
  /** A job in an ordered partition its key does not hash to: run there it could overtake its key's jobs. */
  | 'wrong-partition'
  /** The body is over `worker.maxBodyBytes`; it was not parsed. */
  | 'too-large'
  /** A `warren-*` control header is not an integer, or out of range (docs/reference/trust.md). */
  | 'invalid-headers'
  /** The broker refused every republish of this message (a retry or re-delay it closed the channel for). */
  | 'unrepublishable'
  /** An isolated job's payload or result cannot cross to or from its isolate (structured clone refuses it). */
  | 'unserializable';

/** Keeps `warren-last-error` well below amqplib's 64 KiB header-table limit. */
export const LAST_ERROR_MAX_CHARS = 4000;

export const JSON_CONTENT_TYPE = 'application/json';
