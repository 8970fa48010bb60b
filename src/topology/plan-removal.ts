import { planDelayLevels } from './delay-levels';
import { MAX_DELAY_LEVELS } from './options';
import { plannedStream, type StreamKind, type TopologyPlan } from './topology-plan';

/**
 * Every broker entity a namespace's removal deletes, by exact name: never a name prefix, so removing
 * namespace `a` leaves namespace `a.b` whole. Queues (the removal marker last) are deleted before exchanges.
 */
export interface NamespaceRemoval {
  readonly namespace: string;
  readonly queues: readonly string[];
  readonly exchanges: readonly string[];
}

const STREAM_NAMES: { readonly [K in StreamKind]: (plan: TopologyPlan) => string } = {
  'job-control': (plan) => plan.naming.jobControl(),
  schedules: (plan) => plan.naming.scheduleRegistry(),
  'dead-letter-log': (plan) => plan.naming.deadLetterLog(),
  history: (plan) => plan.naming.jobHistory(),
  aggregates: (plan) => plan.naming.aggregates('bucket'),
  'aggregates-hours': (plan) => plan.naming.aggregates('hour'),
  'aggregates-days': (plan) => plan.naming.aggregates('day'),
  marks: (plan) => plan.naming.marks(),
  limits: (plan) => plan.naming.limits(),
  'job-control-checkpoints': (plan) => plan.naming.checkpoints('job-control'),
  'schedules-checkpoints': (plan) => plan.naming.checkpoints('schedules'),
};

/**
 * The streams (and the queue) a process declares beside a planned stream on first use, not in the plan
 * itself: the history's index and checkpoints and its lookup servers' queue, the dead-letter log's index. `deleteTopology` deletes them with it.
 */
export function sideStreamsOf(plan: TopologyPlan): string[] {
  const { naming } = plan;
  return [
    ...(plannedStream(plan, 'history')
      ? [naming.jobHistoryIndex(), naming.jobHistoryCheckpoints(), naming.historyLookups()]
      : []),
    ...(plannedStream(plan, 'dead-letter-log') ? [naming.deadLetterLogIndex()] : []),
  ];
}

/**
 * What removing a plan's namespace deletes. Pure. The rule: every entity of the plan, plus the names
 * warren's naming gives the namespace whatever the options were, since another process of the namespace
 * may have run with other ones: every stream of warren's own (the history, the dead-letter log and the
 * aggregates and their marks whether or not this configuration turns them on), the cron leader queue and ledger, every delay level up to
 * {@link MAX_DELAY_LEVELS} and the delivery exchange, the control exchange, the pause marker of each of
 * the plan's job queues, and the removal marker. What only another configuration names (a queue key or a
 * rate limiter this one does not declare) is not known here and stays: remove with that configuration.
 */
export function planNamespaceRemoval(plan: TopologyPlan): NamespaceRemoval {
  const { naming } = plan;
  const queues = new Set<string>(plan.queues.map((q) => q.name));
  const exchanges = new Set<string>(plan.exchanges.map((e) => e.name));
  for (const name of Object.values(STREAM_NAMES)) queues.add(name(plan));
  queues.add(naming.deadLetterLogIndex());
  queues.add(naming.jobHistoryIndex());
  queues.add(naming.jobHistoryCheckpoints());
  queues.add(naming.historyLookups());
  queues.add(naming.leaderQueue());
  queues.add(naming.cronLedgerQueue());
  const everyLevel = planDelayLevels(naming, 1, MAX_DELAY_LEVELS, 'classic');
  for (const level of everyLevel.levels) {
    queues.add(level.name);
    exchanges.add(level.name);
  }
  exchanges.add(everyLevel.deliveryExchange);
  exchanges.add(naming.controlExchange());
  exchanges.add(naming.jobEvents());
  for (const q of plan.queues) if (q.role === 'job') queues.add(naming.pauseMarker(q.key));
  queues.delete(naming.removalMarker());
  return Object.freeze({
    namespace: naming.namespace,
    queues: Object.freeze([...queues, naming.removalMarker()]),
    exchanges: Object.freeze([...exchanges]),
  });
}
