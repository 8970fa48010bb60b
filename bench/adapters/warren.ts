import {
  createWarren,
  defineTopology,
  Job as JobDecorator,
  type JobContext,
  type JobHandler,
  type PublishManyResult,
  type Warren,
  type WarrenOptions,
} from '../../src';
import type { Job } from '../lib/job';
import type { Consumer, Contender, ContenderEnv, ContenderFeatures } from './contender';

/** The bench's job: a quorum queue like the other AMQP contenders', at-least-once, one attempt. */
@JobDecorator('bench.job', { queue: 'jobs', attempts: 1 })
class BenchJob implements JobHandler<Job> {
  constructor(private readonly onJob: (job: Job, ctx: JobContext) => void | Promise<void>) {}
  handle(job: Job, ctx: JobContext): void | Promise<void> {
    return this.onJob(job, ctx);
  }
}

/**
 * The retry scenarios' job classes, one per backoff for the life of the process, as an application defines its
 * job classes once: a class made anew for each run gave every run's handler a new map, and the worker's
 * optimized code deoptimized on it each run (V8 `wrong map`), a cost an application never pays.
 */
const FAIL_ONCE_JOBS = new Map<number, ReturnType<typeof makeFailOnceJob>>();

function failOnceJob(backoffMs: number) {
  const known = FAIL_ONCE_JOBS.get(backoffMs);
  if (known !== undefined) return known;
  const job = makeFailOnceJob(backoffMs);
  FAIL_ONCE_JOBS.set(backoffMs, job);
  return job;
}

/** The retry scenarios: two attempts, the first always fails; the backoff (ms) is the scenario's. */
function makeFailOnceJob(backoffMs: number) {
  @JobDecorator('bench.retry', { queue: 'jobs', attempts: 2, backoff: { type: 'fixed', delayMs: backoffMs } })
  class FailOnceJob implements JobHandler<Job> {
    constructor(private readonly onCompleted: (job: Job) => void) {}
    handle(job: Job, ctx: JobContext): void {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
      this.onCompleted(job);
    }
  }
  return FailOnceJob;
}

/** How a contender's topology differs from warren's defaults. */
export interface TopologyVariant {
  /** `warren-in-place`: the quorum queue of a retry scenario with a backoff retries in place (`inPlaceRetryMs`). */
  readonly inPlaceRetries?: boolean;
  /**
   * `warren-cqv2`: a classic job queue declared as RabbitMQ's classic queue version 2 (`x-queue-version`, through
   * the queue's `arguments`), the storage 3.13+ uses for every classic queue and 3.10-3.12 have as an opt-in.
   */
  readonly classicQueueVersion?: 2;
}

/**
 * The bench's topology: one job queue of the scenario's type; with `jobsExchange`, bound to a direct exchange
 * `jobs` that warren publishes through (the wire contract's routing).
 */
export function benchTopology(features: ContenderFeatures, variant: TopologyVariant = {}) {
  const type = features.queueType ?? 'quorum';
  const inPlaceRetryMs =
    variant.inPlaceRetries && type === 'quorum' ? features.retryBackoffMs || undefined : undefined;
  if (inPlaceRetryMs !== undefined) return defineTopology({ queues: { jobs: { type, inPlaceRetryMs } } });
  const version =
    variant.classicQueueVersion && type === 'classic'
      ? { arguments: { 'x-queue-version': variant.classicQueueVersion } }
      : {};
  if (!features.jobsExchange) return defineTopology({ queues: { jobs: { type, ...version } } });
  return defineTopology({
    exchanges: { jobs: { type: 'direct' } },
    queues: {
      jobs: {
        type,
        ...version,
        bind: [
          { exchange: 'jobs', pattern: 'bench.job' },
          { exchange: 'jobs', pattern: 'bench.retry' },
        ],
      },
    },
  });
}

/** What a prefill publishes at once (see `prefill`). */
const PREFILL_WINDOW = 5_000;

function throwFirstFailure(results: readonly PublishManyResult[]): void {
  for (const result of results) if (result.status === 'failed') throw result.error;
}

/**
 * warren through its public API: publishes resolve on the broker's confirm, the consumer acks after
 * the handler; bulk is `publishMany`. Each queue is its own namespace, so teardown deletes exactly what setup declared.
 * The delay levels are a few classic queues, so that declaring them costs nothing, except where a
 * scenario measures delays: there they are warren's defaults (29 quorum levels of 100 ms).
 */
