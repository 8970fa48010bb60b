import type { ConfirmPublisher, ConnectionManager } from '../connection';
import type { Logger } from '../core';
import { DeadLetterLog, resolveDeadLetterLogOptions, type DeadLetterLogOptions } from '../dead-letter-log';
import type { RecordTrust } from '../records';
import { isDeclaredJobQueue, requireStream, type TopologyPlan } from '../topology';

/** `createWarren({ deadLetterLog })`: the log's retention, and whether this process feeds it. */
export interface WarrenDeadLetterLogOptions extends DeadLetterLogOptions {
  /**
   * Move dead letters from the parking queues into the log as they arrive (each appended and confirmed
   * before it is acked). One or more worker processes should; default true once `deadLetterLog` is given.
   */
  readonly collect?: boolean;
}

/**
 * The dead-letter log a warren process feeds, or undefined when `deadLetterLog` is not given (dead letters
 * then stay in the parking queues, where `warren.deadLetters` and `ops.dead.collect()` find them).
 */
export function createDeadLetterLog(
  input: WarrenDeadLetterLogOptions | undefined,
  plan: TopologyPlan,
  manager: ConnectionManager,
  confirms: ConfirmPublisher,
  publishTimeoutMs: number,
  log: Logger,
  trust: RecordTrust,
): DeadLetterLog | undefined {
  if (input === undefined || input.collect === false) return undefined;
  const { collect: _collect, ...retention } = input;
  const stream = requireStream(plan, 'dead-letter-log');
  return new DeadLetterLog({
    openChannel: () => manager.openChannel(),
    send: (message) => confirms.send(message),
    stream: stream.name,
    indexStream: plan.naming.deadLetterLogIndex(),
    assertion: stream.assertion,
    queues: plan.queues
      .filter(isDeclaredJobQueue)
      .map((q) => ({ key: q.key, name: q.name, deadQueue: q.deadQueue })),
    jobQueue: (jobName) => plan.jobs.get(jobName)?.queue,
    options: resolveDeadLetterLogOptions(retention),
    // A worker only collects into the log; it never queries it.
    index: 'scan',
    publishTimeoutMs,
    log,
    trust,
  });
}
