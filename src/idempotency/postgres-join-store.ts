import { checkInteger, ConfigurationError, lostCreateRace, validationMessage } from '../core';
import { RecordedJoinStore, type JoinBranchState, type JoinRecords, type JoinRows } from './join-store';
import type { PgPool } from './options';

/**
 * The table (created if missing). One row per reported branch, plus branch -1 once the join faulted,
 * plus one row per duty given (branch -2):
 *   join_id     `<slipId>.<step>` (or `<slipId>.<step>.undo` when undoing a completed parallel step);
 *               a duty's row: `<join_id>|complete`, `|settled` or `|undo.<branch>`
 *   branch      the branch's index, -1 for the fault flag, -2 for a duty
 *   state       'done' | 'failed' | 'undone' | 'faulted' | 'claimed'
 *   result      the branch's log entry (jsonb) when done; a duty's holder (the branch's index)
 *   created_at  when the row was last written: a join none of whose rows is newer than `retentionMs` is deleted
 * Each report is an insert that does nothing on conflict (the first report wins) followed by a read
 * of the join's rows: of two concurrent reports, the later one always sees both. Both may see the set
 * complete; the duty's row then gives it to one of them.
 */
const TABLE_PATTERN = /^([a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*$/;

export interface PostgresJoinStoreOptions {
  /** Your `pg.Pool`; never ended by warren. */
  readonly pool: PgPool;
  /** Default `warren_slip_joins`; lowercase letters, digits and `_`, optionally schema-qualified. */
  readonly tableName?: string;
  /**
   * A join's rows are deleted once none of them is newer than this: longer than any parallel step takes
   * from its first branch's report to its last (retries and backoff included) and than its undoing takes.
   * 0 keeps every row. Default 7 days.
   */
  readonly retentionMs?: number;
  /**
   * Joins past their retention are deleted at most this often, in the background of a report (no timer,
   * nothing to stop). 0: only when you call `sweep()`. Default 60 000 ms.
   */
  readonly sweepIntervalMs?: number;
}

export const JOIN_RETENTION_DEFAULTS = Object.freeze({
  retentionMs: 7 * 24 * 3_600_000,
  sweepIntervalMs: 60_000,
});

/** Rows deleted per sweep statement, so that a sweep never holds locks on a large backlog for long. */
const SWEEP_BATCH = 1_000;

/** Fan-in counters in PostgreSQL, shared by every worker process (see {@link JoinStore}). */
export class PostgresJoinStore extends RecordedJoinStore {
  private readonly pool: PgPool;
  private readonly table: string;
  private readonly retentionMs: number;
  private readonly sweepIntervalMs: number;
  private lastSweepAt = Date.now();

  constructor(options: PostgresJoinStoreOptions) {
    super();
    const tableName = options.tableName ?? 'warren_slip_joins';
    if (!TABLE_PATTERN.test(tableName))
      throw new ConfigurationError(
        validationMessage('PostgresJoinStore tableName', 'must be a lowercase SQL identifier', tableName),
      );
    this.pool = options.pool;
    this.table = tableName
      .split('.')
      .map((part) => `"${part}"`)
      .join('.');
    const { retentionMs, sweepIntervalMs } = JOIN_RETENTION_DEFAULTS;
    this.retentionMs = checkInteger('PostgresJoinStore retentionMs', options.retentionMs ?? retentionMs, 0);
    this.sweepIntervalMs = checkInteger(
      'PostgresJoinStore sweepIntervalMs',
      options.sweepIntervalMs ?? sweepIntervalMs,
      0,
    );
  }

  /**
   * Deletes now the joins past their retention: the rows of each join none of whose rows is newer than
   * `retentionMs` (a duty's row counts with its join). Resolves with the number of rows deleted; 0 when
   * `retentionMs` is 0.
   */
  async sweep(): Promise<number> {
    if (this.retentionMs === 0) return 0;
    await this.prepare();
    return this.deleteExpired();
  }

  /** sweep() past the table's creation: a background sweep runs after `createWarren` prepared the store. */
  private async deleteExpired(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${this.table} WHERE (join_id, branch) IN (
           SELECT o.join_id, o.branch FROM ${this.table} o
            WHERE o.created_at < now() - $1 * interval '1 millisecond'
              AND NOT EXISTS (SELECT 1 FROM ${this.table} n WHERE n.join_id = split_part(o.join_id, '|', 1)
                                AND n.created_at >= now() - $1 * interval '1 millisecond')
            LIMIT ${SWEEP_BATCH})`,
        [this.retentionMs],
      );
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < SWEEP_BATCH) return deleted;
    }
  }

  async prepare(): Promise<void> {
    await this.createIfMissing(
      `CREATE TABLE IF NOT EXISTS ${this.table} (join_id text NOT NULL, branch integer NOT NULL,
        state text NOT NULL, result jsonb, created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (join_id, branch))`,
    );
    // what a sweep looks for, so that it reads only the old rows (a table made before retention gets it too)
    const table = this.table.split('.').pop()!.slice(1, -1);
    await this.createIfMissing(
      `CREATE INDEX IF NOT EXISTS "${table}_created_at" ON ${this.table} (created_at)`,
    );
  }

  private async createIfMissing(ddl: string): Promise<void> {
    await this.pool.query(ddl).catch((error: unknown) => {
      // another process created it at the same moment
      if (!lostCreateRace(error)) throw error;
    });
  }

  protected readonly records: JoinRecords = {
    record: (joinId, branch, state, result) => {
      this.maybeSweep();
      return this.insert(joinId, branch, state, result);
    },
    markFaulted: (joinId) => this.insert(joinId, -1, 'faulted', null),
    markUndone: async (joinId, branch) => {
      await this.pool.query(
        `UPDATE ${this.table} SET state = 'undone', created_at = now() WHERE join_id = $1 AND branch = $2 AND state = 'done'`,
        [joinId, branch],
      );
    },
    read: (joinId) => this.rows(joinId),
    claim: async (joinId, duty, claimant) => {
      // One statement: of two racing claims, the later waits for the first and reads its holder.
      const { rows } = await this.pool.query<{ result: unknown }>(
        `INSERT INTO ${this.table} AS j (join_id, branch, state, result) VALUES ($1, -2, 'claimed', $2::jsonb)
          ON CONFLICT (join_id, branch) DO UPDATE SET result = j.result RETURNING result`,
        [`${joinId}|${duty}`, JSON.stringify(claimant)],
      );
      return rows[0]?.result === claimant;
    },
  };

  /** At most once per sweepIntervalMs, beside a report; a failed sweep only delays the clean-up. */
  private maybeSweep(): void {
    const now = Date.now();
    if (this.retentionMs === 0 || this.sweepIntervalMs === 0 || now - this.lastSweepAt < this.sweepIntervalMs)
      return;
    this.lastSweepAt = now;
    this.deleteExpired().catch(() => undefined);
  }

  private async insert(joinId: string, branch: number, state: string, result: unknown): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.table} (join_id, branch, state, result) VALUES ($1, $2, $3, $4::jsonb)
        ON CONFLICT (join_id, branch) DO NOTHING`,
      [joinId, branch, state, JSON.stringify(result ?? null)],
    );
  }

  private async rows(joinId: string): Promise<JoinRows> {
    const { rows } = await this.pool.query<{ branch: number; state: string; result: unknown }>(
      `SELECT branch, state, result FROM ${this.table} WHERE join_id = $1`,
      [joinId],
    );
    const branches = new Map<number, { state: JoinBranchState; result: unknown }>();
    let faulted = false;
    for (const row of rows) {
      if (row.branch === -1) faulted = true;
      else if (row.branch >= 0)
        branches.set(row.branch, { state: row.state as JoinBranchState, result: row.result });
    }
    return { faulted, branches };
  }
}
