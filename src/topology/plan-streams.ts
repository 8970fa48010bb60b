import type { TopologyNaming } from './naming';
import type { PlanParts } from './plan-queues';
import { streamAssertion, type StreamRetention } from './queue-arguments';
import type { PlannedStream, StreamKind } from './topology-plan';

/** Each stream kind's name, from the naming functions (the only place names are made). */
const STREAM_NAMES: { readonly [K in StreamKind]: (naming: TopologyNaming) => string } = {
  'job-control': (naming) => naming.jobControl(),
  'job-control-checkpoints': (naming) => naming.checkpoints('job-control'),
  schedules: (naming) => naming.scheduleRegistry(),
  'schedules-checkpoints': (naming) => naming.checkpoints('schedules'),
  'dead-letter-log': (naming) => naming.deadLetterLog(),
  history: (naming) => naming.jobHistory(),
  aggregates: (naming) => naming.aggregates('bucket'),
  'aggregates-hours': (naming) => naming.aggregates('hour'),
  'aggregates-days': (naming) => naming.aggregates('day'),
  marks: (naming) => naming.marks(),
  limits: (naming) => naming.limits(),
};

/**
 * A checkpoint stream's retention: only its newest records matter (a reader takes the last chunk's; a
 * missing checkpoint costs a read from the first record, never a record), so the oldest go after 30 days
 * or past 256 MiB, in 16 MiB segments.
 */
export const CHECKPOINT_RETENTION: StreamRetention = Object.freeze({
  maxAgeMs: 30 * 24 * 3_600_000,
  maxBytes: 2 ** 28,
  segmentBytes: 2 ** 24,
});

/**
 * The marks stream's retention, the same for every process (a mark is a few hundred bytes, a deploy or a
 * pause now and then): 400 days, as long as the day aggregates by default, or 64 MiB, in 4 MiB segments.
 */
export const MARKS_RETENTION: StreamRetention = Object.freeze({
  maxAgeMs: 400 * 24 * 3_600_000,
  maxBytes: 2 ** 26,
  segmentBytes: 2 ** 22,
});

/** The order streams are planned in, whatever order the input lists them. */
const STREAM_KINDS = Object.keys(STREAM_NAMES) as StreamKind[];

/** The streams to plan, by kind, each with its retention (`{}`: none, kept until deleted). */
export type PlanStreams = { readonly [K in StreamKind]?: { readonly retention?: StreamRetention } };

/** warren's own streams, after the coordination queues: durable, with the retention each is given. */
export function planStreams(parts: PlanParts, streams: PlanStreams, naming: TopologyNaming): void {
  for (const kind of STREAM_KINDS) {
    const input = streams[kind];
    if (input !== undefined) parts.queues.push(planStream(kind, input.retention, naming));
  }
}

/**
 * One stream as a plan would hold it: for a process that must use a stream its configuration does not plan
 * (`warren/ops` reading the dead-letter log of a config without `deadLetterLog`).
 */
export function planStream(
  kind: StreamKind,
  retention: StreamRetention | undefined,
  naming: TopologyNaming,
): PlannedStream {
  const kept =
    retention === undefined
      ? undefined
      : { maxAgeMs: retention.maxAgeMs, maxBytes: retention.maxBytes, segmentBytes: retention.segmentBytes };
  return {
    role: 'stream',
    stream: kind,
    name: STREAM_NAMES[kind](naming),
    type: 'stream',
    retention: kept,
    assertion: streamAssertion(kept),
  };
}
