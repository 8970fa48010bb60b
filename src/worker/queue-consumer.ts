import type * as amqp from 'amqplib';
import type { Logger } from '../core';
import { isConsumerTimeout, ManagedChannel, type ConnectionManager } from '../connection';
import { consumerTimeoutArguments, type PlannedJobQueue } from '../topology';
import { AckBatcher } from './ack-batcher';
import type { JobProcessor } from './job-processor';
import type { RunningJob } from './run-handler';

type ConsumerState = 'idle' | 'consuming' | 'paused' | 'stopped';

/**
 * The consumer of one job queue on its own channel: prefetch = concurrency, re-created with the
 * channel after any reconnect or channel error, re-subscribed when the broker cancels it (the queue
 * was deleted, a node failed). Explicit pause/stop survive reconnects: a paused consumer stays paused.
 */
export class QueueConsumer {
  private readonly managed: ManagedChannel;
  private state: ConsumerState = 'idle';
  private consumerTag: string | undefined;
  private batcher: AckBatcher | undefined;
  private readonly inFlight = new Set<RunningJob>();
  private pending = 0;
  private finished = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly manager: ConnectionManager,
    readonly queue: PlannedJobQueue,
    private readonly concurrency: number,
    /** The consumer's `x-consumer-timeout`: the queue's longest job timeout and a margin, ms. */
    private readonly consumerTimeoutMs: number,
    private readonly processor: JobProcessor,
    private readonly reapplyTopology: () => Promise<void>,
    private readonly log: Logger,
  ) {
    this.managed = new ManagedChannel(
      manager,
      {
        name: `consumer ${queue.name}`,
        confirm: false,
        setup: (channel) => this.setup(channel),
        onClosed: (error) => this.channelClosed(error),
      },
      log,
    );
  }

  get activeJobs(): number {
    return this.pending;
  }

  /** Deliveries this consumer finished handling since it was created (acked, retried, dead or requeued). */
  get handled(): number {
    return this.finished;
  }

  get isConsuming(): boolean {
    return this.state === 'consuming' && this.consumerTag !== undefined && this.managed.current !== undefined;
  }

  /** Opens the channel (from the connection's ready hook); consumes if started and not paused. */
  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  async start(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'consuming';
    await this.subscribe();
  }

  /** Stops taking new jobs (running ones finish). Used while a circuit breaker is open. */
  async pause(): Promise<void> {
    if (this.state !== 'consuming') return;
    this.state = 'paused';
    await this.unsubscribe();
  }

  async resume(): Promise<void> {
    // 'idle': the queue was paused before the worker started, so start() skipped it.
    if (this.state !== 'paused' && this.state !== 'idle') return;
    this.state = 'consuming';
    await this.subscribe();
  }

  /**
   * Graceful stop: cancel the subscription, let running jobs finish within `graceMs`, then abort the
   * rest through their signal and return them to the queue unacked. Nothing is lost.
   */
  async stop(graceMs: number): Promise<void> {
    this.state = 'stopped';
    await this.unsubscribe();
    const finished = await this.waitIdle(graceMs);
    if (!finished) {
      this.log.warn(
        { queue: this.queue.name, running: this.pending },
        'grace period over; aborting running jobs and returning them to the queue',
      );
      for (const running of this.inFlight) running.abortForShutdown();
      await this.waitIdle(1000);
    }
    this.batcher?.flush();
    await this.managed.close();
  }

  private async setup(channel: amqp.Channel): Promise<void> {
    await channel.prefetch(this.concurrency, false);
    this.batcher = new AckBatcher(channel, this.concurrency);
    this.consumerTag = undefined;
    if (this.state === 'consuming') await this.subscribe();
  }

  private async subscribe(): Promise<void> {
    const channel = this.managed.current;
    if (!channel || this.consumerTag !== undefined) return;
    const batcher = this.batcher!;
    const reply = await channel.consume(
      this.queue.name,
      (message) => this.onMessage(message, channel, batcher),
      {
        noAck: false,
        arguments: consumerTimeoutArguments(this.consumerTimeoutMs, this.queue.type, this.manager.broker),
      },
    );
    this.consumerTag = reply.consumerTag;
  }

  private async unsubscribe(): Promise<void> {
    const channel = this.managed.current;
    const tag = this.consumerTag;
    this.consumerTag = undefined;
    if (channel && tag) await channel.cancel(tag).catch(() => undefined);
  }

  private onMessage(message: amqp.ConsumeMessage | null, channel: amqp.Channel, batcher: AckBatcher): void {
    if (message === null) {
      void this.handleCancel(channel);
      return;
    }
    batcher.track(message.fields.deliveryTag);
    this.pending += 1;
    let settled = false;
    const settle = {
      ack: (immediate?: boolean) => {
        if (settled) return;
        settled = true;
        batcher.ack(message.fields.deliveryTag);
        if (immediate) batcher.flush();
      },
      requeue: () => {
        if (settled) return;
        settled = true;
        batcher.requeue(message);
      },
      reject: () => {
        if (settled) return;
        settled = true;
        batcher.reject(message);
      },
    };
    let running: RunningJob | undefined;
    const done = () => {
      if (running) this.inFlight.delete(running);
      this.pending -= 1;
      this.finished += 1;
      if (this.pending === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
    };
    this.processor
      .process(message, this.queue, settle, (r) => {
        running = r;
        this.inFlight.add(r);
      })
      .then(done, (error: unknown) => {
        this.log.error(
          { err: error, queue: this.queue.name },
          'unexpected error while processing a delivery; returning it to the queue',
        );
        settle.requeue();
        done();
      });
  }

  /**
   * The broker cancelled the consumer (queue deleted, node lost): re-declare the topology and subscribe
   * again.
   */
  private async handleCancel(channel: amqp.Channel): Promise<void> {
    this.consumerTag = undefined;
    this.log.warn(
      { queue: this.queue.name },
      'consumer cancelled by the broker; re-declaring the topology and re-subscribing',
    );
    try {
      await this.reapplyTopology();
      if (this.state === 'consuming' && this.managed.current === channel) await this.subscribe();
    } catch (error) {
      this.log.warn({ err: error, queue: this.queue.name }, 're-subscribing failed; re-opening the channel');
      await channel.close().catch(() => undefined);
    }
  }

  private channelClosed(error: Error | undefined): void {
    this.consumerTag = undefined;
    this.batcher = undefined;
    if (isConsumerTimeout(error)) {
      this.log.error(
        { queue: this.queue.name, err: error },
        "the broker closed the channel because a job ran longer than its consumer_timeout; the job was requeued. Keep the job's timeoutMs below consumer_timeout, or raise consumer_timeout in rabbitmq.conf",
      );
    }
  }

  private waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.pending === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.pending === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
