/**
 * The only place broker entity names are made. Everything warren declares carries the instance's
 * namespace, so that several applications (or tests) share one vhost without touching each other.
 */
export interface TopologyNaming {
  readonly namespace: string;
  queue(key: string): string;
  exchange(key: string): string;
  /** The parking queue of a job queue. */
  deadQueue(queueKey: string): string;
  /** The dead-letter exchange of a job queue (fanout to its parking queue). */
  deadExchange(queueKey: string): string;
  /**
   * Lane `index` of `count` of a job queue with fairness (docs/guide/fair-share.md): the count is in the
   * name, so a set of lanes with another count is another set of queues, never a silent re-hash.
   */
  lane(queueKey: string, count: number, index: number): string;
  /**
   * Partition `index` of `count` of a queue with ordered partitions (docs/guide/ordered-partitions.md): the
   * count is in the name, so another count is another set of queues, never a silent re-hash.
   */
  partition(queueKey: string, count: number, index: number): string;
  /** The fanout exchange the workers of a partitioned queue send their membership heartbeats on. */
  partitionMembers(queueKey: string): string;
  /** Level k of the delay levels: exchange and queue share the name. */
  delayLevel(level: number): string;
  /** Where a delayed message leaves the levels for its destination queue. */
  delayDelivery(): string;
  /** The hold of one exact delay (ms) in front of one job queue (its full name). */
  delayHold(queueName: string, delayMs: number): string;
  /** The single-active-consumer token queue of the cron leader election. */
  leaderQueue(): string;
  /** The queue a rate limiter's permits wait in. */
  permitQueue(limiterKey: string): string;
  /**
   * The cron leader's record of the last tick it fired per schedule (for the run-once missed-tick policy).
   */
  cronLedgerQueue(): string;
  /** The stream of run-time schedule records (add, remove, pause, resume), replayed by every process. */
  scheduleRegistry(): string;
  /** The single-active-consumer token queue electing the process that refills a rate limiter's permits. */
  limiterLeaderQueue(limiterKey: string): string;
  /** The fanout exchange every warren process listens on for operator requests (warren/ops). */
  controlExchange(): string;
  /**
   * The durable marker queue whose existence means "an operator paused this job queue": the paused state
   * lives on the broker, so a process that starts or reconnects during the pause stays paused.
   */
  pauseMarker(queueKey: string): string;
  /** Whether a broker entity name is one of the pause markers (state, not topology). */
  isPauseMarker(name: string): boolean;
  /**
   * The durable marker queue whose existence means "an operator is removing this namespace": a process
   * asked to stop for the removal reads it first, so a forged request cannot close anyone.
   */
  removalMarker(): string;
  /**
   * The stream holding every dead letter of the namespace (all job queues), read by offset without
   * consuming, with replay and purge markers appended.
   */
  deadLetterLog(): string;
  /** The offset index of the dead-letter log: which offsets may hold a job id, reason or payload field. */
  deadLetterLogIndex(): string;
  /** The offset index of the job history: which offsets may hold a job id's events. */
  jobHistoryIndex(): string;
  /** The checkpoints of the history's index: where its newest blocks are (history-index.ts). */
  jobHistoryCheckpoints(): string;
  /** The stream of job lifecycle events (published, started, completed, retrying, dead) of the namespace. */
  jobHistory(): string;
  /** The queue the history's lookup servers answer `ops.job(id)` from (docs/operating/cli.md#a-lookup-server). */
  historyLookups(): string;
  /** The job-control stream: cancel, promote and reschedule records for delayed jobs. */
  jobControl(): string;
  /**
   * A stream of queue aggregates for the dashboard's graphs, by level: per bucket, per hour, per day
   * (docs/guide/aggregates.md).
   */
  aggregates(level: 'bucket' | 'hour' | 'day'): string;
  /** The stream of the graphs' time-axis marks: deploys, pauses and resumes (docs/guide/aggregates.md). */
  marks(): string;
  /** The stream of per-key limit overrides (docs/guide/per-key-limits.md). */
  limits(): string;
  /**
   * The stream of checkpoints of a stream (the job-control stream or the schedule registry): the state of
   * every record before an offset, so a reader starts there instead of at the first record.
   */
  checkpoints(of: 'job-control' | 'schedules'): string;
  /**
   * The headers exchange live job events travel on to subscribers in any process (docs/guide/events.md):
   * events, and the subscribers' interest and the publishers' hello that gate them.
   */
  jobEvents(): string;
}

const NAMESPACE_PATTERN = /^[A-Za-z0-9_.:-]*$/;

export function isValidNamespace(namespace: string): boolean {
  return NAMESPACE_PATTERN.test(namespace) && !namespace.startsWith('amq.');
}

export function createNaming(namespace: string): TopologyNaming {
  const prefix = namespace === '' ? '' : `${namespace}.`;
  return Object.freeze({
    namespace,
    queue: (key: string) => `${prefix}${key}`,
    exchange: (key: string) => `${prefix}${key}`,
    deadQueue: (key: string) => `${prefix}${key}.dead`,
    deadExchange: (key: string) => `${prefix}${key}.dlx`,
    lane: (key: string, count: number, index: number) => `${prefix}${key}.lane-${count}.${index}`,
    partition: (key: string, count: number, index: number) => `${prefix}${key}.part-${count}.${index}`,
    partitionMembers: (key: string) => `${prefix}warren.members.${key}`,
    delayLevel: (level: number) => `${prefix}warren.delay.${String(level).padStart(2, '0')}`,
    delayDelivery: () => `${prefix}warren.delay.delivery`,
    delayHold: (queueName: string, delayMs: number) =>
      `${prefix}warren.delay.hold.${queueName.slice(prefix.length)}.${delayMs}ms`,
    leaderQueue: () => `${prefix}warren.leader`,
    permitQueue: (limiterKey: string) => `${prefix}warren.permits.${limiterKey}`,
    cronLedgerQueue: () => `${prefix}warren.cron-ledger`,
    scheduleRegistry: () => `${prefix}warren.schedules`,
    limiterLeaderQueue: (limiterKey: string) => `${prefix}warren.refill.${limiterKey}`,
    controlExchange: () => `${prefix}warren.control`,
    pauseMarker: (queueKey: string) => `${prefix}warren.paused.${queueKey}`,
    isPauseMarker: (name: string) => name.startsWith(`${prefix}warren.paused.`),
    removalMarker: () => `${prefix}warren.removing`,
    deadLetterLog: () => `${prefix}warren.dead-log`,
    deadLetterLogIndex: () => `${prefix}warren.dead-log.index`,
    jobHistoryIndex: () => `${prefix}warren.history.index`,
    jobHistoryCheckpoints: () => `${prefix}warren.history.checkpoints`,
    jobHistory: () => `${prefix}warren.history`,
    historyLookups: () => `${prefix}warren.history.lookups`,
    jobControl: () => `${prefix}warren.job-control`,
    aggregates: (level: 'bucket' | 'hour' | 'day') =>
      level === 'bucket' ? `${prefix}warren.aggregates` : `${prefix}warren.aggregates.${level}s`,
    marks: () => `${prefix}warren.marks`,
    limits: () => `${prefix}warren.limits`,
    checkpoints: (of: 'job-control' | 'schedules') => `${prefix}warren.${of}.checkpoints`,
    jobEvents: () => `${prefix}warren.events`,
  });
}
