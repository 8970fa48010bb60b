// size-exception: the stable code union grows with each error family (isolates added five); the classes stay one screen each.
import { summarizeIssues } from './validate-payload';
/**
 * Every error warren throws extends {@link WarrenError}. Check with `instanceof` or `code`, never by
 * matching message text: messages are for humans and may change, codes are a stable contract.
 */

/** Stable error codes. Documented on docs/reference/errors.md. */
export type WarrenErrorCode =
  | 'CONFIGURATION_INVALID'
  | 'TOPOLOGY_INVALID'
  | 'TOPOLOGY_CONFLICT'
  | 'CONNECTION_FAILED'
  | 'CONNECTION_LOST'
  | 'PUBLISH_NACKED'
  | 'PUBLISH_UNROUTABLE'
  | 'PUBLISH_TIMEOUT'
  | 'PUBLISH_BUFFER_FULL'
  | 'PUBLISH_UNENCODABLE'
  | 'PUBLISH_TOO_LARGE'
  | 'PUBLISH_REFUSED'
  | 'PUBLISH_INVALID_KEY'
  | 'PUBLISH_MISSING_KEY'
  | 'PAYLOAD_INVALID'
  | 'DECODE_FAILED'
  | 'UNKNOWN_JOB'
  | 'UNKNOWN_SCHEDULE'
  | 'JOB_TIMEOUT'
  | 'CIRCUIT_OPEN'
  | 'IDEMPOTENCY_STORE_FAILED'
  | 'OUTBOX_FAILED'
  | 'SHUTTING_DOWN'
  | 'UNKNOWN_QUEUE'
  | 'MANAGEMENT_NOT_CONFIGURED'
  | 'MANAGEMENT_FAILED'
  | 'JOB_FAILED'
  | 'RESULT_TIMEOUT'
  | 'RESULT_LOST'
  | 'JOB_NOT_CONTROLLABLE'
  | 'JOB_ALREADY_DUE'
  | 'NAMESPACE_IN_USE'
  | 'ISOLATE_HARD_TIMEOUT'
  | 'ISOLATE_MEMORY_LIMIT'
  | 'ISOLATE_CRASHED'
  | 'ISOLATE_UNSERIALIZABLE'
  | 'ISOLATE_LOAD_FAILED'
  | 'MARK_INVALID'
  | 'PARTITION_LOST'
  | 'LIMIT_INVALID'
  | 'DEAD_LETTER_LOG_BUSY';

export interface WarrenErrorContext {
  jobName?: string;
  jobId?: string;
  queue?: string;
  attempt?: number;
  /** The job's position in a `publishMany` call, when the error is about one job of a batch. */
  batchIndex?: number;
}

export class WarrenError extends Error {
  readonly code: WarrenErrorCode;
  readonly jobName?: string;
  readonly jobId?: string;
  readonly queue?: string;
  readonly attempt?: number;
  readonly batchIndex?: number;

  constructor(
    code: WarrenErrorCode,
    message: string,
    options: WarrenErrorContext & { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    if (options.jobName !== undefined) this.jobName = options.jobName;
    if (options.jobId !== undefined) this.jobId = options.jobId;
    if (options.queue !== undefined) this.queue = options.queue;
    if (options.attempt !== undefined) this.attempt = options.attempt;
    if (options.batchIndex !== undefined) this.batchIndex = options.batchIndex;
  }
}

/** Invalid options or declarations; thrown at construction, never at first use. */
export class ConfigurationError extends WarrenError {
  constructor(message: string, options: { cause?: unknown; batchIndex?: number } = {}) {
    super('CONFIGURATION_INVALID', message, options);
  }
}

/** A topology declaration contradicts itself (unknown queue, priority on a quorum queue, ...). */
export class TopologyError extends WarrenError {
  constructor(message: string, options: { queue?: string; jobName?: string } = {}) {
    super('TOPOLOGY_INVALID', message, options);
  }
}

/**
 * The broker already holds an entity of that name with other settings (AMQP 406). warren never
 * deletes and re-creates an entity to make it fit: migrate it explicitly.
 */
export class TopologyConflictError extends WarrenError {
  readonly entity: 'queue' | 'exchange';
  readonly entityName: string;
  readonly declared: Readonly<Record<string, unknown>>;
  readonly brokerReply: string;

