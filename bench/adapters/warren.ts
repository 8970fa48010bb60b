import { createWarren, defineTopology, Job as JobDecorator, type JobHandler, type Warren } from '../../src';
import type { Job } from '../job';
import type { Consumer, Contender, ContenderEnv } from './contender';

/** The bench's job: a quorum queue like the other AMQP contenders', at-least-once, one attempt. */
@JobDecorator('bench.job', { queue: 'jobs', attempts: 1 })
class BenchJob implements JobHandler<Job> {
  constructor(private readonly onJob: (job: Job) => void) {}
  handle(job: Job): void {
    this.onJob(job);
  }
}

/**
 * warren through its public API: publishes resolve on the broker's confirm, the consumer acks after
 * the handler. Each queue is its own namespace, so teardown deletes exactly what setup declared;
 * the delay levels (unused here) are a few classic queues so that declaring them costs nothing.
 */
export class WarrenContender implements Contender {
  readonly name = 'warren';
  private publisher?: Warren;
  private namespace = '';

  constructor(readonly env: ContenderEnv) {}

  private options(namespace: string) {
    return {
      url: this.env.amqpUrl,
      namespace,
      topology: defineTopology({ queues: { jobs: {} } }),
      delay: { queueType: 'classic' as const, levels: 4 },
    };
  }

  async setup(queue: string): Promise<void> {
    this.namespace = queue;
    this.publisher = await createWarren({ ...this.options(queue), jobs: [BenchJob] });
  }

  publish(job: Job): Promise<void> {
    return this.requirePublisher()
      .publish(BenchJob, job)
      .then(() => undefined);
  }

  async publishBulk(jobs: Job[]): Promise<void> {
    const warren = this.requirePublisher();
    await Promise.all(jobs.map((job) => warren.publish(BenchJob, job)));
  }

  prefill(jobs: Job[]): Promise<void> {
    return this.publishBulk(jobs);
  }

  async consume(concurrency: number, handler: (job: Job) => void): Promise<Consumer> {
    const worker = await createWarren({ ...this.options(this.namespace), handlers: [new BenchJob(handler)], jobDefaults: { concurrency } });
    await worker.start();
    return {
      async stop() {
        await worker.close();
      },
    };
  }

  async teardown(opts: { deleteQueue: boolean }): Promise<void> {
    const warren = this.publisher;
    if (!warren) return;
    if (opts.deleteQueue) await warren.deleteTopology();
    await warren.close();
  }

  private requirePublisher(): Warren {
    if (!this.publisher) throw new Error('warren contender used before setup()');
    return this.publisher;
  }
}
