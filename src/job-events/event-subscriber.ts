import type * as amqp from 'amqplib';
import {
  checkKnownKeys,
  ConfigurationError,
  ShutdownError,
  UnknownJobError,
  UnknownQueueError,
  type Logger,
} from '../core';
import type { RecordTrust } from '../records';
import { isJobQueue, type TopologyPlan } from '../topology';
import type { EventFilter } from './event-record';
import { JobEventSubscription } from './event-subscription';
import { resolveSubscribeOptions, type SubscribeOptions } from './options';

/** The longest filter value: a job id, name or queue key is far shorter. */
const MAX_FILTER_CHARS = 1000;

/** What a subscriber needs: the plan it checks filters against, a connection's channels, its record codec. */
export interface EventSubscriberDeps {
  readonly plan: TopologyPlan;
  readonly openChannel: () => Promise<amqp.ConfirmChannel>;
  readonly trust: RecordTrust;
  readonly log: Logger;
  /** After every subscription closed on `close()`: a subscriber of its own closes its connection. */
  readonly release?: () => Promise<void>;
}

/**
 * Subscribes to live job events from any process (`warren.events`, or `createEventSubscriber` in a
 * process without handlers): by job id, job name or queue. Every subscription has its own bounded queue
 * and channel; after a reconnect, each subscribes again and tells its reader so.
 */
export class JobEventSubscriber {
  private readonly subscriptions = new Set<JobEventSubscription>();
  private closed = false;

  constructor(private readonly deps: EventSubscriberDeps) {}

  /**
   * Follows the events of one job id, every job of one name, or every job of one queue (its topology
   * key). A name or queue this configuration does not plan is refused (UNKNOWN_JOB, UNKNOWN_QUEUE); any
   * job id is accepted, since subscribing before publishing is the order that misses nothing. Resolves once
   * the processes running jobs can hear the interest.
   *
   * @example
   * const subscription = await warren.events.subscribe({ jobId: 'report-42' });
   * for await (const event of subscription) {
   *   if (event.kind === 'progress') console.log(event.progress);
   *   if (event.kind === 'completed' || event.kind === 'dead') break;
   * }
   */
  async subscribe(filter: EventFilter, options: SubscribeOptions = {}): Promise<JobEventSubscription> {
    if (this.closed) throw new ShutdownError('the event subscriber is closed; subscribe refused');
    this.check(filter);
    const subscription = new JobEventSubscription(filter, resolveSubscribeOptions(options), {
      naming: this.deps.plan.naming,
      openChannel: this.deps.openChannel,
      trust: this.deps.trust,
      log: this.deps.log,
      onClose: (s) => this.subscriptions.delete(s),
    });
    this.subscriptions.add(subscription);
    try {
      await subscription.open();
    } catch (error) {
      await subscription.close();
      throw error;
    }
    return subscription;
  }

  /** The connection's ready step after a reconnect: every open subscription subscribes again. */
  async reopen(): Promise<void> {
    for (const subscription of this.subscriptions)
      await subscription
        .reopen()
        .catch((error: unknown) =>
          this.deps.log.warn({ err: error }, 'could not subscribe to job events again'),
        );
  }

  /** Open subscriptions now. */
  get size(): number {
    return this.subscriptions.size;
  }

  /** Closes every subscription (and the connection of a subscriber made by `createEventSubscriber`). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    await this.deps.release?.();
  }

  private check(filter: EventFilter): void {
    checkKnownKeys('subscribe filter', filter, { jobId: true, name: true, queue: true });
    const given = (['jobId', 'name', 'queue'] as const).filter((field) => filter?.[field] !== undefined);
    if (given.length !== 1)
      throw new ConfigurationError(
        `subscribe needs exactly one of jobId, name, queue (got ${given.length === 0 ? 'none' : given.join(', ')})`,
      );
    const field = given[0]!;
    const value: unknown = filter[field];
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_FILTER_CHARS)
      throw new ConfigurationError(
        `subscribe ${field} must be a string of 1 to ${MAX_FILTER_CHARS} characters (got ${JSON.stringify(value)})`,
      );
    const { plan } = this.deps;
    if (field === 'name' && !plan.jobs.has(value))
      throw new UnknownJobError(value, { known: [...plan.jobs.keys()] });
    if (field === 'queue') {
      const keys = plan.queues.filter(isJobQueue).map((q) => q.key);
      if (!keys.includes(value)) throw new UnknownQueueError(value, keys);
    }
  }
}
