import type { BreakerPauses, BreakerRegistry } from '../breaker';
import type { ConfirmPublisher, ConnectionManager, ResolvedConnectionOptions } from '../connection';
import type { Logger } from '../core';
import type { JobControl } from '../job-control';
import type { JobEventSubscriber } from '../job-events';
import type { JobPublisher } from '../publisher';
import type { SlipSeal } from '../workflow';
import type { RecordTrust } from '../records';
import type { TopologyPlan } from '../topology';
import type { DeadLetters, Worker } from '../worker';
import type { CronService } from '../scheduler';
import type { WarrenControl } from './control';
import type { WarrenEventSink } from './event-sink';
import type { WarrenHistory } from './history';
import type { WarrenOutbox } from './outbox';

/** Something a warren stops on close, after its worker. */
export interface StoppablePart {
  stop(): Promise<void>;
}

/**
 * The named parts of a warren instance, as `wireWarren` builds them from a resolved configuration. The
 * Warren class is a face over them; internal users reach them through `partsOf`, never through the
 * public type.
 */
export interface WarrenParts {
  readonly plan: TopologyPlan;
  readonly log: Logger;
  /** Where the parts' events go; forwards to the Warren once connected. */
  readonly events: WarrenEventSink;
  readonly manager: ConnectionManager;
  /** The resolved connection options: a namespace removal deletes over a fresh connection made with them. */
  readonly connectionOptions: ResolvedConnectionOptions;
  /** The confirm channel every publish goes through. */
  readonly confirms: ConfirmPublisher;
  readonly publisher: JobPublisher;
  readonly jobControl: JobControl;
  /** Signs and checks warren's own records; its skip counts are in `health().records`. */
  readonly trust: RecordTrust;
  readonly worker: Worker;
  readonly breakers: BreakerRegistry;
  readonly pauses: BreakerPauses;
  /** Cron, its leadership and the rate limiters. */
  readonly scheduling: CronService;
  readonly control: WarrenControl;
  readonly deadLetters: DeadLetters;
  /** Writes the job history stream (and what it keeps of each job); undefined when `history` is off. */
  readonly history: WarrenHistory | undefined;
  /** `warren.events`: subscriptions to live job events, on this warren's connection. */
  readonly eventSubscriber: JobEventSubscriber;
  /** Parts stopped on close after the worker (dead-letter collector, history writer, job control). */
  readonly addOns: readonly StoppablePart[];
  readonly outbox: WarrenOutbox | undefined;
  /** The job names `warren.slip()` may use as steps. */
  readonly slipActivities: ReadonlySet<string>;
  /** Seals the first envelope of a slip (`warren.slip().run()`), as the router seals the next ones. */
  readonly slipSeal: SlipSeal;
  readonly shutdownGraceMs: number;
}
