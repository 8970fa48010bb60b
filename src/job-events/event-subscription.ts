import { randomBytes } from 'node:crypto';
import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import { HEADERS } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import { eventSubscriberQueueArguments, headersBindingArguments, type TopologyNaming } from '../topology';
import {
  EVENT_RECORD_VERSION,
  filterField,
  parseEventRecord,
  type EventFilter,
  type FilterField,
  type SubscriptionMessage,
} from './event-record';
import type { ResolvedSubscribeOptions } from './options';

/** What a subscription needs from its subscriber. */
export interface SubscriptionDeps {
  readonly naming: TopologyNaming;
  readonly openChannel: () => Promise<amqp.ConfirmChannel>;
  /** The subscriber's record codec: signs the interest, checks the events. */
  readonly trust: RecordTrust;
  readonly log: Logger;
  /** Called once when the subscription closes (the subscriber forgets it). */
  readonly onClose: (subscription: JobEventSubscription) => void;
}

/** Unacknowledged events held in the process at most; the rest wait in the bounded queue on the broker. */
const MAX_PREFETCH = 256;
/** Processes whose last sequence number a subscription remembers (the first seen are forgotten first). */
const MAX_PROCESSES = 10_000;

interface Entry {
  readonly message: SubscriptionMessage;
  readonly ack?: () => void;
}

/**
 * One subscription to live job events: an exclusive, auto-delete queue on the events exchange, bound
 * by its filter, at most `maxLength` events long (the broker drops the oldest), its interest renewed
 * every third of its lease so that the sending processes keep sending. Iterate it with `for await`; an
 * event is acknowledged when the iteration takes it, so a slow reader fills the bounded queue, never
 * this process's memory. Gaps (by each sending process's sequence numbers) and reconnects are yielded
 * as notices. At most once: what the subscription misses is in the history, not here.
 */
export class JobEventSubscription implements AsyncIterable<SubscriptionMessage> {
  /** This subscription's id in its interest messages. */
  readonly id = randomBytes(8).toString('hex');
  private readonly field: FilterField;
  private readonly value: string;
  private channel: amqp.ConfirmChannel | undefined;
  private renewal: NodeJS.Timeout | undefined;
  private downSince: number | undefined;
  private readonly entries: Entry[] = [];
  private readonly waiters: ((entry: Entry | undefined) => void)[] = [];
  private readonly lastSeq = new Map<string, number>();
  private isClosed = false;
  private readonly reader: RecordReader;
  /** Events this subscription knows it missed (the sum of its gaps). */
  missed = 0;