export class WarrenContender implements Contender {
  /** warren's default delay unit, which the delay scenarios use. */
  readonly delayUnitMs = 100;
  private publisher?: Warren;
  private options?: WarrenOptions;
  private FailOnceJob = failOnceJob(0);

  /**
   * `extra`: options added to every instance (the profile's `--tracing` passes its instrumentation;
   * `warren-classic-levels` its `delay`).
   */
  constructor(
    readonly env: ContenderEnv,
    private readonly extra: Partial<WarrenOptions> = {},
    readonly name: string = 'warren',
    private readonly variant: TopologyVariant = {},
  ) {}

  async setup(queue: string, features: ContenderFeatures = {}): Promise<void> {
    // a retry with a backoff goes through the delay levels as a user's would: warren's defaults
    const defaultLevels = features.delays || Boolean(features.retryBackoffMs);
    this.FailOnceJob = failOnceJob(features.retryBackoffMs ?? 0);
    this.options = {
      url: this.env.amqpUrl,
      namespace: queue,
      topology: benchTopology(features, this.variant),
      ...(defaultLevels ? {} : { delay: { queueType: 'classic' as const, levels: 4 } }),
      ...this.extra,
    };
    this.publisher = await createWarren({ ...this.options, jobs: [BenchJob, this.FailOnceJob] });
    // A namespace in use has its job-control stream, which a starting worker reads ahead; a new one gets
    // it with the first action or delayed job, and each worker's first delayed job waits for that read.
    if (features.delays) await this.publisher.delayed.cancel('bench-never-published');
  }

  publish(job: Job): Promise<void> {
    return this.requirePublisher()
      .publish(BenchJob, job)
      .then(() => undefined);
  }

  async publishBulk(jobs: Job[]): Promise<void> {
    const results = await this.requirePublisher().publishMany(jobs.map((data) => ({ job: BenchJob, data })));
    throwFirstFailure(results);
  }

  /**
   * In windows of PREFILL_WINDOW, each confirmed before the next: 51,000 at once outlasted the publisher's
   * 10 s confirm timeout on a loaded broker (the untimed prefill failed the run). The timed publishes stay
   * `publishBulk`.
   */
  async prefill(jobs: Job[]): Promise<void> {
    for (let i = 0; i < jobs.length; i += PREFILL_WINDOW)
      await this.publishBulk(jobs.slice(i, i + PREFILL_WINDOW));
  }

  async publishDelayed(job: Job, delayMs: number): Promise<void> {
    await this.requirePublisher().publish(BenchJob, job, { delayMs });
  }

  async prefillRetryable(jobs: Job[]): Promise<void> {
    for (let i = 0; i < jobs.length; i += PREFILL_WINDOW) {
      const window = jobs.slice(i, i + PREFILL_WINDOW);
      const results = await this.requirePublisher().publishMany(
        window.map((data) => ({ job: this.FailOnceJob, data })),
      );
      throwFirstFailure(results);
    }
  }

  consume(concurrency: number, handler: (job: Job) => void | Promise<void>): Promise<Consumer> {
    return this.startWorker(concurrency, new BenchJob(handler));
  }

  consumeWithFollowUp(next: (job: Job) => Job | undefined): Promise<Consumer> {
    return this.startWorker(
      1,
      new BenchJob(async (job, ctx) => {
        const followUp = next(job);
        if (followUp) await ctx.publish('bench.job', followUp);
      }),
    );
  }

  consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    return this.startWorker(concurrency, new this.FailOnceJob(onCompleted));
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    const warren = this.publisher;
    if (!warren) return;
    if (opts.deleteQueue) await warren.deleteTopology();
    await warren.close();
  }

  private async startWorker(concurrency: number, handler: object): Promise<Consumer> {
    if (!this.options) throw new Error('warren contender used before setup()');
    const worker = await createWarren({ ...this.options, handlers: [handler], jobDefaults: { concurrency } });
    await worker.start();
    return {
      async stop() {
        await worker.close();
      },
    };
  }

  private requirePublisher(): Warren {
    if (!this.publisher) throw new Error('warren contender used before setup()');
    return this.publisher;
  }
}
