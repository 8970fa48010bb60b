/**
 * The outbox table and every statement run on it. One row per job waiting for the broker:
 *   id          bigserial: the relay publishes in this order (insert order; see docs/guide/outbox.md on commit order)
 *   job_id      the job id, unique: the AMQP message_id, so consumers' idempotency stores see copies
 *   job_name    the @Job name
 *   payload     the payload as the job's schema output it, JSON
 *   options     per-publish options the relay passes on (priority, correlationId, headers, attempts,
 *               runAtMs), JSON
 *               and, written by the relay, relayFailures and parkedReason (a parked row is never claimed)
 *   created_at  when the caller wrote it (the database's clock): the backlog's oldest age reads it
 * A row is deleted once the broker confirmed its message: confirm before forget.
 */

/** The DDL for a table (quoted, maybe schema-qualified); the shipped migration is this for the default. */
export function outboxTableSql(qualifiedTable: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualifiedTable} (
  id bigserial PRIMARY KEY,
  job_id text NOT NULL UNIQUE,
  job_name text NOT NULL,
  payload json NOT NULL,
  options jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
`;
}

/** The statements of one table. */
export interface OutboxStatements {
  /** $1 job_id, $2 job_name, $3 payload, $4 options: one row if written, none if a duplicate. */
  readonly insert: string;
  /** The same, and $5 channel: notifies the relays at commit (never for a rolled-back or duplicate write). */
  readonly insertAndNotify: string;
  /**
   * Opens the relay's transaction and claims the oldest `batchSize` rows no other relay holds, locked
   * until it ends: one round trip (simple protocol, several statements, no parameters). The delete
   * need not wait for the disk (`synchronous_commit` off for this transaction only): a delete lost in a
   * database crash brings its rows back, to be published again, which at-least-once allows.
   */
  claim(batchSize: number): string;
  /** Deletes the rows (ids as read from the table) and commits: one round trip. */
  removeAndCommit(ids: readonly string[]): string;
  /**
   * Counts one refusal of each row (a job no topology declares) and parks a row refused `attempts`
   * times, with `parkedReason` 'unknown-job'; returns the ids parked now.
   */
  countUnknownJob(ids: readonly string[], attempts: number): string;
  readonly backlog: string;
  readonly listen: string;
  /** $1 channel: wakes the relays now. */
  readonly notify: string;
}

export function outboxStatements(qualifiedTable: string, channel: string): OutboxStatements {
  return {
    insert: `INSERT INTO ${qualifiedTable} (job_id, job_name, payload, options) VALUES ($1, $2, $3::json, $4::jsonb)
      ON CONFLICT (job_id) DO NOTHING RETURNING id`,
    insertAndNotify: `WITH inserted AS (
        INSERT INTO ${qualifiedTable} (job_id, job_name, payload, options) VALUES ($1, $2, $3::json, $4::jsonb)
        ON CONFLICT (job_id) DO NOTHING RETURNING id
      )
      SELECT id, pg_notify($5, '') FROM inserted`,
    claim: (batchSize) =>
      `BEGIN; SET LOCAL synchronous_commit TO OFF;
      SELECT id, job_id, job_name, payload, options FROM ${qualifiedTable}
      WHERE NOT (options ? 'parkedReason')
      ORDER BY id LIMIT ${Math.floor(batchSize)} FOR UPDATE SKIP LOCKED`,
    // BigInt turns each id into digits only (or throws): nothing else reaches the SQL text.
    removeAndCommit: (ids) =>
      `DELETE FROM ${qualifiedTable} WHERE id IN (${ids.map((id) => BigInt(id).toString()).join(',')}); COMMIT`,
    countUnknownJob: (ids, attempts) => `UPDATE ${qualifiedTable} SET options = options
        || jsonb_build_object('relayFailures', COALESCE((options->>'relayFailures')::int, 0) + 1)
        || CASE WHEN COALESCE((options->>'relayFailures')::int, 0) + 1 >= ${Math.floor(attempts)}
           THEN '{"parkedReason":"unknown-job"}'::jsonb ELSE '{}'::jsonb END
      WHERE id IN (${ids.map((id) => BigInt(id).toString()).join(',')})
      RETURNING id, job_id, job_name, options ? 'parkedReason' AS parked`,
    backlog: `SELECT count(*)::bigint AS size,
        COALESCE(EXTRACT(EPOCH FROM (now() - min(created_at))) * 1000, 0)::float8 AS oldest_ms
      FROM ${qualifiedTable}`,
    listen: `LISTEN "${channel}"`,
    notify: `SELECT pg_notify($1, '')`,
  };
}
