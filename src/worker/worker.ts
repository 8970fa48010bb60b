import type { Logger } from '../core';
import type { ConnectionManager } from '../connection';
import { JobProcessor, type ProcessorDeps } from './job-processor';
import { QueueConsumer } from './queue-consumer';

export interface WorkerDeps extends ProcessorDeps {
  readonly manager: ConnectionManager;
  readonly reapplyTopology: () => Promise<void>;
  readonly concurrencyOf: (queueName: string) => number;
}

export interface ConsumerHealth {
  readonly queue: string;
  readonly consuming: boolean;
  readonly paused: boolean;
  readonly activeJobs: number;
  /** Deliveries handled since the process started: a processing rate is its change over time. */
  readonly handled: number;
}

/** The consumers of every queue this process has handlers for. */
export class Worker {
  private readonly consumers = new Map<string, QueueConsumer>();
  private readonly paused = new Set<string>();
  private started = false;

  constructor(deps: WorkerDeps, log: Logger) {
    const processor = new JobProcessor(deps);
    const queueNames = new Set([...deps.jobs.values()].map((job) => job.planned.queueName));
    for (const queue of deps.plan.queues) {
      if (queue.role !== 'job' || !queueNames.has(queue.name)) continue;
      this.consumers.set(
        queue.key,
        new QueueConsumer(
          deps.manager,
          queue,
          deps.concurrencyOf(queue.name),
          processor,
          deps.reapplyTopology,
          log.child({ queue: queue.key }),
        ),
      );
    }
  }

  /** The connection's ready hook: a channel per consumer, consuming again if the worker runs. */
  async open(generation: number): Promise<void> {
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.open(generation)));
  }

  async start(): Promise<void> {
    this.started = true;
    await Promise.all(
      [...this.consumers.entries()]
        .filter(([key]) => !this.paused.has(key))
        .map(([, consumer]) => consumer.start()),
    );
  }

  get isStarted(): boolean {
    return this.started;
  }

  /** Stops consuming a queue (running jobs finish); survives reconnects until `resume`. */
  async pause(queueKey: string): Promise<void> {
    this.paused.add(queueKey);
    await this.consumers.get(queueKey)?.pause();
  }

  async resume(queueKey: string): Promise<void> {
    this.paused.delete(queueKey);
    if (this.started) await this.consumers.get(queueKey)?.resume();
  }

  async stop(graceMs: number): Promise<void> {
    this.started = false;
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.stop(graceMs)));
  }

  health(): ConsumerHealth[] {
    return [...this.consumers.entries()].map(([queue, consumer]) => ({
      queue,
      consuming: consumer.isConsuming,
      paused: this.paused.has(queue),
      activeJobs: consumer.activeJobs,
      handled: consumer.handled,
    }));
  }
}
