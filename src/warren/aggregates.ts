import { hostname } from 'node:os';
import {
  AggregateWriter,
  BucketCollector,
  resolveAggregatesOptions,
  type AggregatesOptions,
  type ResolvedAggregatesOptions,
} from '../aggregates';
import type { ConnectionManager } from '../connection';
import type { Logger } from '../core';
import type { RecordTrust } from '../records';
import { requireStream, type TopologyPlan } from '../topology';

/** `aggregates` resolved, with the collector the job path counts into (an instrumentation). */
export interface ConfiguredAggregates {
  readonly options: ResolvedAggregatesOptions;
  readonly collector: BucketCollector;
}

/** The pure step: options resolved (a bad one throws here) and the collector made; undefined while off. */
export function configureAggregates(input: AggregatesOptions | undefined): ConfiguredAggregates | undefined {
  if (input === undefined) return undefined;
  const options = resolveAggregatesOptions(input);
  return { options, collector: new BucketCollector(options.bucketMs) };
}

/** The writer of the aggregates and the reconnect step that opens its channel (the topology step declared the streams). */
export interface WarrenAggregates {
  readonly writer: AggregateWriter;
  readonly open: () => Promise<void>;
}

export function createAggregates(
  config: {
    readonly aggregates: ConfiguredAggregates | undefined;
    readonly plan: TopologyPlan;
    readonly log: Logger;
  },
  manager: ConnectionManager,
  processId: string,
  trust: RecordTrust,
): WarrenAggregates | undefined {
  const { aggregates: configured, plan } = config;
  if (configured === undefined) return undefined;
  const writer = new AggregateWriter(
    {
      bucket: requireStream(plan, 'aggregates').name,
      hour: requireStream(plan, 'aggregates-hours').name,
      day: requireStream(plan, 'aggregates-days').name,
    },
    configured.options,
    { p: processId, h: hostname() },
    configured.collector,
    config.log.child({ component: 'aggregates' }),
    trust,
  );
  return { writer, open: () => writer.open(() => manager.openChannel()) };
}
