// size-exception: one queue's consumer state machine (subscribe, hold ahead, settle, pause, shutdown and a partition's handover share its fields and its channel)
import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { isConsumerTimeout, ManagedChannel } from '../connection';
import { consumerTimeoutArguments, type PlannedJobQueue } from '../topology';
import { AckBatcher } from './ack-batcher';
import { Delivery } from './delivery';
import { fencedSettlement } from './fenced-settlement';
import { handlersEnded } from './handlers-ended';
import { HeldDeliveries } from './held-deliveries';
import type { ConsumerSettings, QueueConsumerDeps } from './consumer-settings';

type ConsumerState = 'idle' | 'consuming' | 'paused' | 'stopped';

/**
 * The consumer of one job queue on its own channel: prefetch = concurrency + ahead, at most `concurrency`
 * deliveries running and the rest held in arrival order until a run ends; re-created with the channel
 * after any reconnect or channel error, re-subscribed when the broker cancels it (the queue was deleted,
 * a node failed). Explicit pause/stop survive reconnects: a paused consumer stays paused.
 *
 * Held ahead, the next deliveries come while these run: with prefetch = concurrency and short jobs the
 * consumer waited a broker round trip per window (80-88 % of its time at concurrency 10, classic queue).
 */
export class QueueConsumer {
  private readonly managed: ManagedChannel;
  private state: ConsumerState = 'idle';
  private consumerTag: string | undefined;
  private subscribing: { readonly channel: amqp.Channel; readonly promise: Promise<void> } | undefined;
  private batcher: AckBatcher | undefined;
  /** Deliveries received and not yet handled to the end: running or held. */
  private readonly inFlight = new Set<Delivery>();
  /** Deliveries received while `concurrency` ran, in arrival order, each started when a run ends. */
  private readonly held = new HeldDeliveries();
  private running = 0;
  private finished = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly log: Logger;
  private channels = 0;

  constructor(
    readonly queue: PlannedJobQueue,
    private readonly settings: ConsumerSettings,
    private readonly deps: QueueConsumerDeps,
  ) {
    this.log = deps.log;
    this.managed = new ManagedChannel(
      deps.manager,
      {
        name: `consumer ${queue.name}`,
        confirm: false,
        setup: (channel) => this.setup(channel),
        onClosed: (error) => this.channelClosed(error),
      },
      deps.log,
    );
  }

  get activeJobs(): number {
    return this.inFlight.size;
  }

  /** Deliveries this consumer finished handling since it was created (acked, retried, dead or requeued). */
  get handled(): number {
    return this.finished;
  }

