import { lostCreateRace, type PublishedJob, type PublishOptions } from '../core';
import { readJobDefinition, type JobRef, type JobData } from '../decorators';
import { OutboxError } from './outbox-error';
import { outboxStatements, outboxTableSql, type OutboxStatements } from './outbox-sql';
import type { OutboxTransaction, ResolvedOutboxOptions } from './options';

// Warren's typing of `publish` by job name (see WarrenJobs in warren.ts), repeated: outbox is below warren.
type JobName<TJobs> = [keyof TJobs] extends [never] ? string : Extract<keyof TJobs, string>;
type JobPayload<TJobs, K> = K extends keyof TJobs ? TJobs[K] : unknown;

/** Per-write options: those of `warren.publish` but `timeoutMs` (the relay's own timeout applies). */
export type OutboxPublishOptions = Omit<PublishOptions, 'timeoutMs'>;

/** What `outbox.publish` wrote. */
export interface OutboxPublished extends PublishedJob {
  /**
   * True when a row with this job id was already waiting in the table: nothing was written (the
   * first row wins) and the caller's transaction goes on unharmed.
   */
  readonly duplicate: boolean;
}

/** Rows waiting for the broker, for metrics and the operations API. */
export interface OutboxBacklog {
  /** Rows in the table, including those a relay is publishing right now. */
  readonly size: number;
  /** Age of the oldest row in ms (the database's clock), 0 when empty. */
  readonly oldestAgeMs: number;
}

/** The options a row carries to the relay (its `options` column). */
export interface OutboxRowOptions {
  readonly priority?: number;
  readonly correlationId?: string;
  readonly headers?: PublishOptions['headers'];
  readonly attempts?: number;
  /** When the job is due (ms since epoch), for a delayed job. */
  readonly runAtMs?: number;
  /** Set by the relay: how many times this row was refused as a job no topology declares. */
  readonly relayFailures?: number;
  /** Set by the relay once it gives up on the row (`unknown-job`): never claimed again, kept for a human. */
  readonly parkedReason?: string;
}

/** The checks `warren.publish` runs, given by the warren: job name, options, payload against the schema. */
export type ValidateJob = (
  name: string,
  data: unknown,
  options: PublishOptions,
) => Promise<PublishedJob & { readonly payload: unknown }>;

/**
 * The transactional outbox of a warren (`warren.outbox`): `publish` writes a job into the outbox
 * table inside your own PostgreSQL transaction; the relay (any warren process created with
 * `outbox.relay` on) publishes committed rows with confirms and deletes each only after its confirm.
 * A rolled-back transaction publishes nothing; a committed one is published at least once (exactly
 * once barring faults), with the row's job id as message id.
 *
 * @example
 * const client = await pool.connect();
 * try {
 *   await client.query('BEGIN');
 *   const { rows } = await client.query('INSERT INTO orders (total) VALUES ($1) RETURNING id', [42]);
 *   await warren.outbox.publish(client, SendReceipt, { orderId: rows[0].id }, { jobId: `receipt-${rows[0].id}` });
 *   await client.query('COMMIT');
 * } catch (error) {
 *   await client.query('ROLLBACK');
 *   throw error;
 * } finally {
 *   client.release();
 * }
 */
export class Outbox<TJobs extends object = object> {
  private readonly sql: OutboxStatements;
  private lastNotifyAt = Number.NEGATIVE_INFINITY;
  private trailingNotify: NodeJS.Timeout | undefined;

  /** Made by createWarren (`warren.outbox`); not meant to be called directly. */
  constructor(
    private readonly options: ResolvedOutboxOptions,
    private readonly validate: ValidateJob,
  ) {
    this.sql = outboxStatements(options.qualifiedTable, options.channel);
  }

  /** The table, as configured (`warren_outbox` by default). */
  get tableName(): string {
    return this.options.tableName;
  }

