import { randomUUID } from 'node:crypto';
import { lostCreateRace } from '../core';
import { IdempotencyStoreError, type IdempotencyOperation } from './idempotency-store-error';
import type { ClaimResult, IdempotencyStore } from './idempotency-store';
import {
  resolvePostgresIdempotencyStoreOptions,
  type PgPool,
  type PostgresIdempotencyStoreOptions,
  type ResolvedPostgresIdempotencyStoreOptions,
} from './options';

/**
 * The table (created if missing). One row per job id:
 *   job_id     the job id (AMQP message_id)
 *   state      'running' while a worker holds the claim, 'completed' once the job succeeded
 *   owner      the claim's random token, so a worker only releases its own claim
 *   expires_at running: end of the lease; completed: end of the retention. A row past it counts as absent.
 * All times come from the database's clock, so workers with skewed clocks agree.
 */
const COLUMNS: Readonly<Record<string, string>> = Object.freeze({
  job_id: 'text',
  state: 'text',
  owner: 'text',
  expires_at: 'timestamp with time zone',
});

/** Rows deleted per sweep statement, so one sweep never holds locks on a huge backlog for long. */
const SWEEP_BATCH = 10_000;
/** A claim racing a concurrent release or expiry may see neither outcome; it simply asks again. */
const CLAIM_TRIES = 5;

/** PostgreSQL error codes the store reacts to. */
const PG = { undefinedTable: '42P01' } as const;

