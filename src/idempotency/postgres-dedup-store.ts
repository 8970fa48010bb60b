import { lostCreateRace } from '../core';
import type { DedupRecord, DedupStore, ReserveResult } from './dedup-store';
import { IdempotencyStoreError, type IdempotencyOperation } from './idempotency-store-error';
import { resolvePostgresIdempotencyStoreOptions, type PgPool } from './options';

export interface PostgresDedupStoreOptions {
  /** Your `pg.Pool` (never ended by warren). */
  readonly pool: PgPool;
  /** The table, created if missing (lowercase letters, digits, `_`; may be schema-qualified). Default `warren_dedup`. */
  readonly tableName?: string;
}

/**
 * Deduplicated publishing in PostgreSQL, shared by every process. One row per reserved job id; a row
 * past `expires_at` counts as absent (the database's clock decides). Each reserve is one statement
 * (`INSERT … ON CONFLICT DO UPDATE … WHERE expired`, then the live row when it lost), each release one
 * `DELETE` of the reservation its token names (or of any, without one). Expired rows are overwritten by the
 * next reserve of their id, never swept. A table of an earlier release gets its `token` column on prepare.
 */
export class PostgresDedupStore implements DedupStore {
  private readonly pool: PgPool;
  private readonly table: string;
  private readonly schema: string | undefined;
  private readonly tableName: string;
  private ready: Promise<void> | undefined;

  constructor(options: PostgresDedupStoreOptions) {
    const resolved = resolvePostgresIdempotencyStoreOptions({
      pool: options.pool,
      tableName: options.tableName ?? 'warren_dedup',
    });
    this.pool = resolved.pool;
    this.schema = resolved.schema;
    this.tableName = resolved.table;
    this.table = resolved.schema ? `"${resolved.schema}"."${resolved.table}"` : `"${resolved.table}"`;
  }

  prepare(): Promise<void> {
    this.ready ??= this.query(
      'prepare',
      `CREATE TABLE IF NOT EXISTS ${this.table} (job_id text PRIMARY KEY, name text NOT NULL,
        queue text NOT NULL, expires_at timestamp with time zone NOT NULL, token text)`,
      [],
    )
      .then(
        () => undefined,
        // another process created it at the same moment
        (error: unknown) => {
          if (!lostCreateRace((error as Error).cause)) throw error;
        },
      )
      .then(() => this.addTokenColumn())
      .then(
        () => undefined,
        (error: unknown) => {
          this.ready = undefined;
          throw error;
        },
      );
    return this.ready;
  }

  async reserve(job: DedupRecord, ttlMs: number, token?: string): Promise<ReserveResult> {
    await this.prepare();
    for (let tries = 0; tries < 5; tries++) {
      const { rows } = await this.query<{ reserved: boolean; name: string; queue: string }>(
        'claim',
        `WITH r AS (
           INSERT INTO ${this.table} AS t (job_id, name, queue, expires_at, token)
           VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', $5)
           ON CONFLICT (job_id) DO UPDATE SET name = EXCLUDED.name, queue = EXCLUDED.queue,
             expires_at = EXCLUDED.expires_at, token = EXCLUDED.token WHERE t.expires_at <= now()
           RETURNING 1)
         SELECT true AS reserved, $2 AS name, $3 AS queue FROM r
         UNION ALL
         SELECT false, name, queue FROM ${this.table}
           WHERE job_id = $1 AND expires_at > now() AND NOT EXISTS (SELECT 1 FROM r)`,
        [job.jobId, job.name, job.queue, Math.max(1, Math.ceil(ttlMs)), token ?? null],
      );
      const row = rows[0];
      if (row === undefined) continue; // raced a concurrent release: ask again
      if (row.reserved) return { status: 'reserved' };
      return { status: 'exists', job: { jobId: job.jobId, name: row.name, queue: row.queue } };
    }
    return { status: 'reserved' };
  }

  async release(jobId: string, token?: string): Promise<void> {
    await this.prepare();
    await this.query(
      'release',
      `DELETE FROM ${this.table} WHERE job_id = $1 AND ($2::text IS NULL OR token IS NULL OR token = $2)`,
      [jobId, token ?? null],
    );
  }

  /** A table created before reservations had tokens: the column is added once (looked up first, no lock). */
  private async addTokenColumn(): Promise<void> {
    const { rows } = await this.query(
      'prepare',
      `SELECT 1 FROM information_schema.columns
        WHERE table_schema = coalesce($1, current_schema()) AND table_name = $2 AND column_name = 'token'`,
      [this.schema ?? null, this.tableName],
    );
    if (rows.length === 0)
      await this.query('prepare', `ALTER TABLE ${this.table} ADD COLUMN IF NOT EXISTS token text`, []);
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg's row type
  private async query<R extends Record<string, any>>(
    operation: IdempotencyOperation,
    text: string,
    values: unknown[],
  ): Promise<{ rows: R[] }> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw new IdempotencyStoreError(operation, `deduplication store: ${operation} failed`, {
        table: this.table,
        cause: error,
      });
    }
  }
}
