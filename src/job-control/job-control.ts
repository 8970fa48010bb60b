import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { JobControlError } from '../core';
import { withThrowawayChannel, type OutgoingMessage } from '../connection';
import { followStream, readStream, type StreamFollower, type StreamRecord } from '../streams';
import { JSON_CONTENT_TYPE } from '../message';
import type { RecordReader, RecordTrust } from '../records';
import type { DelayPlan, PlannedJob, QueueAssertion } from '../topology';
import { CONTROL_RETENTION_MS, READ_AHEAD_SETTLE_MS } from './control-stream';
import { dueTimeOf, knownOfJob, type CancelledJob } from './cancelled-job';
import { storedCopyMessage } from './stored-copy';
import { copyId, judge, parseControlRecord, type ControlRecord, type JobVerdict } from './control-record';

/** Reading the stream to its end (to this process's own mark) fails past this. */
const CATCH_UP_TIMEOUT_MS = 15_000;
const COPY_READ_IDLE_MS = 2000;
/** The in-memory map is swept of records past retention every this many records. */
const SWEEP_EVERY = 1000;

export interface JobControlDeps {
  readonly stream: string;
  /** The stream as the plan declares it: asserted before its first use (a process may not apply the plan). */
  readonly assertion: QueueAssertion;
  readonly delay: DelayPlan;
  readonly openChannel: () => Promise<amqp.Channel>;
  /** Sends with the broker's confirm. */
  readonly send: (message: OutgoingMessage) => Promise<void>;
  readonly timeoutMs: number;
  /** The planned jobs: a stored copy is published only into the queue of the job it names. */
  readonly jobs: ReadonlyMap<string, PlannedJob>;
  /** Signs the records this process appends; verifies, counts and skips what it reads. */
  readonly trust: RecordTrust;
}

/**
 * Cancel, promote and reschedule delayed jobs (docs/guide/job-control.md). The delay levels
 * cannot be searched, so the decisions are records on a stream that every process reads to its end and
 * then follows, into a map by job id; a worker looks a delayed job up there when it comes due. A
 * consuming worker starts that read as it starts if the stream exists; a process that only publishes
 * pays nothing until it acts.
 */
export class JobControl {
  private readonly decisions = new Map<string, ControlRecord>();
  private readonly copies = new Map<string, { readonly offset: number; readonly t: number }>();
  private nextOffset = 0;
  private seen = 0;
  private follower: StreamFollower | undefined;
  private caughtUp: Promise<void> | undefined;
  private readonly marks = new Map<string, () => void>();
  private declared: Promise<void> | undefined;
  private stops = 0;
  /** Whether a read ahead waited (or needed not): later ones, after a reconnect, read at once. */
  private settled = false;
  /** Ends a read ahead's wait, if one waits (a stop must not wait it out). */
  private endSettle: (() => void) | undefined;
  /** Ends the read in progress, if any (a stop must not wait out its timeout). */
  private abortRead: (() => void) | undefined;
  /** The reader of the current pass over the stream (its replay guard). */
  private readonly reader: RecordReader;

  constructor(private readonly deps: JobControlDeps) {
    this.reader = deps.trust.reader('job-control');
  }

  /** What a worker does with a delayed job of this id (and copy header) that came due now. */
  async decide(jobId: string, copy: unknown, now: number): Promise<JobVerdict> {
    await this.follow();
    return judge(this.decisions.get(jobId), copy, now);
  }