  /**
   * Channels opened so far: a delivery received under another count came on a channel that has closed since
   * (the broker requeued it), so the fair-share scheduler drops it instead of running it.
   */
  get channelCount(): number {
    return this.channels;
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

  /** Stops taking new jobs (running ones finish, held ones wait for the resume). Used while a circuit breaker is open. */
  async pause(): Promise<void> {
    if (this.state !== 'consuming') return;
    this.state = 'paused';
    await this.unsubscribe();
  }

  async resume(): Promise<void> {
    // 'idle': the queue was paused before the worker started, so start() skipped it.
    if (this.state !== 'paused' && this.state !== 'idle') return;
    this.state = 'consuming';
    this.startHeld();
    await this.subscribe();
  }

  /**
   * An ordered partition's handover: no `basic.cancel` (a cancelled quorum consumer keeps its unacked
   * deliveries while single active consumer already feeds the next one), the running jobs finish and are
   * acked within `graceMs` (else `onGraceOver` fences them and they are aborted, and their handlers get another
   * `graceMs` to return), then the channel closes and
   * the broker returns what was not started to the partition's head, in order, for the next owner.
   */
  async closeAfterRunning(graceMs: number, onGraceOver: () => void): Promise<void> {
    this.state = 'stopped';
    const finished = await this.waitIdle(graceMs);
    if (!finished) {
      onGraceOver();
      const running = [...this.inFlight];
      for (const delivery of running) delivery.running?.abortForShutdown();
      await this.waitIdle(1000);
      if (!(await handlersEnded(running, graceMs)))
        this.log.warn(
          { queue: this.queue.name },
          'a handler ignored its aborted signal past the grace period; handing the partition over anyway',
        );
    }
    this.batcher?.flush();
    await this.managed.close();
  }

  /** The deliveries received and not yet handled to the end (an ordered partition's handover aborts some). */
  readonly deliveries: ReadonlySet<Delivery> = this.inFlight;

  /** Closes the channel at once: the broker returns every unacked delivery (a fenced partition). */
  async closeNow(): Promise<void> {
    this.state = 'stopped';
    await this.managed.close();
  }

  /**
   * Graceful stop: cancel the subscription, let running jobs finish within `graceMs`, then abort the
   * rest through their signal and return them to the queue unacked. Nothing is lost.
   */
  async stop(graceMs: number): Promise<void> {
    this.state = 'stopped';
    this.startHeld();
    await this.unsubscribe();
    const finished = await this.waitIdle(graceMs);
    if (!finished) {
      this.log.warn(
        { queue: this.queue.name, running: this.inFlight.size },
        'grace period over; aborting running jobs and returning them to the queue',
      );
      // held deliveries never started: back to the queue as they are, like the aborted runs
      for (const held of this.held.takeAll()) {
        held.requeue();
        this.finish(held);
      }
      for (const delivery of this.inFlight) delivery.running?.abortForShutdown();
      await this.waitIdle(1000);
    }
    this.batcher?.flush();
    await this.managed.close();
  }

  private async setup(channel: amqp.Channel): Promise<void> {
    const prefetch = this.settings.concurrency + this.settings.ahead;
    this.channels += 1;
    await channel.prefetch(prefetch, false);
    this.batcher = new AckBatcher(channel, prefetch);
    this.consumerTag = undefined;
    if (this.state === 'consuming') await this.subscribe();
  }

  /**
   * One subscription at a time: a resume or a reconnect's setup that calls while another subscribe awaits
   * the broker's consume-ok joins it instead of making a second consumer.
   */
  private subscribe(): Promise<void> {
    const channel = this.managed.current;
    if (!channel || this.consumerTag !== undefined) return Promise.resolve();
    // a subscribe still pending on a channel that has since been replaced is not joined: the new one
    // needs its own consumer
    if (this.subscribing?.channel !== channel) {
      const pending = this.consume(channel).finally(() => {
        if (this.subscribing?.promise === pending) this.subscribing = undefined;
      });
      this.subscribing = { channel, promise: pending };
    }
    return this.subscribing.promise;
  }

  private async consume(channel: amqp.Channel): Promise<void> {
    const batcher = this.batcher!;
    const reply = await channel.consume(
      this.queue.name,
      (message) => this.onMessage(message, channel, batcher),
      {
        noAck: false,
        arguments: consumerTimeoutArguments(
          this.settings.consumerTimeoutMs,
          this.queue.type,
          this.deps.manager.broker,
        ),
      },
    );
    // A pause or stop that came while the broker had not answered yet found no consumer to cancel: the
    // consumer it did not see is cancelled here, or it would keep consuming a paused queue.
    if (this.state !== 'consuming' || this.managed.current !== channel) {
      // an ordered partition's channel is closing instead: what arrives meanwhile goes back with it, in order
      if (this.deps.channelLost === undefined) await channel.cancel(reply.consumerTag).catch(() => undefined);
      return;
    }
    this.consumerTag = reply.consumerTag;
  }

  private async unsubscribe(): Promise<void> {
    await this.subscribing?.promise.catch(() => undefined);
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
    // The one object of this delivery: what the processor, guards, republisher and settler take.
    const isFenced = this.deps.isFenced;
    const delivery = new Delivery(
      message,
      this.queue,
      isFenced === undefined ? batcher : fencedSettlement(batcher, isFenced),
      this.deps.checkOwnership,
    );
    this.inFlight.add(delivery);
    if (this.running < this.settings.concurrency) this.run(delivery);
    else this.held.push(delivery);
  }

  private run(delivery: Delivery): void {
    this.running += 1;
    this.deps.processor.process(delivery).then(
      () => this.ran(delivery),
      (error: unknown) => {
        this.log.error(
          { err: error, queue: this.queue.name },
          'unexpected error while processing a delivery; returning it to the queue',
        );
        delivery.requeue();
        this.ran(delivery);
      },
    );
  }

  private ran(delivery: Delivery): void {
    this.running -= 1;
    this.finish(delivery);
    this.startHeld();
  }

  /**
   * Starts held deliveries while fewer than `concurrency` run; none while paused (an open breaker pauses the
   * queue: what it holds starts on resume, the trial jobs), all as slots free on stop (within the grace).
   */
  private startHeld(): void {
    while (this.running < this.settings.concurrency && this.state !== 'paused') {
      const next = this.held.shift();
      if (next === undefined) return;
      this.run(next);
    }
  }

  /** `handled`: it counts in `handled` (a held delivery dropped with its closed channel does not). */
  private finish(delivery: Delivery, handled = true): void {
    this.inFlight.delete(delivery);
    if (handled) this.finished += 1;
    if (this.inFlight.size === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
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
      await this.deps.reapplyTopology();
      if (this.state === 'consuming' && this.managed.current === channel) await this.subscribe();
    } catch (error) {
      this.log.warn({ err: error, queue: this.queue.name }, 're-subscribing failed; re-opening the channel');
      await closeChannel(channel);
    }
  }

  private channelClosed(error: Error | undefined): void {
    this.consumerTag = undefined;
    this.batcher = undefined;
    this.deps.channelLost?.();
    // the broker has requeued its unsettled deliveries, the held ones among them
    for (const held of this.held.takeAll()) this.finish(held, false);
    if (isConsumerTimeout(error)) {
      this.log.error(
        { queue: this.queue.name, err: error },
        "the broker closed the channel because a job ran longer than its consumer_timeout; the job was requeued. Keep the job's timeoutMs below consumer_timeout, or raise consumer_timeout in rabbitmq.conf",
      );
    }
  }

  private waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.inFlight.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.inFlight.size === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
