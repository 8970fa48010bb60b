import { resolveJobDefaults, type JobDefinition, type ResolvedJobDefaults } from '../core';
import {
  CHECKPOINT_RETENTION,
  MARKS_RETENTION,
  planTopology,
  type PlanStreams,
  type StreamRetention,
  type TopologyPlan,
} from '../topology';
import { resolveDeadLetterLogOptions } from '../dead-letter-log';
import { resolveHistoryOptions } from '../history';
import { levelRetention, resolveAggregatesOptions } from '../aggregates';
import { JOB_CONTROL_RETENTION } from '../job-control';
import type { DeclaredLimiters } from '../coordination';
import type { CronDeclarations } from '../scheduler';
import { resolveWarrenTopologyOptions, type WarrenOptions } from './options';

/**
 * The topology plan of a configuration: its declared topology, its jobs, the leader-election queues if
 * this process schedules, the permit queues of its rate limits, and warren's own streams (job control and
 * schedule registry always, the dead-letter log and the history when given) with the retention the options
 * give. createWarren and warren/ops alike.
 */
export function planWarrenTopology(
  options: Pick<
    WarrenOptions,
    'topology' | 'namespace' | 'delay' | 'queues' | 'history' | 'aggregates' | 'deadLetterLog' | 'jobDefaults'
  >,
  definitions: readonly JobDefinition[],
  scheduling: Pick<CronDeclarations, 'scheduler'>,
  limiters: DeclaredLimiters,
  topologyOptions = resolveWarrenTopologyOptions(options),
): TopologyPlan {
  return planTopology({
    topology: options.topology ?? {},
    jobs: definitions,
    options: topologyOptions,
    leaderElection: scheduling.scheduler.enabled,
    limiters: [...limiters.byKey.values()].map((limiter) => ({
      key: limiter.key,
      maxPermits: limiter.max,
    })),
    streams: planStreamsOf(options, definitions),
    holds: fixedBackoffsOf(definitions, resolveJobDefaults(options.jobDefaults)),
  });
}

/** Each planned job's fixed backoff (its own or the defaults') and its queue: what a hold serves in one hop. */
function fixedBackoffsOf(
  definitions: readonly JobDefinition[],
  defaults: ResolvedJobDefaults,
): { queue: string; delayMs: number }[] {
  const holds: { queue: string; delayMs: number }[] = [];
  for (const definition of definitions) {
    const backoff = definition.backoff ?? defaults.backoff;
    if (typeof backoff !== 'function' && backoff.type === 'fixed')
      holds.push({ queue: definition.queue, delayMs: backoff.delayMs });
  }
  return holds;
}

/**
 * The streams of a configuration, each with its retention as its options resolve it: the job-control and
 * schedule streams always (any process may cancel or add a schedule); the dead-letter log and the history
 * only when their options are given, so that a process without them never declares them with other
 * retention than the processes that have them (a 406 at apply).
 */
function planStreamsOf(
  options: Pick<WarrenOptions, 'history' | 'aggregates' | 'deadLetterLog'>,
  definitions: readonly JobDefinition[],
): PlanStreams {
  const streams: { -readonly [K in keyof PlanStreams]: PlanStreams[K] } = {
    'job-control': { retention: JOB_CONTROL_RETENTION },
    schedules: {},
    'job-control-checkpoints': { retention: CHECKPOINT_RETENTION },
    'schedules-checkpoints': { retention: CHECKPOINT_RETENTION },
  };
  if (options.deadLetterLog !== undefined) {
    const { collect: _collect, ...deadLetterLog } = options.deadLetterLog;
    streams['dead-letter-log'] = { retention: retentionOf(resolveDeadLetterLogOptions(deadLetterLog)) };
  }
  if (options.history !== undefined)
    streams.history = { retention: retentionOf(resolveHistoryOptions(options.history)) };
  if (options.aggregates !== undefined) {
    const aggregates = resolveAggregatesOptions(options.aggregates);
    streams.aggregates = { retention: levelRetention(aggregates, 'bucket') };
    streams['aggregates-hours'] = { retention: levelRetention(aggregates, 'hour') };
    streams['aggregates-days'] = { retention: levelRetention(aggregates, 'day') };
    streams.marks = { retention: MARKS_RETENTION };
  }
  // kept until deleted: the newest record of a key is its override, however old (a change is ~150 bytes)
  if (definitions.some((d) => d.perKeyConcurrency !== undefined || d.limiter?.per !== undefined))
    streams.limits = {};
  return streams;
}

function retentionOf({ maxAgeMs, maxBytes, segmentBytes }: StreamRetention): StreamRetention {
  return { maxAgeMs, maxBytes, segmentBytes };
}
