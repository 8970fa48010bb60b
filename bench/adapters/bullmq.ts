import { Queue, Worker, type Job as BullJob } from 'bullmq';
import type { Job } from '../lib/job';
import type { Consumer, Contender, ContenderEnv } from './contender';

/** addBulk runs as one MULTI; chunks keep each one short, as an application enqueuing many jobs would. */
const BULK_CHUNK = 1000;
const JOB_NAME = 'bench';

/**
 * Completed jobs are removed, as an AMQP ack removes the message; BullMQ's default keeps them all in Redis.
 * Durability differs by construction: Redis acknowledges from memory (this machine's Redis has no AOF/RDB).
 */
export class BullmqContender implements Contender {
  readonly name = 'bullmq';
  readonly delayUnitMs = 1;
  private queue?: Queue<Job>;
  private queueName = '';

  constructor(private readonly env: ContenderEnv) {}

  async setup(queue: string): Promise<void> {
    this.queueName = queue;
    this.queue = new Queue<Job>(queue, {
      connection: { host: this.env.redisHost, port: this.env.redisPort },
      prefix: this.env.redisPrefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
    });
    this.queue.on('error', (err) => console.error(`bullmq queue error: ${err.message}`));
    await this.queue.waitUntilReady();
  }

  async publish(job: Job): Promise<void> {
    await this.requireQueue().add(JOB_NAME, job);
  }

  async publishBulk(jobs: Job[]): Promise<void> {
    const queue = this.requireQueue();
    for (let i = 0; i < jobs.length; i += BULK_CHUNK) {
      await queue.addBulk(jobs.slice(i, i + BULK_CHUNK).map((data) => ({ name: JOB_NAME, data })));
    }
  }

  prefill(jobs: Job[]): Promise<void> {
    return this.publishBulk(jobs);
  }

  async publishDelayed(job: Job, delayMs: number): Promise<void> {
    await this.requireQueue().add(JOB_NAME, job, { delay: delayMs });
  }

  async prefillRetryable(jobs: Job[]): Promise<void> {
    const queue = this.requireQueue();
    for (let i = 0; i < jobs.length; i += BULK_CHUNK) {
      await queue.addBulk(
        jobs.slice(i, i + BULK_CHUNK).map((data) => ({
          name: JOB_NAME,
          data,
          opts: { attempts: 2, backoff: { type: 'fixed', delay: 0 } },
        })),
      );
    }
  }

  consumeFailingOnce(concurrency: number, onCompleted: (job: Job) => void): Promise<Consumer> {
    return this.startWorker(concurrency, (job) => {
      if (job.attemptsMade === 0) throw new Error('first attempt fails');
      onCompleted(job.data);
    });
  }

  consumeWithFollowUp(next: (job: Job) => Job | undefined): Promise<Consumer> {
    const queue = this.requireQueue();
    return this.startWorker(1, async (job) => {
      const followUp = next(job.data);
      if (followUp) await queue.add(JOB_NAME, followUp);
    });
  }

  consume(concurrency: number, handler: (job: Job) => void | Promise<void>): Promise<Consumer> {
    return this.startWorker(concurrency, (job) => handler(job.data));
  }

  private async startWorker(
    concurrency: number,
    processor: (job: BullJob<Job>) => unknown,
  ): Promise<Consumer> {
    const worker = new Worker<Job>(this.queueName, async (job) => processor(job), {
      connection: { host: this.env.redisHost, port: this.env.redisPort, maxRetriesPerRequest: null },
      prefix: this.env.redisPrefix,
      concurrency,
    });
    worker.on('error', (err) => console.error(`bullmq worker error: ${err.message}`));
    await worker.waitUntilReady();
    return { stop: () => worker.close() };
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    if (!this.queue) return;
    if (opts.deleteQueue) await this.queue.obliterate({ force: true });
    await this.queue.close();
  }

  private requireQueue(): Queue<Job> {
    if (!this.queue) throw new Error('bullmq contender used before setup()');
    return this.queue;
  }
}
