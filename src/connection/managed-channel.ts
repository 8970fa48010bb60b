import type * as amqp from 'amqplib';
import { closeChannel, jitteredBackoff, type Logger } from '../core';
import type { ConnectionManager } from './connection-manager';

export interface ManagedChannelOptions<C extends amqp.Channel> {
  readonly name: string;
  readonly confirm: boolean;
  /** Prefetch, listeners, consumers: run on every new channel. */
  readonly setup: (channel: C, generation: number) => Promise<void>;
  /** Told when the channel closed (with the broker's reason), before it is re-opened. */
  readonly onClosed?: (error: Error | undefined) => void;
}

/**
 * A channel that comes back: re-opened (with its setup re-run) after every reconnect, and on its
 * own after a channel-level error (404, 406, a consumer timeout) while the connection stays up.
 * Errors are channel-local: they never close the connection or crash the process.
 */
export class ManagedChannel<C extends amqp.Channel = amqp.Channel> {
  private channel: C | undefined;
  private generation = 0;
  private reopenAttempt = 0;
  private reopenTimer: NodeJS.Timeout | undefined;
  private closed = false;
  lastError: Error | undefined;

  constructor(
    private readonly manager: ConnectionManager,
    private readonly options: ManagedChannelOptions<C>,
    private readonly log: Logger,
  ) {}

  get current(): C | undefined {
    return this.channel;
  }

  /** Opens the channel on the manager's current connection; called from the manager's ready hook. */
  async open(generation: number): Promise<void> {
    if (this.closed) return;
    const channel = (
      this.options.confirm ? await this.manager.openConfirmChannel() : await this.manager.openChannel()
    ) as C;
    this.generation = generation;
    channel.on('error', (error: Error) => {
      this.lastError = error;
      this.log.warn({ err: error, channel: this.options.name }, 'channel error');
    });
    channel.on('close', () => this.handleClose(channel, generation));
    this.channel = channel;
    await this.options.setup(channel, generation);
    this.reopenAttempt = 0;
  }

  /**
   * Closes the channel and opens a new one on the same connection (setup re-run): for broker-side
   * channel state that went bad while the connection is fine.
   */
  renew(): void {
    const channel = this.channel;
    if (!channel || this.closed) return;
    this.lastError = undefined;
    channel.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reopenTimer) clearTimeout(this.reopenTimer);
    const channel = this.channel;
    this.channel = undefined;
    await closeChannel(channel);
  }

  private handleClose(channel: C, generation: number): void {
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.options.onClosed?.(this.lastError);
    if (this.closed) return;
    this.scheduleReopen(generation);
  }

  /** Re-open only while the same connection lives; after a reconnect the manager's hook re-opens it. */
  private scheduleReopen(generation: number): void {
    if (this.reopenTimer) return;
    this.reopenAttempt += 1;
    const delay = jitteredBackoff(this.reopenAttempt, 50, 5000, 0.3);
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      if (this.closed || this.channel || !this.manager.isConnected || this.manager.generation !== generation)
        return;
      this.open(generation)
        .then(() => this.log.info({ channel: this.options.name }, 'channel re-opened'))
        .catch((error: Error) => {
          this.lastError = error;
          this.log.warn({ err: error, channel: this.options.name }, 're-opening channel failed');
          const stale = this.channel;
          this.channel = undefined;
          stale?.close().catch(() => undefined);
          if (!this.closed && this.manager.isConnected && this.manager.generation === generation)
            this.scheduleReopen(generation);
        });
    }, delay);
  }

  get channelGeneration(): number {
    return this.generation;
  }
}