  constructor(
    entity: 'queue' | 'exchange',
    entityName: string,
    declared: Record<string, unknown>,
    brokerReply: string,
    cause?: unknown,
  ) {
    super(
      'TOPOLOGY_CONFLICT',
      `${entity} '${entityName}' already exists on the broker with other settings. ` +
        `warren declared ${JSON.stringify(declared)}; the broker answered: ${brokerReply}. ` +
        `Delete or migrate the existing ${entity}, or change the declaration to match it.`,
      { cause, ...(entity === 'queue' ? { queue: entityName } : {}) },
    );
    this.entity = entity;
    this.entityName = entityName;
    this.declared = declared;
    this.brokerReply = brokerReply;
  }
}

/** The broker could not be reached, or the connection was lost. `transient` errors may succeed on retry. */
export class ConnectionError extends WarrenError {
  readonly transient: boolean;
  readonly urls: readonly string[];

  constructor(
    code: 'CONNECTION_FAILED' | 'CONNECTION_LOST',
    message: string,
    options: { urls?: readonly string[]; transient?: boolean; cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.urls = options.urls ?? [];
    this.transient = options.transient ?? true;
  }
}

/**
 * A publish did not reach the broker's confirm: nacked until its deadline, unroutable, timed out, the
 * buffer was full, the message cannot be encoded (headers over amqplib's 64 KiB table limit, a payload
 * too deep or circular for JSON), its body is over a size limit, or the broker closed the channel
 * because of this very message (a `user_id` that is not the connection's user, a body over the
 * broker's `max_message_size`), or its key is not a valid key (`PUBLISH_INVALID_KEY`: not a string, empty,
 * over 255 bytes, or the job's key function threw), or its queue has ordered partitions and it has no key
 * (`PUBLISH_MISSING_KEY`).
 */
export class PublishError extends WarrenError {
  constructor(
    code:
      | 'PUBLISH_NACKED'
      | 'PUBLISH_UNROUTABLE'
      | 'PUBLISH_TIMEOUT'
      | 'PUBLISH_BUFFER_FULL'
      | 'PUBLISH_UNENCODABLE'
      | 'PUBLISH_TOO_LARGE'
      | 'PUBLISH_REFUSED'
      | 'PUBLISH_INVALID_KEY'
      | 'PUBLISH_MISSING_KEY',
    message: string,
    options: WarrenErrorContext & { cause?: unknown } = {},
  ) {
    super(code, message, options);
  }
}

/** A job's payload failed its schema (on publish, or on the worker for jobs published by others). */
export class PayloadValidationError extends WarrenError {
  readonly issues: readonly { message: string; path?: string }[];

  constructor(
    jobName: string,
    issues: readonly { message: string; path?: string }[],
    context: { batchIndex?: number } = {},
  ) {
    const summary = summarizeIssues(issues);
    const what = context.batchIndex === undefined ? 'job' : `job [${context.batchIndex}]`;
    super('PAYLOAD_INVALID', `payload of ${what} '${jobName}' is invalid: ${summary}`, {
      jobName,
      ...context,
    });
    this.issues = issues;
  }
}

/** A delivered message is not a warren job (not JSON, no `type`, ...). */
export class DecodeError extends WarrenError {
  constructor(message: string, options: WarrenErrorContext & { cause?: unknown } = {}) {
    super('DECODE_FAILED', message, options);
  }
}

/** No job of that name is registered (on publish) or handled (on the worker). */
export class UnknownJobError extends WarrenError {
  constructor(
    jobName: string,
    options: { queue?: string; known?: readonly string[]; batchIndex?: number } = {},
  ) {
    const known =
      options.known && options.known.length > 0 ? ` Known jobs: ${options.known.join(', ')}.` : '';
    const where = options.batchIndex === undefined ? '' : `publishMany job [${options.batchIndex}]: `;
    super('UNKNOWN_JOB', `${where}no job named '${jobName}' is registered.${known}`, {
      jobName,
      ...(options.queue ? { queue: options.queue } : {}),
      ...(options.batchIndex === undefined ? {} : { batchIndex: options.batchIndex }),
    });
  }
}

/** No schedule has that id (trigger-now of an id neither code nor the schedule registry declares). */
export class UnknownScheduleError extends WarrenError {
  constructor(
    readonly scheduleId: string,
    readonly known: readonly string[],
  ) {
    const list = known.length > 0 ? ` Known schedules: ${known.join(', ')}.` : '';
    super('UNKNOWN_SCHEDULE', `no schedule has the id '${scheduleId}'.${list}`);
  }
}

/** A job ran longer than its `timeoutMs`; its `ctx.signal` was aborted and the attempt counts as failed. */
export class JobTimeoutError extends WarrenError {
  readonly timeoutMs: number;

