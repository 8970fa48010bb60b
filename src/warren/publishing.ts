import { ConfirmPublisher, type ConnectionManager } from '../connection';
import type { Instrumentation, Logger } from '../core';
import type { DedupStore } from '../idempotency';
import type { JobControl } from '../job-control';
import { JobPublisher, ResultChannel, type ResolvedPublisherOptions } from '../publisher';
import type { RecordTrust } from '../records';
import type { TopologyPlan } from '../topology';
import { createJobControl } from './job-control';

/** The publishing side of a connection: its confirm channel, the job control and the job publisher. */
export interface PublishingParts {
  readonly confirms: ConfirmPublisher;
  readonly jobControl: JobControl;
  readonly publisher: JobPublisher;
  /** Signs and checks warren's own records (one per instance, shared by every part). */
  readonly trust: RecordTrust;
}

/** The record trust, and what a warren adds to plain publishing (warren/ops publishes without those). */
export interface PublishingExtras {
  /** Signs and checks warren's own records (one per instance, shared by every part). */
  readonly trust: RecordTrust;
  readonly instrumentation?: Instrumentation | undefined;
  /** Give the awaited results (`publishWithResult`) a channel of their own. */
  readonly results?: boolean;
  readonly deduplication?: DedupStore | undefined;
}

/**
 * Wires publishing on `manager`, for createWarren and warren/ops alike: the confirm channel (opened by
 * the caller's reconnect step), the job control that keeps `controllable` copies, and the publisher.
 */
export function wirePublishing(
  plan: TopologyPlan,
  manager: ConnectionManager,
  options: ResolvedPublisherOptions,
  log: Logger,
  extras: PublishingExtras,
): PublishingParts {
  const confirms = new ConfirmPublisher(
    manager,
    { maxBuffered: options.maxBuffered, maxMessageBytes: options.brokerMaxMessageBytes },
    log,
  );
  const answers = extras.trust.reader('job-result');
  const results = extras.results
    ? new ResultChannel(
        () => manager.openConfirmChannel(),
        (content, headers, jobId) => answers.accept(content, headers, { jobId }, jobId),
      )
    : undefined;
  const jobControl = createJobControl(plan, manager, confirms, options.timeoutMs, extras.trust);
  const publisher = new JobPublisher(
    plan,
    confirms,
    options,
    extras.instrumentation,
    results,
    extras.deduplication,
    (message, queueName) => jobControl.storeCopy(message, queueName),
    jobControl,
  );
  return { confirms, jobControl, publisher, trust: extras.trust };
}
