import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { ManagedChannel, type ConnectionManager } from '../connection';
import { consumerTimeoutArguments, MAX_CONSUMER_TIMEOUT_MS } from '../topology';

/** The token's body is never read: holding the delivery is what counts. */
const TOKEN = Buffer.from('{"leaderToken":true}');

/**
 * Leader election with nothing but the broker (rabbitmq-facts.md §6). The token queue is a quorum
 * queue with single active consumer, max length 1 and reject-publish. Every participant consumes it
 * with prefetch 1 and seeds one token when it finds the queue empty; the broker delivers a token to
 * the single active consumer only, which never acks it: holding that unacked delivery is leadership.
 * When the leader's channel or connection closes, the broker requeues the token and delivers it to
 * the next consumer within milliseconds (a frozen leader: once the broker misses ~2 heartbeats).
 * Surplus tokens (seeded while the leader held one) are harmless: with prefetch 1 only the active
 * consumer ever holds one.
 *
 * Fencing: leadership ends synchronously in the channel's `close` event (amqplib emits it for every
 * channel before the connection's own `close`), so whoever follows `onChange` stops at once.
 *
 * The broker's consumer timeout: a token held unacked for `consumer_timeout` would end the leadership
 * (RabbitMQ 3.x closes the holder's channel, 4.x cancels its consumer) and move it, leaving a gap in
 * which a cron tick can fall. So the holder consumes with the longest `x-consumer-timeout` (3.12 and
 * later honour it) and renews its token at a third of the broker's `consumer_timeout`: it sends a new
 * token, then acks the one it holds. Single active consumer delivers the new token to the holder again,
 * which stays leader throughout (a surplus token, if one waited, is delivered instead: the same).
 */
export class LeaderElection {
  private readonly managed: ManagedChannel;
  private participating = false;
  private leader = false;
  private consumerTag: string | undefined;
  private subscribing: { channel: amqp.Channel; done: Promise<void> } | undefined;
  /** The token delivery this process holds while it leads, and the timer that renews it. */
  private held: { message: amqp.ConsumeMessage; channel: amqp.Channel } | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(isLeader: boolean) => void>();

  constructor(
    private readonly manager: ConnectionManager,
    private readonly queueName: string,
    private readonly reapplyTopology: () => Promise<void>,
    private readonly log: Logger,
  ) {
    this.managed = new ManagedChannel(
      manager,
      {
        name: `leader election ${queueName}`,
        confirm: false,
        setup: (channel) => this.setup(channel),
        onClosed: () => {
          this.consumerTag = undefined;
          this.setLeader(false, 'channel closed');
        },
      },
      log,
    );
  }

  get isLeader(): boolean {
    return this.leader;
  }

  /** Called synchronously on every change of leadership. Returns a function that removes the listener. */
  onChange(listener: (isLeader: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The connection's ready hook: a channel, consuming again if this process takes part. */
  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  /** Takes part in the election from now on (seeds a token if there is none). */
  async start(): Promise<void> {
    this.participating = true;
    // A channel lost meanwhile subscribes again in its setup when it re-opens.
    await this.subscribe().catch((error: unknown) =>
      this.log.warn(
        { err: error, queue: this.queueName },
        'joining the election failed; retrying when the channel re-opens',
      ),
    );
  }

  /**
   * Leaves the election: leadership ends now, and closing the channel hands the token to the next process.
   */
  async stop(): Promise<void> {
    this.participating = false;
    this.setLeader(false, 'stopped');
    await this.managed.close();
  }

  private async setup(channel: amqp.Channel): Promise<void> {
    this.consumerTag = undefined;
    await channel.prefetch(1, false);
    if (this.participating) await this.subscribe();
  }

  private subscribe(): Promise<void> {
    const channel = this.managed.current;
    if (!channel || this.consumerTag !== undefined) return Promise.resolve();
    if (this.subscribing?.channel === channel) return this.subscribing.done;
    const done = this.consume(channel).finally(() => {
      if (this.subscribing?.done === done) this.subscribing = undefined;
    });
    this.subscribing = { channel, done };
    return done;
  }

  private async consume(channel: amqp.Channel): Promise<void> {
    const { messageCount } = await channel.checkQueue(this.queueName);
    // A plain (unconfirmed) publish: if the queue is full it is refused, which is what we want.
    if (messageCount === 0) channel.sendToQueue(this.queueName, TOKEN, { persistent: true });
    const reply = await channel.consume(this.queueName, (message) => this.onDelivery(message, channel), {
      noAck: false,
      // the token queue is a quorum queue (single active consumer needs one)
      arguments: consumerTimeoutArguments(MAX_CONSUMER_TIMEOUT_MS, 'quorum', this.manager.broker),
    });
    if (this.managed.current === channel) this.consumerTag = reply.consumerTag;
  }

  private onDelivery(message: amqp.ConsumeMessage | null, channel: amqp.Channel): void {
    if (message === null) {
      void this.handleCancel(channel);
      return;
    }
    // Acked only when renewed: the unacked token is the leadership. It returns to the queue when the
    // channel closes.
    if (channel !== this.managed.current || !this.participating) return;
    this.held = { message, channel };
    this.armRenewal();
    this.setLeader(true, 'token received');
  }

  /** Renews the held token at a third of the broker's consumer timeout. */
  private armRenewal(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    const everyMs = Math.max(100, Math.floor(this.manager.consumerTimeoutMs / 3));
    this.renewTimer = setTimeout(() => this.renew(), everyMs);
    this.renewTimer.unref();
  }

  /**
   * Sends a new token, then acks the held one, on the same channel: the broker takes them in that order,
   * so the queue is never without a token the holder can get. Max length 1 refuses the new token when a
   * surplus one waits already; that one is delivered instead.
   */
  private renew(): void {
    this.renewTimer = undefined;
    const held = this.held;
    if (!held || held.channel !== this.managed.current || !this.leader) return;
    try {
      held.channel.sendToQueue(this.queueName, TOKEN, { persistent: true });
      held.channel.ack(held.message);
      this.held = undefined;
    } catch (error) {
      // The channel is closing: its close event ends the leadership, and the token returns to the queue.
      this.log.warn({ err: error, queue: this.queueName }, 'renewing the leadership token failed');
    }
  }

  private dropHeld(): void {
    this.held = undefined;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
  }

  /**
   * The broker cancelled the consumer (the queue was deleted): leadership is gone; declare again and rejoin.
   */
  private async handleCancel(channel: amqp.Channel): Promise<void> {
    this.consumerTag = undefined;
    this.setLeader(false, 'consumer cancelled by the broker');
    try {
      await this.reapplyTopology();
      if (this.participating && this.managed.current === channel) await this.subscribe();
    } catch (error) {
      this.log.warn(
        { err: error, queue: this.queueName },
        'rejoining the election failed; re-opening the channel',
      );
      await closeChannel(channel);
    }
  }

  private setLeader(isLeader: boolean, why: string): void {
    if (!isLeader) this.dropHeld();
    if (this.leader === isLeader) return;
    this.leader = isLeader;
    this.log.info({ queue: this.queueName, isLeader, why }, isLeader ? 'elected leader' : 'leadership ended');
    for (const listener of [...this.listeners]) {
      try {
        listener(isLeader);
      } catch (error) {
        this.log.error({ err: error }, 'a leadership listener threw; ignored');
      }
    }
  }
}