  constructor(timeoutMs: number, context: WarrenErrorContext) {
    super('JOB_TIMEOUT', `job '${context.jobName}' timed out after ${timeoutMs} ms`, context);
    this.timeoutMs = timeoutMs;
  }
}

/** A call was refused because the named circuit breaker is open. */
export class CircuitOpenError extends WarrenError {
  readonly breaker: string;

  constructor(breaker: string, options: { cause?: unknown } = {}) {
    super('CIRCUIT_OPEN', `circuit breaker '${breaker}' is open`, options);
    this.breaker = breaker;
  }
}

/**
 * The job's `ctx.signal` aborted because its worker lost the job's partition (docs/guide/ordered-partitions.md):
 * the process froze or lost the broker past its lease, and the partition went to another worker. warren acks
 * nothing of that partition from then on: the job runs again on the new owner.
 */
export class PartitionLostError extends WarrenError {
  /** Full name of the partition queue. */
  readonly partition: string;

  constructor(partition: string, context: WarrenErrorContext = {}) {
    super(
      'PARTITION_LOST',
      `this worker lost partition '${partition}' (its lease ran out); the job runs again on the partition's new owner`,
      context,
    );
    this.partition = partition;
  }
}

/** The instance is closing or closed. */
export class ShutdownError extends WarrenError {
  constructor(message = 'warren is shutting down') {
    super('SHUTTING_DOWN', message);
  }
}

/**
 * An awaited result that did not come: the job failed for good (`JOB_FAILED`, the handler's final
 * error's name and message in `message` and `remoteName`), no answer within the caller's timeout
 * (`RESULT_TIMEOUT`: the job may still run), or the publisher's connection was lost while waiting
 * (`RESULT_LOST`: the answer has nowhere to go).
 */
export class JobResultError extends WarrenError {
  /** For `JOB_FAILED`: the name of the handler's error (`TypeError`, or a WarrenError's class name). */
  readonly remoteName?: string;
  constructor(
    code: 'JOB_FAILED' | 'RESULT_TIMEOUT' | 'RESULT_LOST',
    message: string,
    options: WarrenErrorContext & { cause?: unknown; remoteName?: string } = {},
  ) {
    super(code, message, options);
    if (options.remoteName !== undefined) this.remoteName = options.remoteName;
  }
}

/**
 * A delayed-job action cannot be carried out: `promote` (or moving a job earlier) needs the copy a
 * `controllable` publish stores (`JOB_NOT_CONTROLLABLE`), or the job already came due (`JOB_ALREADY_DUE`).
 */
export class JobControlError extends WarrenError {
  constructor(
    code: 'JOB_NOT_CONTROLLABLE' | 'JOB_ALREADY_DUE',
    message: string,
    options: WarrenErrorContext = {},
  ) {
    super(code, message, options);
  }
}

/** A process of a namespace, as a removal names it: its warren id, host and pid. */
export interface NamespaceProcess {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
}

/**
 * A namespace cannot be removed while other processes of it answer on the control exchange
 * (`NAMESPACE_IN_USE`): they would declare it again. `processes` names them; `force` asks them to stop
 * first, and when some still answer by the deadline (`timedOut`), nothing is deleted.
 */
export class NamespaceInUseError extends WarrenError {
  constructor(
    readonly namespace: string,
    readonly processes: readonly NamespaceProcess[],
    readonly timedOut: boolean,
  ) {
    const names = processes.map((p) => `${p.host}:${p.pid}`).join(', ');
    super(
      'NAMESPACE_IN_USE',
      timedOut
        ? `namespace '${namespace}': ${processes.length} process(es) still answer after being asked to stop (${names}); nothing was deleted`
        : `namespace '${namespace}' is in use by ${processes.length} other process(es) (${names}): stop them, or remove with force to ask them to stop`,
    );
  }
}

/**
 * Per-key limits (`perKeyConcurrency`, `limiter.per`, docs/guide/per-key-limits.md) that cannot hold: a bad
 * value, or a queue that cannot give each key one owner (no partitions, ordered partitions, fairness). Thrown
 * while planning, at `createWarren`, never at first use; and by `ops.limits.set` for a bad override.
 */
export class LimitError extends WarrenError {
  constructor(message: string, context: { jobName?: string; queue?: string } = {}) {
    super('LIMIT_INVALID', message, context);
  }
}
