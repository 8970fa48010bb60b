import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import { ConfigurationError, JobControlError, validationMessage } from '../core';
import { withThrowawayChannel, type OutgoingMessage } from '../connection';
import { JSON_CONTENT_TYPE } from '../message';
import type { RecordTrust } from '../records';
import type { DelayPlan, PlannedJob, QueueAssertion } from '../topology';
import { READ_AHEAD_SETTLE_MS } from './control-stream';
import { dueTimeOf, knownOfJob, type CancelledJob } from './cancelled-job';
import { storedCopyMessage } from './stored-copy';
import { controlCheckpoints } from './control-checkpoints';
import { ControlView } from './control-view';
import {
  copyId,
  judge,
  judgeDebounced,
  MAX_ID_CHARS,
  type ControlRecord,
  type JobVerdict,
} from './control-record';

/** An action's job id, checked as every reader checks it (a record they would drop must not be confirmed). */
function checkJobId(action: string, jobId: unknown): void {
  if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > MAX_ID_CHARS)
    throw new ConfigurationError(
      validationMessage(`${action} jobId`, `must be a string of 1 to ${MAX_ID_CHARS} characters`, jobId),
    );
}

/** A `controllable` job waiting for its due time (`ops.delayed.dueNext`). */
export interface DelayedJob {
  readonly jobId: string;
  readonly name: string;
  /** The job queue's key, when the job is in this plan. */
  readonly queue?: string;
  readonly dueAt: Date;
}

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
  /** The stream's checkpoint stream, as the plan declares it. */
  readonly checkpoints: { readonly name: string; readonly assertion: QueueAssertion };
  /** The broker user of this process's connection, when known (a checkpoint's proof without a key). */
  readonly username: () => string | undefined;
}

/**
 * Cancel, promote and reschedule delayed jobs (docs/guide/job-control.md). The delay levels
 * cannot be searched, so the decisions are records on a stream that every process reads to its end and
 * then follows, into a map by job id; a worker looks a delayed job up there when it comes due. A
 * consuming worker starts that read as it starts if the stream exists; a process that only publishes
 * pays nothing until it acts. The first read starts at the newest checkpoint this process can trust
 * (streams/stream-checkpoints.ts); a process that read far past it writes a new one.
 */
export class JobControl {
  private readonly view: ControlView;
  private declared: Promise<void> | undefined;
  private stops = 0;
  /** Whether a read ahead waited (or needed not): later ones, after a reconnect, read at once. */
  private settled = false;
  /** Ends a read ahead's wait, if one waits (a stop must not wait it out). */
  private endSettle: (() => void) | undefined;

  constructor(private readonly deps: JobControlDeps) {
    this.view = new ControlView({
      stream: deps.stream,
      openChannel: deps.openChannel,
      trust: deps.trust,
      keeper: controlCheckpoints(deps),
      ensureDeclared: () => this.ensureDeclared(),
      appendMark: (mark) => this.append({ j: '', a: 'mark', t: Date.now(), c: mark }),
    });
  }

  /** What a worker does with a delayed job of this id (and copy header) that came due now. */
  async decide(jobId: string, copy: unknown, now: number): Promise<JobVerdict> {
    await this.view.follow();
    const record = this.view.decisions.get(jobId);
    const verdict = judge(record, copy, now);
    if (verdict !== 'run' || typeof copy !== 'string' || record?.c === copy) return verdict;
    // A copy newer than every record read (a promote's comes at once): its record, and a racing promote's,
    // may be on the stream already; read up to a mark so that only the latest of them runs.
    await this.view.sync();
    return judge(this.view.decisions.get(jobId), copy, now);
  }

  /**
   * What a worker does with a debounced copy that came due (docs/guide/batch-and-debounce.md): dropped at
   * once if a later publish of its key is known; else the view reads up to a mark of its own first, so that
   * every publish of the key confirmed before now is seen, and only the latest copy runs.
   */
  async decideDebounced(debounceId: string, copy: unknown): Promise<JobVerdict> {
    await this.view.follow();
    if (judgeDebounced(this.view.decisions.get(debounceId), copy) === 'drop') return 'drop';
    await this.view.sync();
    return judgeDebounced(this.view.decisions.get(debounceId), copy);
  }

