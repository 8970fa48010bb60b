import { DEFAULT_KEY, deliveredKey } from '../message';
import type { PlannedJobQueue } from '../topology';
import { DeficitRoundRobin } from './deficit-round-robin';
import type { Delivery } from './delivery';
import type { ConsumerSettings, QueueConsumerDeps } from './consumer-settings';
import { QueueConsumer } from './queue-consumer';

/** A delivery held by the scheduler until its key's turn. */
interface Waiting {
  readonly delivery: Delivery;
  readonly consumer: QueueConsumer;
  readonly channel: number;
  readonly done: () => void;
}

/** What a queue with fairness reports of its scheduler (health, `warren queues`, the dashboard). */
export interface FairShareStats {
  /** Deliveries waiting in this process for their key's turn. */
  readonly waiting: number;
  /** Deliveries without a valid `warren-key` since start: scheduled under the default key. */
  readonly unkeyed: number;
  /** The keys with the most deliveries waiting here, most first (at most 5). */
  readonly busiestKeys: readonly { readonly key: string; readonly waiting: number }[];
}

/**
 * The consumer of a queue with fairness (docs/guide/fair-share.md): one QueueConsumer per lane, the intake
 * and the draining lanes of a lane-count change, each with a prefetch of the queue's concurrency (so a lone
 * busy key still fills every slot), all feeding one deficit round-robin across keys that starts at most
 * `concurrency` jobs at a time. Everything that follows a start (guards, handler, ack, retry, dead letter)
 * is the plain path; the lanes only decide what runs next.
 */
export class FairShareConsumer {
  private readonly lanes: QueueConsumer[];
  private readonly scheduler: DeficitRoundRobin<Waiting>;
  private running = 0;
  private unkeyed = 0;
  private stopping = false;

  constructor(
    readonly queue: PlannedJobQueue,
    laneQueues: readonly PlannedJobQueue[],
    private readonly settings: ConsumerSettings,
    private readonly deps: QueueConsumerDeps,
  ) {
    const weights = queue.fairness?.weights ?? {};
    this.scheduler = new DeficitRoundRobin((key) => weights[key] ?? 1);
    this.lanes = [queue, ...laneQueues].map((lane) => {
      const consumer: QueueConsumer = new QueueConsumer(lane, settings, {
        ...deps,
        processor: { process: (delivery) => this.hold(delivery, consumer) },
      });
      return consumer;
    });
  }

  get activeJobs(): number {
    return this.running;
  }

  get handled(): number {
    return this.lanes.reduce((sum, lane) => sum + lane.handled, 0);
  }

  get isConsuming(): boolean {
    return this.lanes.every((lane) => lane.isConsuming);
  }

  stats(): FairShareStats {
    return { waiting: this.scheduler.size, unkeyed: this.unkeyed, busiestKeys: this.scheduler.busiest(5) };
  }

  async open(generation: number): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.open(generation)));
    // deliveries of the channels that closed went back to the broker: they must not run from here
    for (const stale of this.scheduler.discard((w) => w.channel !== w.consumer.channelCount)) stale.done();
  }

  async start(): Promise<void> {
    this.stopping = false;
    await Promise.all(this.lanes.map((lane) => lane.start()));
  }

  async pause(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.pause()));
  }

  async resume(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.resume()));
  }

  /** Hands the deliveries that have not started back to their lanes, then stops every lane consumer. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    for (const waiting of this.scheduler.drain()) {
      waiting.delivery.requeue();
      waiting.done();
    }
    await Promise.all(this.lanes.map((lane) => lane.stop(graceMs)));
  }

  /** The lane consumer's processor: the delivery waits for its key's turn; resolves when it is settled. */
  private hold(delivery: Delivery, consumer: QueueConsumer): Promise<void> {
    if (this.stopping) {
      delivery.requeue();
      return Promise.resolve();
    }
    let key = deliveredKey(delivery.message.properties.headers);
    if (key === undefined) {
      key = DEFAULT_KEY;
      this.unkeyed += 1;
    }
    // nothing waits and a slot is free: no key is behind another, so the job starts at once
    if (this.scheduler.size === 0 && this.running < this.settings.concurrency) return this.run(delivery);
    return new Promise((done) => {
      this.scheduler.push(key, { delivery, consumer, channel: consumer.channelCount, done });
      this.startNext();
    });
  }

  private startNext(): void {
    while (this.running < this.settings.concurrency) {
      const next = this.scheduler.next();
      if (next === undefined) return;
      const waiting = next.item;
      // its channel closed while it waited: the broker has it back already
      if (waiting.channel !== waiting.consumer.channelCount) waiting.done();
      else void this.run(waiting.delivery).then(waiting.done);
    }
  }

  /** Runs one delivery in a slot; when it is settled the slot goes to the next key's turn. */
  private run(delivery: Delivery): Promise<void> {
    this.running += 1;
    return this.deps.processor
      .process(delivery)
      .catch((error: unknown) => {
        this.deps.log.error(
          { err: error, queue: this.queue.name },
          'unexpected error while processing a delivery; returning it to the queue',
        );
        delivery.requeue();
      })
      .finally(() => {
        this.running -= 1;
        this.startNext();
      });
  }
}
