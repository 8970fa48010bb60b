import {
  ConfigurationError,
  jitteredBackoff,
  type EmitEvent,
  type Logger,
  type PublishOptions,
} from '../core';
import type { OutboxRowOptions } from './outbox';
import { outboxStatements, type OutboxStatements } from './outbox-sql';
import type { PgPoolClient, PgResult, ResolvedOutboxOptions, ResolvedOutboxRelayOptions } from './options';
import { RelayWake } from './relay-wake';

/** Sends one job to the broker and resolves on its confirm: the warren's publisher, without re-validation. */
export type SendJob = (
  name: string,
  payload: unknown,
  options: PublishOptions & { readonly jobId: string },
) => Promise<unknown>;

/** How often a row naming a job no topology declares is tried before it is parked. */
export const UNKNOWN_JOB_ATTEMPTS = 5;
/** Header names a row may not pass on: the broker's and warren's (outbox.publish refuses them; a row
 * written some other way is relayed without them). */
const RESERVED_HEADER = /^(x-|warren-)/i;

/** One batch in flight at a time, on a connection of its own. */
interface Lane {
  client: PgPoolClient | undefined;
  failures: number;
}

interface OutboxRow {
  readonly id: string;
  readonly job_id: string;
  readonly job_name: string;
  readonly payload: unknown;
  readonly options: OutboxRowOptions;
}

/**
 * Moves committed rows from the outbox table to the broker, confirm before forget:
 *   1. BEGIN; claim the oldest `batchSize` rows no other relay holds (`FOR UPDATE SKIP LOCKED`), one round trip;
 *   2. publish them all (one confirm channel, so in id order on the wire) and wait for the confirms;
 *   3. delete the confirmed rows and COMMIT, one round trip. Rows not confirmed stay, unlocked, for the
 *      next batch.
 * A relay that dies anywhere before the commit leaves its rows to the next claim (a copy may reach
 * the broker twice, with the same message id; none is lost). A batch that found rows is followed by
 * the next at once; after an empty one the relay waits for a notification (writers send one at commit,
 * at most one per `notifyIntervalMs` per process) or the poll interval.
 * `batchesInFlight` batches overlap, each on its own connection: the next claim is taken while the
 * last batch waits for its confirms. Claims take turns, and a batch's publishes are sent before the
 * next claim, so the relay's messages still leave in claim order.
 */
