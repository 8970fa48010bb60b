import type * as amqp from 'amqplib';
import { closeChannel, type Logger, type WarrenEvents } from '../core';
import { firstLine } from '../history';
import { HEADERS } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import { headersBindingArguments, type TopologyNaming } from '../topology';
import {
  EVENT_RECORD_VERSION,
  parseInterestRecord,
  type EventRecord,
  type FilterField,
  type LiveEventKind,
} from './event-record';
import type { ResolvedEventsOptions } from './options';

/** The in-process events a relay sends on, and the live kind each becomes. */
const RELAYED: Readonly<Partial<Record<keyof WarrenEvents, LiveEventKind>>> = {
  progress: 'progress',
  completed: 'completed',
  failed: 'failed',
  retried: 'retrying',
  deadLettered: 'dead',
  cancelled: 'cancelled',
};

/** Filters one relay keeps at most (a flood of forged interest cannot fill memory). */
const MAX_FILTERS = 10_000;
/** Subscribers of one filter kept at most. */
const MAX_HOLDERS = 1000;

interface Interest {
  /** Events sent for this filter: the subscribers' gap count. */
  seq: number;
  /** Subscriber id → when its lease ends (ms). */
  readonly holders: Map<string, number>;
}

/**
 * The sending side of the live job events, one per warren process: it learns the subscribers' filters
 * (their interest, renewed within a lease) on an exclusive queue of its own, and sends an event to the
 * events exchange only when a filter someone holds matches it (job id, name or queue). Unconfirmed,
 * transient, never waited for: a live view, at most once. With no subscriber anywhere an event costs a
 * map lookup.
 */
export class EventRelay {
  /** The filters someone holds, by field: job id, name, queue. */
  private readonly interests: Readonly<Record<FilterField, Map<string, Interest>>> = {
    jobId: new Map(),
    name: new Map(),
    queue: new Map(),
  };
  /** Filters held, all fields: none means nothing is sent (the usual case). */
  private filters = 0;
  private channel: amqp.Channel | undefined;
  private isBlocked = false;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly reader: RecordReader;
  /** Events not sent because no channel was open or its buffer was full (subscribers count them as gaps). */
  unsent = 0;

  constructor(
    private readonly naming: TopologyNaming,
    private readonly processId: string,
    private readonly options: ResolvedEventsOptions,
    private readonly trust: RecordTrust,
    private readonly log: Logger,
  ) {
    this.reader = trust.reader('event-interest');
  }

  /**
   * Whether an in-process event would be sent now: a relayed kind, and someone holds a filter (that
   * matches the job, when it is given).
   */
  wants(event: keyof WarrenEvents, jobId?: string, name?: string, queue?: string): boolean {
    if (this.filters === 0 || RELAYED[event] === undefined) return false;
    if (jobId === undefined) return true;
    // a field nobody filters by is not looked up (a string's first lookup hashes it: a job id is new each job)
    const { jobId: byJob, name: byName, queue: byQueue } = this.interests;
    return (
      (byJob.size > 0 && byJob.has(jobId)) ||
      (name !== undefined && byName.size > 0 && byName.has(name)) ||
      (queue !== undefined && byQueue.size > 0 && byQueue.has(queue))
    );
  }

  /**
   * A ready step: a channel of this connection generation, an exclusive queue bound to the interest
   * messages, and a hello that makes every subscriber tell its interest again at once.
   */
  async open(openChannel: () => Promise<amqp.Channel>): Promise<void> {
    if (!this.options.publish) return;
    const channel = await openChannel();
    channel.on('error', (error: unknown) => this.log.warn({ err: error }, 'job events channel closed'));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    channel.on('drain', () => {
      this.isBlocked = false;
    });
    const exchange = this.naming.jobEvents();
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.bindQueue(queue, exchange, '', headersBindingArguments({ [HEADERS.event]: 'interest' }));
    await channel.consume(queue, (message) => this.hear(message), { noAck: true });
    this.channel = channel;
    this.isBlocked = false;
    const hello = Buffer.from(
      JSON.stringify({ v: EVENT_RECORD_VERSION, op: 'hello', process: this.processId, t: Date.now() }),
    );
    channel.publish(exchange, '', hello, {
      contentType: 'application/json',
      headers: { [HEADERS.event]: 'hello', ...this.trust.proof('event-interest', hello) },
    });
    this.sweeper ??= setInterval(() => this.sweep(Date.now()), 1000).unref();
  }