/**
 * An idempotency store in PostgreSQL, shared by every worker process: a job id runs once across all
 * of them. Claims are atomic (`INSERT … ON CONFLICT` with a lease: a crashed worker's claim expires
 * and a redelivered copy runs); completed ids are kept for `retentionMs`, then deleted.
 *
 * It takes your `pg.Pool` and never ends it; warren does not load `pg` itself (an optional peer
 * dependency, imported for its types only).
 *
 * @example
 * import { Pool } from 'pg';
 * const pool = new Pool({ connectionString: process.env.DATABASE_URL });
 * const idempotency = new PostgresIdempotencyStore({ pool, retentionMs: 7 * 24 * 3_600_000 });
 * const warren = await createWarren({ topology, handlers, idempotency }); // creates the table if missing
 * await warren.publish('email.welcome', { userId: '123' }, { jobId: 'welcome-123' }); // runs once, however
 * often published
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  private readonly options: ResolvedPostgresIdempotencyStoreOptions;
  private readonly pool: PgPool;
  private readonly sql: {
    readonly claim: string;
    readonly complete: string;
    readonly release: string;
    readonly sweep: string;
  };
  private readonly owners = new Map<string, string>();
  private ready: Promise<void> | undefined;
  private lastSweepAt = 0;

  constructor(options: PostgresIdempotencyStoreOptions) {
    this.options = resolvePostgresIdempotencyStoreOptions(options);
    this.pool = this.options.pool;
    const table = this.qualifiedTable();
    this.sql = {
      // One statement, one round trip: claim when there is no live row, else report the live row.
      // The report reads the statement's snapshot, so a row that changed under a concurrent claim
      // may be invisible to it: no row at all means "ask again".
      claim: `WITH claimed AS (
          INSERT INTO ${table} AS t (job_id, state, owner, expires_at)
          VALUES ($1, 'running', $2, now() + $3 * interval '1 millisecond')
          ON CONFLICT (job_id) DO UPDATE SET state = 'running', owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
            WHERE t.expires_at <= now()
          RETURNING 1
        )
        SELECT 'claimed' AS state, 0::float8 AS remaining_ms FROM claimed
        UNION ALL
        SELECT state, EXTRACT(EPOCH FROM (expires_at - now())) * 1000 AS remaining_ms
          FROM ${table} WHERE job_id = $1 AND expires_at > now() AND NOT EXISTS (SELECT 1 FROM claimed)`,
      complete: `INSERT INTO ${table} AS t (job_id, state, owner, expires_at)
        VALUES ($1, 'completed', NULL, now() + $2 * interval '1 millisecond')
        ON CONFLICT (job_id) DO UPDATE SET state = 'completed', owner = NULL, expires_at = EXCLUDED.expires_at`,
      release: `DELETE FROM ${table} WHERE job_id = $1 AND state = 'running' AND owner = $2`,
      sweep: `DELETE FROM ${table} WHERE job_id IN (SELECT job_id FROM ${table} WHERE expires_at <= now() LIMIT ${SWEEP_BATCH})`,
    };
  }

  /** The table, as configured (`warren_idempotency` by default). */
  get tableName(): string {
    return this.options.tableName;
  }

  /**
   * Creates the table and its index if missing and checks the columns of an existing one. Runs once
   * (again after a failure); `createWarren` calls it, and so does the first claim.
   */
  prepare(): Promise<void> {
    this.ready ??= this.createTable().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  async claim(jobId: string, leaseMs: number): Promise<ClaimResult> {
    await this.prepare();
    this.maybeSweep();
    const owner = randomUUID();
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const result = await this.query<{ state: string; remaining_ms: number }>(
        'claim',
        this.sql.claim,
        [jobId, owner, Math.max(1, Math.ceil(leaseMs))],
        jobId,
      );
      const row = result.rows[0];
      if (row === undefined) continue;
      if (row.state === 'claimed') {
        this.owners.set(jobId, owner);
        return { status: 'claimed' };
      }
      if (row.state === 'completed') return { status: 'completed' };
      return {
        status: 'running',
        retryInMs: Math.max(1, Math.min(Math.ceil(Number(row.remaining_ms)), this.options.recheckMs)),
      };
    }
    return { status: 'running', retryInMs: this.options.recheckMs };
  }

  async complete(jobId: string): Promise<void> {
    this.owners.delete(jobId);
    await this.query('complete', this.sql.complete, [jobId, this.options.retentionMs], jobId);
  }

  async release(jobId: string): Promise<void> {
    const owner = this.owners.get(jobId);
    if (owner === undefined) return;
    this.owners.delete(jobId);
    await this.query('release', this.sql.release, [jobId, owner], jobId);
  }

  /**
   * Deletes completed ids past their retention and expired claims now. Resolves with the number of rows
   * deleted.
   */
  async sweep(): Promise<number> {
    await this.prepare();
    let deleted = 0;
    for (;;) {
      const result = await this.query('sweep', this.sql.sweep, []);
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < SWEEP_BATCH) return deleted;
    }
  }

  /**
   * Opportunistic: at most once per sweepIntervalMs, in the background of a claim. Its failure only delays
   * the cleanup.
   */
  private maybeSweep(): void {
    const interval = this.options.sweepIntervalMs;
    const now = Date.now();
    if (interval === 0 || now - this.lastSweepAt < interval) return;
    this.lastSweepAt = now;
    this.sweep().catch(() => undefined);
  }

  private async createTable(): Promise<void> {
    const table = this.qualifiedTable();
    await this.createIfMissing(
      `CREATE TABLE IF NOT EXISTS ${table} (job_id text PRIMARY KEY, state text NOT NULL, owner text, expires_at timestamptz NOT NULL)`,
    );
    let columns: { column_name: string; data_type: string }[];
    try {
      const result = await this.pool.query<{ column_name: string; data_type: string }>(
        'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2 ORDER BY ordinal_position',
        [this.options.schema ?? null, this.options.table],
      );
      columns = result.rows;
    } catch (error) {
      throw this.failure(
        'prepare',
        `could not read the columns of the idempotency table ${this.options.tableName}: ${describe(error)}`,
        error,
      );
    }
    const found = Object.fromEntries(columns.map((c) => [c.column_name, c.data_type]));
    const wrong = Object.entries(COLUMNS).filter(([name, type]) => found[name] !== type);
    if (wrong.length > 0) {
      const expected = Object.entries(COLUMNS)
        .map(([name, type]) => `${name} ${type}`)
        .join(', ');
      const actual =
        columns.length > 0
          ? columns.map((c) => `${c.column_name} ${c.data_type}`).join(', ')
          : 'no visible columns';
      throw this.failure(
        'prepare',
        `table ${this.options.tableName} exists with other columns than an idempotency table: expected ${expected}; found ${actual}. Choose another tableName or migrate the table.`,
      );
    }
    await this.createIfMissing(
      `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(`${this.options.table}_expires_at`)} ON ${table} (expires_at)`,
    );
  }

  private async createIfMissing(ddl: string): Promise<void> {
    try {
      await this.pool.query(ddl);
    } catch (error) {
      // Two processes creating it at once: one of them loses the race on the catalog, and the object is
      // there.
      if (!lostCreateRace(error))
        throw this.failure(
          'prepare',
          `could not create the idempotency table ${this.options.tableName}: ${describe(error)}`,
          error,
        );
    }
  }

  private async query<R extends Record<string, unknown>>(
    operation: IdempotencyOperation,
    text: string,
    values: unknown[],
    jobId?: string,
  ) {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      // Someone dropped the table under us: create it again on the next call.
      if ((error as { code?: string }).code === PG.undefinedTable) this.ready = undefined;
      throw this.failure(
        operation,
        `idempotency ${operation}${jobId !== undefined ? ` of job '${jobId}'` : ''} failed on table ${this.options.tableName}: ${describe(error)}`,
        error,
        jobId,
      );
    }
  }

  private failure(
    operation: IdempotencyOperation,
    message: string,
    cause?: unknown,
    jobId?: string,
  ): IdempotencyStoreError {
    return new IdempotencyStoreError(operation, message, {
      table: this.options.tableName,
      ...(jobId !== undefined ? { jobId } : {}),
      ...(cause !== undefined ? { cause } : {}),
    });
  }

  private qualifiedTable(): string {
    const { schema, table } = this.options;
    return schema === undefined
      ? quoteIdentifier(table)
      : `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`;
  }
}

/** Names were validated as [a-z0-9_]; quoting keeps reserved words (`user`, `order`) usable. */
function quoteIdentifier(name: string): string {
  return `"${name}"`;
}

function describe(error: unknown): string {
  const code = (error as { code?: string })?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${message} (${code})` : message;
}
