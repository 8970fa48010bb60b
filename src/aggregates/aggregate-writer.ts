import type * as amqp from 'amqplib';
import { closeChannel, type Logger } from '../core';
import type { RecordTrust } from '../records';
import { encodeAggregate, type AggregateRecord, type QueueCounts } from './aggregate-record';
import type { BucketCollector, QueueTally } from './bucket-collector';
import { CountsSum } from './counts-sum';
import { levelMs, type AggregateLevel, type ResolvedAggregatesOptions } from './options';

/** After a boundary, the bucket is closed this much later: the timer must not fire before it. */
const CLOSE_AFTER_MS = 20;

/** A roll-up being filled: an hour or a day of this process's buckets. */
interface RollUp {
  start: number;
  readonly queues: Map<string, CountsSum>;
}

/**
 * Closes this process's bucket at every multiple of `bucketMs` of the wall clock, asks the broker each job
 * queue's depth, and appends one record for the bucket (none when nothing happened and no queue holds a
 * message); adds it into the hour and the day it belongs to and appends those when they end (and, partial,
 * on stop: partial records of several processes or lives add up). Plain channel, no confirms: like the
 * history, a record lost with a connection costs a bucket of a graph, never a job.
 */
export class AggregateWriter {
  private channel: amqp.Channel | undefined;
  private timer: NodeJS.Timeout | undefined;
  private openStart: number;
  private readonly rollUps: Record<'hour' | 'day', RollUp>;
  /** Records not appended because no channel was open. */
  dropped = 0;
  /** Records appended, by level (the bench's count). */
  readonly appended: Record<AggregateLevel, number> = { bucket: 0, hour: 0, day: 0 };

  constructor(
    private readonly streams: { readonly [L in AggregateLevel]: string },
    private readonly options: ResolvedAggregatesOptions,
    private readonly origin: { readonly p: string; readonly h: string },
    private readonly collector: BucketCollector,
    private readonly log: Logger,
    private readonly trust: RecordTrust,
  ) {
    const now = Date.now();
    this.openStart = align(now, options.bucketMs);
    this.rollUps = {
      hour: { start: align(now, levelMs(options, 'hour')), queues: new Map() },
      day: { start: align(now, levelMs(options, 'day')), queues: new Map() },
    };
  }

  /** A ready hook: the channel of this connection generation; starts the bucket timer the first time. */
  async open(openChannel: () => Promise<amqp.Channel>): Promise<void> {
    const channel = await openChannel();
    channel.on('error', (error: unknown) => this.log.warn({ err: error }, 'aggregates channel closed'));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
    if (this.timer === undefined) this.schedule();
  }

  private schedule(): void {
    const due = this.openStart + this.options.bucketMs + CLOSE_AFTER_MS - Date.now();
    this.timer = setTimeout(() => void this.tick(), Math.max(0, due));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const start = align(Date.now(), this.options.bucketMs);
    if (start !== this.openStart) await this.closeBucket(start, false).catch(this.warn);
    this.schedule();
  }

  private readonly warn = (error: unknown): void => {
    this.log.warn({ err: error }, 'could not close an aggregates bucket');
  };

  /** Appends the open bucket (and each roll-up it ends), then opens the bucket starting at `next`. */
  private async closeBucket(next: number, isFinal: boolean): Promise<void> {
    const start = this.openStart;
    this.openStart = next;
    const tallies = this.collector.take();
    const queues = await this.countsOf(tallies);
    if (Object.keys(queues).length > 0) {
      this.append('bucket', start, queues);
      for (const level of ['hour', 'day'] as const) this.rollInto(level, start, queues);
    }
    for (const level of ['hour', 'day'] as const) {
      const rollUp = this.rollUps[level];
      const length = levelMs(this.options, level);
      if (isFinal || align(next, length) !== rollUp.start) {
        if (rollUp.queues.size > 0) this.append(level, rollUp.start, countsOfRollUp(rollUp));
        rollUp.queues.clear();
        rollUp.start = align(next, length);
      }
    }
  }

  /** Every queue with something to say: runs in the bucket, or messages waiting when it closed. */
  private async countsOf(tallies: Map<string, QueueTally>): Promise<Record<string, QueueCounts>> {
    const queues: Record<string, QueueCounts> = {};
    const now = Date.now();
    const known = this.collector.queues();
    const depths = await Promise.all(known.map((q) => this.collector.depth(q.name)));
    const keys = new Set([...tallies.keys(), ...known.map((q) => q.key)]);
    for (const key of keys) {
      const tally = tallies.get(key);
      const index = known.findIndex((q) => q.key === key);
      const depth = index >= 0 ? depths[index] : undefined;
      if (tally === undefined && !(depth !== undefined && depth > 0)) continue;
      const from = this.collector.lastStartedWaitFrom(key);
      const oldest = depth === 0 ? 0 : from !== undefined && depth !== undefined ? now - from : undefined;
      queues[key] = {
        c: tally?.completed ?? 0,
        f: tally?.failed ?? 0,
        r: tally?.retried ?? 0,
        d: tally?.dead ?? 0,
        w: tally?.wait.sparse() ?? [],
        x: tally?.run.sparse() ?? [],
        ...(depth !== undefined ? { n: depth } : {}),
        ...(oldest !== undefined ? { o: Math.max(0, Math.round(oldest)) } : {}),
      };
    }
    return queues;
  }

  /** Adds a bucket into the hour or day roll-up (peak depth and oldest wait, summed counts and bins). */
  private rollInto(level: 'hour' | 'day', bucketStart: number, queues: Record<string, QueueCounts>): void {
    const rollUp = this.rollUps[level];
    const start = align(bucketStart, levelMs(this.options, level));
    if (start !== rollUp.start) {
      if (rollUp.queues.size > 0) this.append(level, rollUp.start, countsOfRollUp(rollUp));
      rollUp.queues.clear();
      rollUp.start = start;
    }
    for (const [key, q] of Object.entries(queues)) {
      let sum = rollUp.queues.get(key);
      if (sum === undefined) {
        sum = new CountsSum();
        rollUp.queues.set(key, sum);
      }
      sum.add(q);
    }
  }

  private append(level: AggregateLevel, start: number, queues: Record<string, QueueCounts>): void {
    const record: AggregateRecord = {
      v: 1,
      ...this.origin,
      s: start,
      l: levelMs(this.options, level),
      q: queues,
    };
    const channel = this.channel;
    if (channel === undefined) {
      this.dropped += 1;
      return;
    }
    const content = encodeAggregate(record);
    channel.publish('', this.streams[level], content, {
      contentType: 'application/json',
      persistent: true,
      timestamp: Math.floor(Date.now() / 1000),
      headers: this.trust.proof('aggregates', content, level),
    });
    this.appended[level] += 1;
  }

  /** Appends the open bucket and the partial hour and day, then closes the channel. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.closeBucket(align(Date.now(), this.options.bucketMs), true).catch(this.warn);
    const channel = this.channel;
    this.channel = undefined;
    await closeChannel(channel);
  }
}

function countsOfRollUp(rollUp: RollUp): Record<string, QueueCounts> {
  return Object.fromEntries([...rollUp.queues].map(([key, sum]) => [key, sum.counts()]));
}

/** The start of the bucket (of this length) holding `at`: a multiple of the length since the epoch. */
export function align(at: number, lengthMs: number): number {
  return Math.floor(at / lengthMs) * lengthMs;
}