  /**
   * The publisher's hook for a debounced publish: its copy id and when the copy is due, `periodMs` from
   * now but no later than `maxWaitMs` after the burst began (the latest record of the key, while its copy is
   * not due yet); then `send` publishes the copy, and its record follows (the copy first: a failure between
   * the two runs the job rather than never).
   */
  async debounce(
    debounceId: string,
    options: { readonly periodMs: number; readonly maxWaitMs: number | undefined },
    send: (copy: string, delayMs: number) => Promise<void>,
  ): Promise<void> {
    await this.view.follow();
    const t = Date.now();
    const latest = this.view.decisions.get(debounceId);
    const isOpen = latest?.a === 'debounce' && latest.u! > t;
    // a new burst names the last copy of the one before: that copy still runs when it comes due
    const f = isOpen ? latest.f! : t;
    const l = isOpen ? latest.l : latest?.a === 'debounce' ? latest.c : undefined;
    const u = Math.min(t + options.periodMs, f + (options.maxWaitMs ?? Number.POSITIVE_INFINITY));
    const c = copyId(t, randomUUID());
    await send(c, Math.max(1, u - t));
    await this.append({ j: debounceId, a: 'debounce', t, u, c, f, ...(l !== undefined ? { l } : {}) });
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
    if (!this.view.isReading && !this.settled) {
      this.settled = true;
      const stops = this.stops;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, READ_AHEAD_SETTLE_MS).unref();
        this.endSettle = () => resolve(clearTimeout(timer));
      });
      if (stops !== this.stops) return;
    }
    await this.view.follow();
  }

  /**
   * The `controllable` delayed jobs due next (soonest first), of one job queue (its key) or of all: what the
   * stored copies on the stream say, after reading it to its end.
   */
  async dueNext(
    limit: number,
    /** The job queue's key of a queue's full name (a lane's is its queue's). */
    keyOf: (queueName: string) => string | undefined,
    queue?: string,
  ): Promise<DelayedJob[]> {
    await this.view.follow();
    const key = (name: string | undefined) => (name === undefined ? undefined : keyOf(name));
    const isListed = (name: string | undefined) => queue === undefined || key(name) === queue;
    return this.view.dueNext(Date.now(), limit, isListed).map((j) => {
      const jobQueue = key(j.queue);
      return {
        jobId: j.jobId,
        name: j.name,
        dueAt: new Date(j.dueAt),
        ...(jobQueue !== undefined ? { queue: jobQueue } : {}),
      };
    });
  }

  /** Records the cancel, with what is known of the job (knownOfJob); an unreadable stream leaves it unknown. */
  async cancel(jobId: string): Promise<CancelledJob> {
    checkJobId('cancel', jobId);
    const known = await this.view
      .follow()
      .then(async () =>
        knownOfJob(this.view.decisions.get(jobId), await this.view.storedCopy(jobId), this.deps.jobs),
      )
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
    checkJobId('reschedule', jobId);
    await this.view.follow();
    const stored = await this.view.storedCopy(jobId);
    if (stored === undefined) return this.append({ j: jobId, a: 'reschedule', t: Date.now(), u: runAt });
    this.checkNotDue(jobId, stored);
    const t = Date.now();
    const c = copyId(t, randomUUID());
    await this.publishCopy(stored, c, runAt - t);
    await this.append({ j: jobId, a: 'reschedule', t, u: runAt, c });
  }

  /** Runs a `controllable` job now: its stored copy goes straight to its queue; the original is dropped. */
  async promote(jobId: string): Promise<void> {
    checkJobId('promote', jobId);
    await this.view.follow();
    const stored = await this.view.storedCopy(jobId);
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
    await this.view.stop();
    this.declared = undefined;
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

  /** A job that already came due has run (or is running): a copy would run it again. */
  private checkNotDue(jobId: string, stored: ControlRecord): void {
    if (!(dueTimeOf(this.view.decisions.get(jobId), stored) > Date.now()))
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