  /** Made by a subscriber's `subscribe`. */
  constructor(
    readonly filter: EventFilter,
    private readonly options: ResolvedSubscribeOptions,
    private readonly deps: SubscriptionDeps,
  ) {
    this.field = filterField(filter);
    this.value = (filter.jobId ?? filter.name ?? filter.queue) as string;
    this.reader = deps.trust.reader('job-events');
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  /**
   * Declares the queue, binds it, consumes, and tells the sending processes its interest; resolves once
   * the broker confirmed the interest (a job published after this resolves is heard by a running worker).
   */
  async open(): Promise<void> {
    if (this.isClosed) return;
    const { naming } = this.deps;
    const exchange = naming.jobEvents();
    const channel = await this.deps.openChannel();
    this.channel = channel; // from now on, close() closes it, whatever step below fails
    channel.on('error', (error: unknown) =>
      this.deps.log.warn({ err: error }, 'job events subscription channel closed'),
    );
    channel.on('close', () => {
      if (this.channel !== channel) return;
      this.channel = undefined;
      this.downSince ??= Date.now();
    });
    await channel.assertExchange(exchange, 'headers', { durable: true });
    const held = Math.min(this.options.maxLength, MAX_PREFETCH);
    await channel.prefetch(held, false);
    const { queue } = await channel.assertQueue('', {
      exclusive: true,
      autoDelete: true,
      durable: false,
      arguments: eventSubscriberQueueArguments(this.options.maxLength),
    });
    const binding = { [HEADERS.event]: 'event', [this.headerOfFilter()]: this.value };
    await channel.bindQueue(queue, exchange, '', headersBindingArguments(binding));
    await channel.bindQueue(queue, exchange, '', headersBindingArguments({ [HEADERS.event]: 'hello' }));
    await channel.consume(queue, (message) => this.receive(channel, message), { noAck: false });
    this.announce('interest');
    await channel.waitForConfirms();
    this.renewal ??= setInterval(() => this.announce('interest'), this.options.leaseMs / 3).unref();
  }

  /** After a reconnect: subscribes again, and tells the reader how long it was away (if it was). */
  async reopen(): Promise<void> {
    // only one that lost its channel: one still opening (its first connect) opens by itself
    if (this.isClosed || this.downSince === undefined) return;
    const since = this.downSince;
    this.downSince = undefined;
    await this.open();
    this.push({ message: { kind: 'reconnected', downMs: Date.now() - since } });
  }

  /** Stops: withdraws the interest, deletes the queue (its channel closes), ends the iteration. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    clearInterval(this.renewal);
    this.announce('withdraw');
    const channel = this.channel;
    this.channel = undefined;
    await channel?.waitForConfirms().catch(() => undefined);
    await closeChannel(channel);
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
    this.deps.onClose(this);
  }

  [Symbol.asyncIterator](): AsyncIterator<SubscriptionMessage> {
    return {
      next: async () => {
        const entry = this.entries.shift() ?? (this.isClosed ? undefined : await this.nextEntry());
        if (entry === undefined) return { value: undefined, done: true };
        entry.ack?.();
        return { value: entry.message, done: false };
      },
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }

  private nextEntry(): Promise<Entry | undefined> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private push(entry: Entry): void {
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      waiter(entry);
      return;
    }
    this.entries.push(entry);
  }

  private headerOfFilter(): string {
    return this.field === 'jobId' ? HEADERS.jobId : this.field === 'name' ? HEADERS.jobName : HEADERS.queue;
  }

  /** Tells the sending processes this subscription's filter (or that it is gone). Unconfirmed but for open's wait. */
  private announce(op: 'interest' | 'withdraw'): void {
    const channel = this.channel;
    if (channel === undefined) return;
    const content = Buffer.from(
      JSON.stringify({
        v: EVENT_RECORD_VERSION,
        op,
        subscriber: this.id,
        filter: { [this.field]: this.value },
        leaseMs: this.options.leaseMs,
        t: Date.now(),
      }),
    );
    try {
      channel.publish(this.deps.naming.jobEvents(), '', content, {
        contentType: 'application/json',
        headers: { [HEADERS.event]: 'interest', ...this.deps.trust.proof('event-interest', content) },
      });
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not renew a job events subscription');
    }
  }

  private receive(channel: amqp.ConfirmChannel, message: amqp.ConsumeMessage | null): void {
    if (message === null) return; // the queue went away with its connection: the reconnect opens a new one
    const ack = () => {
      try {
        channel.ack(message);
      } catch {
        // the channel closed since: the broker has forgotten the delivery with it
      }
    };
    if (message.properties.headers?.[HEADERS.event] === 'hello') {
      ack();
      this.announce('interest');
      return;
    }
    const { reader } = this;
    const where = { exchange: this.deps.naming.jobEvents() };
    if (!reader.accept(message.content, message.properties.headers, where)) {
      ack();
      return;
    }
    const parsed = parseEventRecord(message.content);
    if (parsed === undefined) {
      reader.skip('malformed', where);
      ack();
      return;
    }
    const seq = parsed.seq[this.field];
    if (seq !== undefined) this.countGap(parsed.event.process, seq);
    this.push({ message: parsed.event, ack });
  }

  /** A jump in one process's sequence number for this filter: events missed, told before the next one. */
  private countGap(process: string, seq: number): void {
    const last = this.lastSeq.get(process);
    if (last === undefined && this.lastSeq.size >= MAX_PROCESSES)
      this.lastSeq.delete(this.lastSeq.keys().next().value as string);
    this.lastSeq.set(process, seq);
    // first event of a process, or its count started again (it forgot the filter): nothing to compare
    if (last === undefined || seq <= last) return;
    const missed = seq - last - 1;
    if (missed === 0) return;
    this.missed += missed;
    this.push({ message: { kind: 'gap', missed, process } });
  }
}