export class OutboxRelay {
  private readonly sql: OutboxStatements;
  private readonly settings: ResolvedOutboxRelayOptions;
  private readonly wake: RelayWake;
  private readonly lanes: Lane[];
  private running: Promise<unknown> | undefined;
  private stopped = false;
  private relayed = 0;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly options: ResolvedOutboxOptions,
    private readonly send: SendJob,
    private readonly log: Logger,
    private readonly emit: EmitEvent = () => undefined,
  ) {
    if (options.relay === false)
      throw new ConfigurationError('outbox.relay is false: this process does not relay');
    this.settings = options.relay;
    this.sql = outboxStatements(options.qualifiedTable, options.channel);
    this.wake = new RelayWake(options.pool, this.sql.listen, options.channel, this.settings, log);
    this.lanes = Array.from({ length: this.settings.batchesInFlight }, () => ({
      client: undefined,
      failures: 0,
    }));
  }

  /** Rows this relay published and deleted since it started. */
  get relayedCount(): number {
    return this.relayed;
  }

  start(): void {
    if (this.running || this.stopped) return;
    this.wake.start();
    this.running = Promise.all(this.lanes.map((lane) => this.loop(lane)));
  }

  /** Stops after the batch in flight (whose confirms it waits for) and lets go of its connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.stop();
    await this.running;
    for (const lane of this.lanes) this.dropClient(lane);
  }

  private async loop(lane: Lane): Promise<void> {
    while (!this.stopped) {
      try {
        const claimed = await this.relayBatch(lane);
        lane.failures = 0;
        // Rows came: more may have committed meanwhile without a notification (writers notify
        // sparingly), so look again until a claim comes back empty.
        if (claimed > 0) continue;
        await this.wake.wait(this.settings.pollIntervalMs);
      } catch (error) {
        lane.failures++;
        const waitMs = jitteredBackoff(
          lane.failures,
          this.settings.retryBaseMs,
          this.settings.retryMaxMs,
          0.2,
        );
        this.log.warn(
          { err: error, table: this.options.tableName, failures: lane.failures, retryInMs: waitMs },
          'outbox relay batch failed; its unconfirmed rows stay in the table',
        );
        await this.wake.sleep(waitMs);
      }
    }
  }

  /** One batch; returns how many rows it claimed. Throws the first publish failure after the commit. */
  private async relayBatch(lane: Lane): Promise<number> {
    const client = await this.connection(lane);
    let open = false;
    let failure: PromiseRejectedResult | undefined;
    let claimed: OutboxRow[];
    let confirmed: OutboxRow[];
    const startedAt = Date.now();
    try {
      open = true;
      const batch = await this.inTurn(async () => {
        const rows = lastResult(await client.query(this.sql.claim(this.settings.batchSize)))
          .rows as OutboxRow[];
        return { rows, publishing: rows.map((row) => this.publish(row)) };
      });
      claimed = batch.rows;
      const results = await Promise.allSettled(batch.publishing);
      confirmed = claimed.filter((_, i) => results[i]!.status === 'fulfilled');
      const unknown = claimed.filter((_, i) => isUnknownJob(results[i]!));
      if (unknown.length > 0) await this.countUnknownJob(client, unknown);
      await client.query(
        confirmed.length > 0 ? this.sql.removeAndCommit(confirmed.map((row) => String(row.id))) : 'COMMIT',
      );
      open = false;
      this.relayed += confirmed.length;
      failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    } catch (error) {
      if (open) await client.query('ROLLBACK').catch(() => this.dropClient(lane, error));
      if (isConnectionError(error)) this.dropClient(lane, error);
      throw error;
    }
    if (confirmed.length > 0)
      this.emit('outboxRelayed', {
        table: this.options.tableName,
        jobIds: confirmed.map((row) => row.job_id),
        durationMs: Date.now() - startedAt,
      });
    if (failure) throw failure.reason;
    return claimed.length;
  }

  /** Counts the refusals of rows naming an unknown job, in the batch's transaction; logs those it parks. */
  private async countUnknownJob(client: PgPoolClient, rows: readonly OutboxRow[]): Promise<void> {
    const result = lastResult(
      await client.query(
        this.sql.countUnknownJob(
          rows.map((row) => String(row.id)),
          UNKNOWN_JOB_ATTEMPTS,
        ),
      ),
    );
    for (const row of result.rows as { job_id: string; job_name: string; parked: boolean }[])
      if (row.parked)
        this.log.error(
          { table: this.options.tableName, jobId: row.job_id, jobName: row.job_name, reason: 'unknown-job' },
          `outbox row parked after ${UNKNOWN_JOB_ATTEMPTS} attempts: no topology declares its job`,
        );
  }

  private publish(row: OutboxRow): Promise<unknown> {
    const o = row.options ?? {};
    const headers = o.headers === undefined ? undefined : this.allowedHeaders(row, o.headers);
    const options: PublishOptions & { jobId: string } = {
      jobId: row.job_id,
      timeoutMs: this.settings.publishTimeoutMs,
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
      ...(o.correlationId !== undefined ? { correlationId: o.correlationId } : {}),
      ...(headers !== undefined ? { headers } : {}),
      ...(o.attempts !== undefined ? { attempts: o.attempts } : {}),
      ...(o.runAtMs !== undefined && o.runAtMs > Date.now() ? { runAt: new Date(o.runAtMs) } : {}),
    };
    return this.send(row.job_name, row.payload, options);
  }

  /** A row's headers without the reserved ones (x-, warren-), which are logged: never passed on. */
  private allowedHeaders(row: OutboxRow, headers: NonNullable<PublishOptions['headers']>) {
    const allowed: Record<string, string | number | boolean> = {};
    const refused: string[] = [];
    for (const [key, value] of Object.entries(headers))
      if (RESERVED_HEADER.test(key)) refused.push(key);
      else allowed[key] = value;
    if (refused.length > 0)
      this.log.warn(
        { table: this.options.tableName, jobId: row.job_id, headers: refused.slice(0, 10) },
        'outbox row with reserved headers: relayed without them',
      );
    return allowed;
  }

  /** Runs `work` after every earlier claim settled. */
  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = this.turn.then(work);
    this.turn = result.catch(() => undefined);
    return result;
  }

  private async connection(lane: Lane): Promise<PgPoolClient> {
    if (lane.client) return lane.client;
    const client = await this.options.pool.connect();
    // An idle client whose server went away emits 'error'; without a listener the process would crash.
    client.on('error', (error) => {
      if (lane.client === client) this.dropClient(lane, error);
    });
    lane.client = client;
    return client;
  }

  private dropClient(lane: Lane, error?: unknown): void {
    const client = lane.client;
    lane.client = undefined;
    if (!client) return;
    try {
      client.release(error instanceof Error ? error : error === undefined ? undefined : true);
    } catch {
      // released already (pg throws on a double release)
    }
  }
}

/** node-postgres answers a query of several statements with an array of results. */
function lastResult(result: PgResult | readonly PgResult[]): PgResult {
  return Array.isArray(result) ? result[result.length - 1]! : (result as PgResult);
}

/** Errors after which the connection is not trusted again: anything that is not a statement's own SQLSTATE. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string') return true;
  // Class 08: connection exception; 57P: operator intervention (server shutting down, terminated).
  return code.startsWith('08') || code.startsWith('57P') || !/^[0-9A-Z]{5}$/.test(code);
}

function isUnknownJob(result: PromiseSettledResult<unknown>): boolean {
  return result.status === 'rejected' && (result.reason as { code?: unknown })?.code === 'UNKNOWN_JOB';
}
