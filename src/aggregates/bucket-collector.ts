import type { Instrumentation, InstrumentationTarget, ProcessInfo, ProcessScope } from '../core';
import { HEADERS } from '../message';
import { DenseHistogram } from './latency-histogram';

/** What one process counted for one queue in the open bucket. */
export class QueueTally {
  completed = 0;
  failed = 0;
  retried = 0;
  dead = 0;
  readonly wait = new DenseHistogram();
  readonly run = new DenseHistogram();
}

/** A job running in this process now, as the status reply lists it. */
export interface RunningJob {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  /** When the attempt started, ms since epoch. */
  readonly startedAt: number;
  /** The latest `ctx.progress`: a number as it is, anything else as JSON cut to 200 characters. */
  progress?: number | string;
}

/** The status reply lists at most this many running jobs (the oldest first). */
export const MAX_LISTED_RUNNING = 50;
const MAX_PROGRESS_CHARS = 200;

const KEEP_SCOPE = <T>(fn: () => T): T => fn();
const CARRY_NOTHING = (): void => undefined;

/**
 * The job path's side of the aggregates: an instrumentation (core/instrumentation.ts) that counts each
 * run into the open bucket's tally of its queue. Per job: one map look-up, a histogram bin for the wait
 * (first attempts, from the due time of a delayed job, else from the first publish) and one for the run
 * time, a counter; no I/O, no timer. The writer takes the tallies when the bucket closes ({@link take}).
 */
export class BucketCollector implements Instrumentation {
  private open = new Map<string, QueueTally>();
  /** What happened after the open bucket's end, before the writer took it (its timer fired late). */
  private later = new Map<string, QueueTally>();
  private openEnd: number;
  /** When the job most recently started on each queue was enqueued (or due): the oldest-waiting estimate. */
  private readonly lastStartedFrom = new Map<string, number>();
  private target: InstrumentationTarget | undefined;
  /** The runs in progress, by job id (a job runs once at a time per process, but ids are not trusted). */
  private readonly runs = new Map<string, RunningJob>();

  /** `bucketMs`: counts go to the bucket their time falls in, however late the writer's timer fires. */
  constructor(private readonly bucketMs = 60_000) {
    this.openEnd = Math.floor(Date.now() / bucketMs) * bucketMs + bucketMs;
  }

  attach(target: InstrumentationTarget): void {
    this.target = target;
    target.on('retried', (e) => {
      this.tally(e.queue).retried += 1;
    });
    target.on('deadLettered', (e) => {
      this.tally(e.queue).dead += 1;
    });
    target.on('progress', (e) => {
      const run = this.runs.get(e.jobId);
      if (run !== undefined) run.progress = progressOf(e.progress);
    });
  }

  process = (info: ProcessInfo): ProcessScope => {
    const queue = info.queue;
    const startedAt = Date.now();
    if (info.attempt === 1) {
      const from = dueTime(info, startedAt);
      this.tally(queue).wait.add(startedAt - from);
      this.lastStartedFrom.set(queue, from);
    }
    const started = performance.now();
    const run: RunningJob = { jobId: info.jobId, name: info.name, queue, attempt: info.attempt, startedAt };
    this.runs.set(info.jobId, run);
    return {
      run: KEEP_SCOPE,
      carry: CARRY_NOTHING,
      end: (outcome) => {
        if (this.runs.get(run.jobId) === run) this.runs.delete(run.jobId);
        if (outcome.kind === 'aborted') return;
        // The bucket open when the run ended: a run across a boundary counts where it finished.
        const tally = this.tally(queue);
        tally.run.add(performance.now() - started);
        if (outcome.kind === 'completed') tally.completed += 1;
        else tally.failed += 1;
      },
    };
  };

  /** The jobs running now, oldest first, at most {@link MAX_LISTED_RUNNING}. */
  running(): RunningJob[] {
    const listed: RunningJob[] = [];
    for (const run of this.runs.values()) {
      if (listed.length === MAX_LISTED_RUNNING) break;
      listed.push({ ...run });
    }
    return listed;
  }

  /** The open bucket's tallies; what came after its end is the next bucket's. */
  take(): Map<string, QueueTally> {
    const taken = this.open;
    this.open = this.later;
    this.later = new Map();
    this.openEnd = Math.floor(Date.now() / this.bucketMs) * this.bucketMs + this.bucketMs;
    return taken;
  }

  /** The job queues and how to ask the broker their depth, once attached. */
  queues(): InstrumentationTarget['queues'] {
    return this.target?.queues ?? [];
  }

  /** Messages ready in a queue now; undefined when the broker cannot tell (disconnected, no queue). */
  async depth(queueName: string): Promise<number | undefined> {
    const target = this.target;
    if (target === undefined || !target.isConnected()) return undefined;
    return target.messageCount(queueName).catch(() => undefined);
  }

  /** When the job last started on the queue was enqueued (or due), ms; undefined before any started. */
  lastStartedWaitFrom(queue: string): number | undefined {
    return this.lastStartedFrom.get(queue);
  }

  private tally(queue: string): QueueTally {
    const bucket = Date.now() < this.openEnd ? this.open : this.later;
    let tally = bucket.get(queue);
    if (tally === undefined) {
      tally = new QueueTally();
      bucket.set(queue, tally);
    }
    return tally;
  }
}

/**
 * Waiting starts at the due time of a delayed job (a delay is not waiting), else at the first publish; a
 * due time in the future (a foreign header) is not believed.
 */
function dueTime(info: ProcessInfo, now: number): number {
  const due = info.headers[HEADERS.deliverAt] ?? info.headers[HEADERS.delayed];
  return typeof due === 'number' && due > info.enqueuedAt && due <= now ? due : info.enqueuedAt;
}

function progressOf(progress: unknown): number | string {
  if (typeof progress === 'number' && Number.isFinite(progress)) return progress;
  const text = JSON.stringify(progress) ?? String(progress);
  return text.length > MAX_PROGRESS_CHARS ? `${text.slice(0, MAX_PROGRESS_CHARS)}…` : text;
}
