import type { Logger } from '../core';
import type { OutboxPool, PgPoolClient, ResolvedOutboxRelayOptions } from './options';

/**
 * What wakes the relay: a notification on the table's channel (every committed write sends one), or
 * the poll interval. The LISTEN connection is one client held from the pool; when it fails, it is
 * re-opened with backoff, and polling alone keeps the relay going meanwhile.
 */
export class RelayWake {
  private client: PgPoolClient | undefined;
  private notified = false;
  private readonly waiters = new Set<() => void>();
  private stopped = false;
  private failures = 0;
  private readonly lostClients = new WeakSet<PgPoolClient>();

  constructor(
    private readonly pool: OutboxPool,
    private readonly listenSql: string,
    private readonly channel: string,
    private readonly settings: ResolvedOutboxRelayOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    void this.listen();
  }

  stop(): void {
    this.stopped = true;
    this.release();
    this.fire();
  }

  /** Resolves on a notification (or one that came since the last wait), after `ms`, or on stop. */
  wait(ms: number): Promise<void> {
    if (this.notified || this.stopped) {
      this.notified = false;
      return Promise.resolve();
    }
    return this.pause(ms, true);
  }

  /** Resolves after `ms` or on stop; notifications do not cut it short (a backoff after a failure). */
  sleep(ms: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.pause(ms, false);
  }

  private pause(ms: number, byNotification: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        this.notified = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      const waiter = byNotification ? done : () => (this.stopped ? done() : undefined);
      this.waiters.add(waiter);
    });
  }

  /** Wakes every waiting batch loop (or the next to wait): each claims in turn what has come. */
  private fire(): void {
    this.notified = true;
    for (const waiter of [...this.waiters]) waiter();
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    let client: PgPoolClient | undefined;
    try {
      client = await this.pool.connect();
      client.on('error', (error) => this.lost(client!, error));
      client.on('notification', (message) => {
        if (message.channel === this.channel) this.fire();
      });
      await client.query(this.listenSql);
      // Destroyed rather than returned: a pooled connection must not keep listening.
      if (this.stopped) return void client.release(true);
      this.client = client;
      this.failures = 0;
      // Rows committed while nobody listened: look now.
      this.fire();
    } catch (error) {
      if (client) this.lost(client, error);
      else this.retry(error);
    }
  }

  private lost(client: PgPoolClient, error: unknown): void {
    // The error event and the failing query may both report one loss.
    if (this.lostClients.has(client)) return;
    this.lostClients.add(client);
    if (this.client === client) this.client = undefined;
    try {
      client.release(error instanceof Error ? error : true);
    } catch {
      // released already
    }
    this.retry(error);
  }

  private retry(error: unknown): void {
    if (this.stopped) return;
    this.failures++;
    const waitMs = Math.min(this.settings.retryMaxMs, this.settings.retryBaseMs * 2 ** (this.failures - 1));
    this.log.warn(
      { err: error, channel: this.channel, retryInMs: waitMs },
      'outbox relay lost its LISTEN connection; polling until it is back',
    );
    setTimeout(() => void this.listen(), waitMs).unref();
  }

  private release(): void {
    const client = this.client;
    this.client = undefined;
    try {
      // Destroyed rather than returned: a pooled connection must not keep listening.
      client?.release(true);
    } catch {
      // released already
    }
  }
}
