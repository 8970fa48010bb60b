import { randomUUID } from 'node:crypto';
import { withThrowawayChannel, type ConfirmPublisher, type ConnectionManager } from '../connection';
import { JSON_CONTENT_TYPE } from '../message';

/**
 * The cron ledger on the broker: the last tick the leader fired, per schedule with the run-once
 * missed-tick policy, so that the next leader knows what was missed. One message in a max-length-1
 * drop-head queue: each write replaces the record. Body: `{ "lastFired": { "<schedule id>": "<ISO time>" }
 * }`.
 */
export class CronLedger {
  constructor(
    private readonly manager: ConnectionManager,
    private readonly confirms: ConfirmPublisher,
    private readonly queueName: string,
    private readonly publishTimeoutMs: number,
  ) {}

  /** The current record; empty when there is none. The message stays in the queue. */
  async read(): Promise<Map<string, number>> {
    // Closing the channel returns the unacked record to the queue.
    return withThrowawayChannel(
      () => this.manager.openChannel(),
      async (channel) => {
        const message = await channel.get(this.queueName, { noAck: false });
        return message === false ? new Map() : parseLedger(message.content);
      },
    );
  }

  /** Replaces the record; resolves on the broker's confirm. */
  async write(lastFired: ReadonlyMap<string, number>): Promise<void> {
    const record = {
      lastFired: Object.fromEntries([...lastFired].map(([id, ms]) => [id, new Date(ms).toISOString()])),
    };
    await this.confirms.send({
      exchange: '',
      routingKey: this.queueName,
      content: Buffer.from(JSON.stringify(record)),
      properties: {
        persistent: true,
        mandatory: true,
        contentType: JSON_CONTENT_TYPE,
        messageId: randomUUID(),
        timestamp: Math.floor(Date.now() / 1000),
      },
      deadline: Date.now() + this.publishTimeoutMs,
      context: { queue: this.queueName },
    });
  }
}

/**
 * A record that is not what this class writes counts as empty: the ledger is an optimisation, never a reason
 * to fail.
 */
function parseLedger(content: Buffer): Map<string, number> {
  const result = new Map<string, number>();
  try {
    const parsed = JSON.parse(content.toString('utf8')) as { lastFired?: unknown };
    if (parsed.lastFired === null || typeof parsed.lastFired !== 'object') return result;
    for (const [id, iso] of Object.entries(parsed.lastFired as Record<string, unknown>)) {
      const ms = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
      if (Number.isFinite(ms)) result.set(id, ms);
    }
  } catch {
    /* unreadable record: nothing known */
  }
  return result;
}