  /** An in-process event: sent when someone's filter matches it. */
  relay<K extends keyof WarrenEvents>(event: K, payload: WarrenEvents[K][0]): void {
    const kind = RELAYED[event];
    if (kind === undefined || this.filters === 0) return;
    const e = payload as {
      jobId: string;
      name?: string;
      queue?: string;
      attempt?: number;
    } & Record<string, unknown>;
    const seq: Partial<Record<FilterField, number>> = {};
    let isWanted = false;
    for (const [field, value] of [
      ['jobId', e.jobId],
      ['name', e.name],
      ['queue', e.queue],
    ] as const) {
      if (value === undefined) continue;
      const interest = this.interests[field].get(value);
      if (interest === undefined) continue;
      interest.seq += 1;
      seq[field] = interest.seq;
      isWanted = true;
    }
    if (!isWanted) return;
    const channel = this.channel;
    if (channel === undefined || this.isBlocked) {
      this.unsent += 1;
      return;
    }
    const record: EventRecord = {
      v: EVENT_RECORD_VERSION,
      kind,
      jobId: e.jobId,
      name: e.name ?? '',
      queue: e.queue ?? '',
      ...(e.attempt !== undefined ? { attempt: e.attempt } : {}),
      at: typeof e.cancelledAt === 'number' ? e.cancelledAt : Date.now(),
      process: this.processId,
      seq,
      ...this.fieldsOf(kind, e),
    };
    const content = Buffer.from(JSON.stringify(record));
    try {
      const hasRoom = channel.publish(this.naming.jobEvents(), '', content, {
        contentType: 'application/json',
        persistent: false,
        headers: {
          [HEADERS.event]: 'event',
          [HEADERS.jobId]: record.jobId,
          [HEADERS.jobName]: record.name,
          [HEADERS.queue]: record.queue,
          ...this.trust.proof('job-events', content),
        },
      });
      if (!hasRoom) this.isBlocked = true;
    } catch (error) {
      this.unsent += 1;
      this.log.warn({ err: error }, 'could not send a job event');
    }
  }

  /** Stops listening to interest; the channel closes. */
  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    const channel = this.channel;
    this.channel = undefined;
    for (const byValue of Object.values(this.interests)) byValue.clear();
    this.filters = 0;
    await closeChannel(channel);
  }

  private fieldsOf(kind: LiveEventKind, e: Record<string, unknown>): Partial<EventRecord> {
    switch (kind) {
      case 'progress': {
        const value = this.capped(e.progress);
        return value === undefined ? { isTruncated: true } : { progress: e.progress };
      }
      case 'completed': {
        const durationMs = Math.max(0, Math.round(e.durationMs as number));
        if (e.result === undefined) return { durationMs };
        const value = this.capped(e.result);
        return value === undefined ? { durationMs, isTruncated: true } : { durationMs, result: e.result };
      }
      case 'failed':
        return { error: firstLine(e.error), willRetry: e.willRetry === true };
      case 'retrying':
        return {
          error: firstLine(e.error),
          delayMs: Math.max(0, Math.round(e.delayMs as number)),
          nextAttempt: e.nextAttempt as number,
        };
      case 'dead':
        return { reason: String(e.reason), error: firstLine(e.error) };
      case 'cancelled':
        return typeof e.dueAt === 'number' ? { dueAt: e.dueAt } : {};
    }
  }

  /** The value's JSON when it fits in `maxValueBytes`; undefined when larger or not JSON. */
  private capped(value: unknown): string | undefined {
    try {
      const json = JSON.stringify(value);
      if (json === undefined) return undefined;
      return Buffer.byteLength(json) <= this.options.maxValueBytes ? json : undefined;
    } catch {
      return undefined;
    }
  }

  /** An interest message: a filter held (or renewed), withdrawn, or another process's hello (ignored). */
  private hear(message: amqp.ConsumeMessage | null): void {
    if (message === null) return;
    const where = { exchange: this.naming.jobEvents() };
    if (!this.reader.accept(message.content, message.properties.headers, where)) return;
    const record = parseInterestRecord(message.content);
    if (record === undefined) {
      this.reader.skip('malformed', where);
      return;
    }
    if (record.op === 'hello') return;
    const [field, value] = Object.entries(record.filter)[0] as [FilterField, string];
    const byValue = this.interests[field];
    const now = Date.now();
    let interest = byValue.get(value);
    if (record.op === 'withdraw') {
      interest?.holders.delete(record.subscriber);
      if (interest?.holders.size === 0) this.forget(byValue, value);
      return;
    }
    if (interest === undefined) {
      if (this.filters >= MAX_FILTERS) {
        this.reader.skip('too-large', { ...where, why: 'too many subscribed filters' });
        return;
      }
      interest = { seq: 0, holders: new Map() };
      byValue.set(value, interest);
      this.filters += 1;
    }
    if (!interest.holders.has(record.subscriber) && interest.holders.size >= MAX_HOLDERS) {
      this.reader.skip('too-large', { ...where, why: 'too many subscribers of one filter' });
      return;
    }
    interest.holders.set(record.subscriber, now + record.leaseMs);
  }

  /** Forgets the subscribers whose lease ran out (a process that died without withdrawing). */
  private sweep(now: number): void {
    for (const byValue of Object.values(this.interests))
      for (const [value, interest] of byValue) {
        for (const [subscriber, until] of interest.holders)
          if (until <= now) interest.holders.delete(subscriber);
        if (interest.holders.size === 0) this.forget(byValue, value);
      }
  }

  private forget(byValue: Map<string, Interest>, value: string): void {
    if (byValue.delete(value)) this.filters -= 1;
  }
}
