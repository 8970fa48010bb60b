import { checkInteger, ConfigurationError, validationMessage } from '../core';

/** A query result, as node-postgres returns it. */
export interface PgResult {
  // biome-ignore lint/suspicious/noExplicitAny: pg's own row type
  readonly rows: Record<string, any>[];
  readonly rowCount: number | null;
}

/**
 * Where `outbox.publish` writes: anything that runs a parameterised query (`$1`, `$2`, …) inside the
 * caller's open transaction. A `pg.PoolClient` or `pg.Client` after `BEGIN` is one; `kyselyTransaction`
 * and `knexTransaction` make one of a Kysely or Knex transaction. Structural, so that warren does not
 * need `pg` (an optional peer) installed.
 */
export interface OutboxTransaction {
  query(text: string, values?: unknown[]): Promise<PgResult>;
}

/** One connection the relay holds: a `pg.PoolClient`, structurally. */
export interface PgPoolClient extends OutboxTransaction {
  /** Returns it to the pool; with an error, the pool destroys it instead. */
  release(error?: Error | boolean): void;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of a `pg.Pool` the outbox uses. */
export interface OutboxPool extends OutboxTransaction {
  connect(): Promise<PgPoolClient>;
}

/** How the relay moves rows from the table to the broker. */
export interface OutboxRelayOptions {
  /** Rows claimed (and published concurrently) per batch. Default 500. */
  readonly batchSize?: number;
  /**
   * Batches in flight at once, each on a pool connection of its own: the next claim is taken while a
   * batch waits for its confirms, which shortens the wait of a row committed meanwhile. Default 2.
   */
  readonly batchesInFlight?: number;
  /**
   * The relay looks at the table at least this often when no notification woke it (a lost LISTEN
   * connection, rows written by raw SQL without `pg_notify`). Default 1 000 ms.
   */
  readonly pollIntervalMs?: number;
  /**
   * A batch whose confirms have not all arrived after this long is given up: the confirmed rows are
   * deleted, the others stay for the next try. Default 10 000 ms.
   */
  readonly publishTimeoutMs?: number;
  /** After a failed batch (database or broker away) the relay waits from this … Default 200 ms. */
  readonly retryBaseMs?: number;
  /** … doubling up to this, with jitter. Default 5 000 ms. */
  readonly retryMaxMs?: number;
}

/** `createWarren({ outbox })`: the table, and whether this process relays it. */
export interface OutboxOptions {
  /**
   * The application's `pg.Pool`. `outbox.backlog()` and `createTable()` run on it; a running relay
   * holds `batchesInFlight` + 1 of its connections (one a batch in flight, one listening for
   * notifications). Never ended by warren.
   */
  readonly pool: OutboxPool;
  /**
   * The table: lowercase letters, digits and `_`, optionally schema-qualified (`jobs.warren_outbox`).
   * Default `warren_outbox`. Also the LISTEN/NOTIFY channel (with `.` as `_`).
   */
  readonly tableName?: string;
  /**
   * Relay the table from this process: `true` (default) with default settings, settings, or `false`
   * for a process that only writes. Any number of processes may relay the same table at once.
   */
  readonly relay?: boolean | OutboxRelayOptions;
  /** Create the table (if missing) when the warren is created. Default true. */
  readonly createTable?: boolean;
  /**
   * A write carries a notification to the relays (`pg_notify`, delivered at commit) if this process's
   * last one is at least this old. PostgreSQL serialises the commits of notifying transactions (one
   * notification per write halved the commit rate on the benchmark machine); a relay that found rows
   * keeps looking until the table is empty, so it needs waking only when idle. 0: every write
   * notifies. Default 10 ms.
   */
  readonly notifyIntervalMs?: number;
}

export interface ResolvedOutboxRelayOptions {
  readonly batchSize: number;
  readonly batchesInFlight: number;
  readonly pollIntervalMs: number;
  readonly publishTimeoutMs: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

export interface ResolvedOutboxOptions {
  readonly pool: OutboxPool;
  readonly tableName: string;
  /** `"schema"."table"` or `"table"`, quoted for SQL. */
  readonly qualifiedTable: string;
  readonly channel: string;
  readonly relay: ResolvedOutboxRelayOptions | false;
  readonly createTable: boolean;
  readonly notifyIntervalMs: number;
}

export const OUTBOX_DEFAULTS = Object.freeze({
  tableName: 'warren_outbox',
  createTable: true,
  notifyIntervalMs: 10,
  relay: Object.freeze({
    batchSize: 500,
    batchesInFlight: 2,
    pollIntervalMs: 1_000,
    publishTimeoutMs: 10_000,
    retryBaseMs: 200,
    retryMaxMs: 5_000,
  }),
});

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

/** Checks a table name and splits it into its quoted SQL form and its notification channel. */
export function outboxTableNames(tableName: unknown): { qualifiedTable: string; channel: string } {
  const parts = typeof tableName === 'string' ? tableName.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part)))
    throw new ConfigurationError(
      validationMessage(
        'outbox.tableName',
        'must be lowercase letters, digits and _ (at most 48, not starting with a digit), optionally schema.table',
        tableName,
      ),
    );
  return { qualifiedTable: parts.map((part) => `"${part}"`).join('.'), channel: parts.join('_') };
}

export function resolveOutboxOptions(input: OutboxOptions): ResolvedOutboxOptions {
  const pool = input?.pool as Partial<OutboxPool> | undefined;
  if (typeof pool?.query !== 'function' || typeof pool.connect !== 'function')
    throw new ConfigurationError(
      validationMessage('outbox.pool', 'must be a pg.Pool (new Pool(...) from the pg package)', pool),
    );
  const tableName = input.tableName ?? OUTBOX_DEFAULTS.tableName;
  return Object.freeze({
    pool: input.pool,
    tableName,
    ...outboxTableNames(tableName),
    relay: input.relay === false ? false : resolveRelay(input.relay === true ? {} : (input.relay ?? {})),
    createTable: input.createTable ?? OUTBOX_DEFAULTS.createTable,
    notifyIntervalMs: checkInteger(
      'outbox.notifyIntervalMs',
      input.notifyIntervalMs ?? OUTBOX_DEFAULTS.notifyIntervalMs,
      0,
    ),
  });
}

function resolveRelay(input: OutboxRelayOptions): ResolvedOutboxRelayOptions {
  const d = OUTBOX_DEFAULTS.relay;
  const relay = Object.freeze({
    batchSize: checkInteger('outbox.relay.batchSize', input.batchSize ?? d.batchSize, 1),
    batchesInFlight: checkInteger(
      'outbox.relay.batchesInFlight',
      input.batchesInFlight ?? d.batchesInFlight,
      1,
    ),
    pollIntervalMs: checkInteger('outbox.relay.pollIntervalMs', input.pollIntervalMs ?? d.pollIntervalMs, 1),
    publishTimeoutMs: checkInteger(
      'outbox.relay.publishTimeoutMs',
      input.publishTimeoutMs ?? d.publishTimeoutMs,
      1,
    ),
    retryBaseMs: checkInteger('outbox.relay.retryBaseMs', input.retryBaseMs ?? d.retryBaseMs, 1),
    retryMaxMs: checkInteger('outbox.relay.retryMaxMs', input.retryMaxMs ?? d.retryMaxMs, 1),
  });
  if (relay.retryMaxMs < relay.retryBaseMs)
    throw new ConfigurationError(
      validationMessage(
        'outbox.relay.retryMaxMs',
        `must be >= retryBaseMs (${relay.retryBaseMs})`,
        relay.retryMaxMs,
      ),
    );
  return relay;
}
