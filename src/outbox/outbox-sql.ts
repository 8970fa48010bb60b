/**
 * The outbox table and every statement run on it. One row per job waiting for the broker:
 *   id          bigserial: the relay publishes in this order (insert order; see the README on commit order)
 *   job_id      the job id, unique: the AMQP message_id, so consumers' idempotency stores see copies
 *   job_name    the @Job name
 *   payload     the payload as the job's schema output it, JSON
 *   options     per-publish options the relay passes on (priority, correlationId, headers, attempts,
 *               runAtMs), JSON
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
  /** $1 job_id, $2 job_name, $3 payload, $4 options, $5 channel: one row if written, none if a duplicate. */
  readonly insert: string;
  /** $1 batch size: the oldest rows no other relay holds, locked until the transaction ends. */
  readonly claim: string;
  /** $1 ids (bigint[]). */
  readonly remove: string;
  readonly backlog: string;
  readonly listen: string;
}

export function outboxStatements(qualifiedTable: string, channel: string): OutboxStatements {
  return {
    // The notification is sent at commit, and never for a rolled-back or duplicate write.
    insert: `WITH inserted AS (
        INSERT INTO ${qualifiedTable} (job_id, job_name, payload, options) VALUES ($1, $2, $3::json, $4::jsonb)
        ON CONFLICT (job_id) DO NOTHING RETURNING id
      )
      SELECT id, pg_notify($5, '') FROM inserted`,
    claim: `SELECT id, job_id, job_name, payload, options FROM ${qualifiedTable}
      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    remove: `DELETE FROM ${qualifiedTable} WHERE id = ANY($1::bigint[])`,
    backlog: `SELECT count(*)::bigint AS size,
        COALESCE(EXTRACT(EPOCH FROM (now() - min(created_at))) * 1000, 0)::float8 AS oldest_ms
      FROM ${qualifiedTable}`,
    listen: `LISTEN "${channel}"`,
  };
}