  /**
   * Reads the stream to its end and follows it now rather than at the first delayed job (a worker starting
   * or reconnecting). A process's first read waits {@link READ_AHEAD_SETTLE_MS}: every process declares
   * the stream with the plan, RabbitMQ 3.10 answers a second declaration while the first connection still
   * creates it (4–10 ms here) and kills the connection (541, 506 `Stream not found`) of a consumer or
   * publisher using it meanwhile: workers starting together on a new namespace (5 of 20 consumers, 14 of
   * 30 publishers; 4.3.6: none).
   */
  async readAhead(): Promise<void> {
    if (this.caughtUp === undefined && !this.settled) {
      this.settled = true;
      const stops = this.stops;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, READ_AHEAD_SETTLE_MS).unref();
        this.endSettle = () => resolve(clearTimeout(timer));
      });
      if (stops !== this.stops) return;
    }
    await this.follow();
  }

  /** Records the cancel, with what is known of the job (knownOfJob); an unreadable stream leaves it unknown. */
  async cancel(jobId: string): Promise<CancelledJob> {
    const known = await this.follow()
      .then(async () => knownOfJob(this.decisions.get(jobId), await this.storedCopy(jobId), this.deps.jobs))
      .catch(() => ({}));
    const t = Date.now();
    await this.append({ j: jobId, a: 'cancel', t });
    return { jobId, cancelledAt: new Date(t), dueAt: undefined, name: undefined, queue: undefined, ...known };
  }

  /**
   * Later, without a stored copy: a record (the job is re-delayed when it comes due). Through the copy of a
   * `controllable` job: a copy delayed to `runAt`, earlier or later, and the original is dropped.
   */
  async reschedule(jobId: string, runAt: number): Promise<void> {
    await this.follow();
    const stored = await this.storedCopy(jobId);
    if (stored === undefined) return this.append({ j: jobId, a: 'reschedule', t: Date.now(), u: runAt });
    this.checkNotDue(jobId, stored);
    const t = Date.now();
    const c = copyId(t, randomUUID());
    await this.publishCopy(stored, c, runAt - t);
    await this.append({ j: jobId, a: 'reschedule', t, u: runAt, c });
  }

  /** Runs a `controllable` job now: its stored copy goes straight to its queue; the original is dropped. */
  async promote(jobId: string): Promise<void> {
    await this.follow();
    const stored = await this.storedCopy(jobId);
    if (stored === undefined)
      throw new JobControlError(
        'JOB_NOT_CONTROLLABLE',
        `job ${jobId} has no stored copy: publish it with { controllable: true } to promote it`,
        { jobId },
      );
    this.checkNotDue(jobId, stored);
    const t = Date.now();
    const c = copyId(t, randomUUID());
    await this.publishCopy(stored, c, 0);
    await this.append({ j: jobId, a: 'promote', t, c });
  }

  /** The publisher's hook for a `controllable` job: keeps its body and properties on the stream. */
  async storeCopy(message: OutgoingMessage, queueName: string): Promise<void> {
    const { headers, ...properties } = message.properties;
    await this.append({
      j: String(properties.messageId),
      a: 'stored',
      t: Date.now(),
      q: queueName,
      b: message.content.toString('base64'),
      h: headers ?? {},
      p: properties as Record<string, unknown>,
    });
  }

  async stop(): Promise<void> {
    this.stops++;
    this.endSettle?.();
    this.abortRead?.();
    await this.follower?.close();
    this.follower = undefined;
    this.caughtUp = undefined;
    this.declared = undefined;
  }

  /**
   * Reads the stream to its end, then follows it live. The end is this process's own `mark` record: no
   * idle timeout to wait out. Again after the follower's channel closed (a lost connection).
   */
  private follow(): Promise<void> {
    if (this.caughtUp !== undefined && this.follower?.isClosed !== true) return this.caughtUp;
    const attempt = this.catchUp();
    this.caughtUp = attempt;
    attempt.catch(() => {
      if (this.caughtUp === attempt) this.caughtUp = undefined;
    });
    return attempt;
  }

  private async catchUp(): Promise<void> {
    const stops = this.stops;
    await this.follower?.close();
    await this.ensureDeclared();
    const mark = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    let abort: (() => void) | undefined;
    const reached = new Promise<void>((resolve, reject) => {
      this.marks.set(mark, resolve);
      abort = () => reject(new Error('job control stopped'));
      this.abortRead = abort;
      timer = setTimeout(
        () => reject(new Error('job control: stream not read within 15 s')),
        CATCH_UP_TIMEOUT_MS,
      );
      // a read still running when the process wants to exit must not hold it open
      timer.unref();
    });
    // awaited only once the follower is open and the mark sent, which may take longer than the timeout
    reached.catch(() => undefined);
    try {
      const follower = await followStream(this.deps.openChannel, this.deps.stream, this.nextOffset, (r) =>
        this.visit(r),
      );
      // stopped while opening (a read ahead still running at close): no consumer may outlive the stop
      if (stops !== this.stops) {
        await follower.close();
        throw new Error('job control stopped');
      }
      this.follower = follower;
      await this.append({ j: '', a: 'mark', t: Date.now(), c: mark });
      await reached;
    } finally {
      clearTimeout(timer);
      this.marks.delete(mark);
      if (this.abortRead === abort) this.abortRead = undefined;
    }
  }

  private ensureDeclared(): Promise<void> {
    this.declared ??= this.declare();
    const declared = this.declared;
    declared.catch(() => {
      if (this.declared === declared) this.declared = undefined;
    });
    return declared;
  }

  private async declare(): Promise<void> {
    await withThrowawayChannel(this.deps.openChannel, (channel) =>
      channel.assertQueue(this.deps.stream, this.deps.assertion),
    );
  }

  private visit(record: StreamRecord): void {
    if (record.offset < this.nextOffset) return;
    this.nextOffset = record.offset + 1;
    const where = { offset: record.offset, stream: this.deps.stream };
    if (!this.reader.accept(record.content, record.properties.headers, where)) return;
    const parsed = parseControlRecord(record.content);
    if (parsed === undefined) {
      this.reader.skip('malformed', where);
      return;
    }
    if (parsed.a === 'mark') this.marks.get(parsed.c ?? '')?.();
    else if (parsed.a === 'stored') this.copies.set(parsed.j, { offset: record.offset, t: parsed.t });
    else this.decisions.set(parsed.j, parsed);
    if (++this.seen % SWEEP_EVERY === 0) this.sweep(Date.now() - CONTROL_RETENTION_MS);
  }

  private sweep(before: number): void {
    for (const [jobId, r] of this.decisions) if (r.t < before) this.decisions.delete(jobId);
    for (const [jobId, r] of this.copies) if (r.t < before) this.copies.delete(jobId);
  }

  private async storedCopy(jobId: string): Promise<ControlRecord | undefined> {
    const at = this.copies.get(jobId);
    if (at === undefined) return undefined;
    let found: ControlRecord | undefined;
    await readStream(
      this.deps.openChannel,
      this.deps.stream,
      at.offset,
      { max: 1, idleMs: COPY_READ_IDLE_MS, prefetch: 10 },
      (r) => {
        if (r.offset === at.offset && this.reader.verify(r.content, r.properties.headers))
          found = parseControlRecord(r.content);
        return r.offset < at.offset;
      },
    );
    return found?.a === 'stored' && found.j === jobId ? found : undefined;
  }

  /** A job that already came due has run (or is running): a copy would run it again. */
  private checkNotDue(jobId: string, stored: ControlRecord): void {
    if (!(dueTimeOf(this.decisions.get(jobId), stored) > Date.now()))
      throw new JobControlError('JOB_ALREADY_DUE', `job ${jobId} already came due`, { jobId });
  }

  /** Publishes a stored copy (see storedCopyMessage: into its job's planned queue, properties warren's). */
  private publishCopy(stored: ControlRecord, c: string, delayMs: number): Promise<void> {
    return this.deps.send(
      storedCopyMessage(stored, this.deps.jobs, {
        copy: c,
        delayMs,
        delay: this.deps.delay,
        timeoutMs: this.deps.timeoutMs,
      }),
    );
  }

  private async append(record: ControlRecord): Promise<void> {
    await this.ensureDeclared();
    const content = Buffer.from(JSON.stringify(record));
    await this.deps.send({
      exchange: '',
      routingKey: this.deps.stream,
      content,
      properties: {
        contentType: JSON_CONTENT_TYPE,
        persistent: true,
        headers: this.deps.trust.proof('job-control', content),
      },
      deadline: Date.now() + this.deps.timeoutMs,
      context: record.j === '' ? {} : { jobId: record.j },
    });
  }
}