  /**
   * Writes a job into the outbox inside `tx`, the caller's open transaction; it reaches the broker
   * after the commit. Checked like `warren.publish` (job name, options, payload against the schema)
   * before anything is written. A job id already waiting in the table is not written again and does
   * not abort the transaction: the result says `duplicate: true`.
   */
  publish<K extends JobName<TJobs>>(
    tx: OutboxTransaction,
    name: K,
    data: JobPayload<TJobs, K>,
    options?: OutboxPublishOptions,
  ): Promise<OutboxPublished>;
  publish<C extends JobRef>(
    tx: OutboxTransaction,
    job: C,
    data: JobData<C>,
    options?: OutboxPublishOptions,
  ): Promise<OutboxPublished>;
  async publish(
    tx: OutboxTransaction,
    job: string | JobRef,
    data: unknown,
    options: OutboxPublishOptions = {},
  ): Promise<OutboxPublished> {
    const name = typeof job === 'string' ? job : readJobDefinition(job).name;
    const validated = await this.validate(name, data, options);
    const row = rowOptions(options);
    const payload = JSON.stringify(validated.payload) ?? 'null';
    let written: number;
    try {
      const now = Date.now();
      const notify = now - this.lastNotifyAt >= this.options.notifyIntervalMs;
      if (notify) this.lastNotifyAt = now;
      else this.scheduleTrailingNotify();
      const values = [validated.jobId, name, payload, JSON.stringify(row)];
      const { rows } = notify
        ? await tx.query(this.sql.insertAndNotify, [...values, this.options.channel])
        : await tx.query(this.sql.insert, values);
      written = rows.length;
    } catch (error) {
      throw new OutboxError('publish', `outbox: writing job '${name}' to ${this.tableName} failed`, {
        table: this.tableName,
        jobId: validated.jobId,
        jobName: name,
        cause: error,
      });
    }
    return { jobId: validated.jobId, name, queue: validated.queue, duplicate: written === 0 };
  }

  /**
   * A write that carried no notification is covered by one sent on its own a little later: by then
   * its transaction has most likely committed. One that commits later still waits for a notifying
   * write or the relay's poll interval.
   */
  private scheduleTrailingNotify(): void {
    if (this.trailingNotify) return;
    this.trailingNotify = setTimeout(() => {
      this.trailingNotify = undefined;
      this.lastNotifyAt = Date.now();
      this.options.pool.query(this.sql.notify, [this.options.channel]).catch(() => undefined);
    }, this.options.notifyIntervalMs);
    this.trailingNotify.unref();
  }

  /** Rows waiting and the oldest one's age: for metrics and the operations API. */
  async backlog(): Promise<OutboxBacklog> {
    try {
      const { rows } = await this.options.pool.query(this.sql.backlog);
      return { size: Number(rows[0]?.size ?? 0), oldestAgeMs: Math.max(0, Number(rows[0]?.oldest_ms ?? 0)) };
    } catch (error) {
      throw new OutboxError('backlog', `outbox: reading the backlog of ${this.tableName} failed`, {
        table: this.tableName,
        cause: error,
      });
    }
  }

  /**
   * Creates the table if missing (`createWarren` does it unless `outbox.createTable` is false). The
   * same DDL ships as `migrations/warren_outbox.sql` for migration tools.
   */
  async createTable(): Promise<void> {
    try {
      await this.options.pool.query(outboxTableSql(this.options.qualifiedTable));
    } catch (error) {
      // Two processes creating the table at once: the loser sees the catalog's refusal.
      if (lostCreateRace(error)) return;
      throw new OutboxError('createTable', `outbox: creating table ${this.tableName} failed`, {
        table: this.tableName,
        cause: error,
      });
    }
  }
}

function rowOptions(options: OutboxPublishOptions): OutboxRowOptions {
  const runAtMs =
    options.runAt !== undefined
      ? options.runAt.getTime()
      : options.delayMs !== undefined && options.delayMs > 0
        ? Date.now() + options.delayMs
        : undefined;
  return {
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
    ...(options.correlationId !== undefined ? { correlationId: options.correlationId } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
    ...(runAtMs !== undefined ? { runAtMs } : {}),
  };
}
