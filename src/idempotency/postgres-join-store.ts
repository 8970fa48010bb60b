import { ConfigurationError, lostCreateRace, validationMessage } from '../core';
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
 *   created_at  for your own clean-up: rows are not deleted by warren (yet)
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
}

/** Fan-in counters in PostgreSQL, shared by every worker process (see {@link JoinStore}). */
export class PostgresJoinStore extends RecordedJoinStore {
  private readonly pool: PgPool;
  private readonly table: string;

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
  }

  async prepare(): Promise<void> {
    await this.pool
      .query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (join_id text NOT NULL, branch integer NOT NULL,
        state text NOT NULL, result jsonb, created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (join_id, branch))`,
      )
      .catch((error: unknown) => {
        // another process created it at the same moment
        if (!lostCreateRace(error)) throw error;
      });
  }

  protected readonly records: JoinRecords = {
    record: (joinId, branch, state, result) => this.insert(joinId, branch, state, result),
    markFaulted: (joinId) => this.insert(joinId, -1, 'faulted', null),
    markUndone: async (joinId, branch) => {
      await this.pool.query(
        `UPDATE ${this.table} SET state = 'undone' WHERE join_id = $1 AND branch = $2 AND state = 'done'`,
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
