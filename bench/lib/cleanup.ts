import { connectAmqp } from '../adapters/amqplib';
import type { ContenderEnv } from '../adapters/contender';
import { withTimeout } from './timeout';

const SWEEP_TIMEOUT_MS = 60_000;

/**
 * Remembers every queue the suite declared so that whatever a failed run left behind
 * is deleted at the end: the RabbitMQ and Redis servers are shared with other test runs.
 */
export class Cleanup {
  private readonly amqpQueues = new Set<string>();
  /** Whether a Redis contender ran: only then is Redis swept (and BullMQ loaded). */
  private usedRedis = false;

  constructor(private readonly env: ContenderEnv) {}

  trackAmqpQueue(queue: string): void {
    this.amqpQueues.add(queue);
  }

  trackRedis(): void {
    this.usedRedis = true;
  }

  /** Returns what it could not delete. */
  async sweep(): Promise<string[]> {
    const problems: string[] = [];
    await withTimeout(this.sweepRabbitmq(), SWEEP_TIMEOUT_MS, 'sweep').catch((err: Error) =>
      problems.push(`rabbitmq (${[...this.amqpQueues].join(', ')}): ${err.message}`),
    );
    await withTimeout(this.sweepRedis(), SWEEP_TIMEOUT_MS, 'sweep').catch((err: Error) =>
      problems.push(`redis (keys ${this.env.redisPrefix}:*): ${err.message}`),
    );
    return problems;
  }

  private async sweepRabbitmq(): Promise<void> {
    if (this.amqpQueues.size === 0) return;
    const connection = await connectAmqp(this.env.amqpUrl);
    try {
      const channel = await connection.createChannel();
      // RabbitMQ answers delete-ok for a queue that is already gone, so this is idempotent
      for (const queue of this.amqpQueues) await channel.deleteQueue(queue);
      this.amqpQueues.clear();
    } finally {
      await connection.close();
    }
  }

  /** Every BullMQ key of this run shares the run's prefix, so a SCAN finds whatever obliterate missed. */
  private async sweepRedis(): Promise<void> {
    if (!this.usedRedis) return;
    const { Queue } = await import('bullmq');
    const queue = new Queue('sweep', {
      connection: { host: this.env.redisHost, port: this.env.redisPort },
      prefix: this.env.redisPrefix,
    });
    try {
      const client = await queue.getBackend().client;
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, { MATCH: `${this.env.redisPrefix}:*`, COUNT: 1000 });
        if (keys.length > 0) await client.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      await queue.close();
    }
  }
}
