import { checkInteger, ConfigurationError, validationMessage } from '../core';

/**
 * The part of a `pg.Pool` the PostgreSQL store uses. Structural, so that warren's type declarations
 * do not need `pg` (an optional peer dependency) installed.
 */
export interface PgPool {
  // biome-ignore lint/suspicious/noExplicitAny: pg.Pool's own query signature
  query<R extends Record<string, any> = Record<string, any>>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** Settings every idempotency store shares. */
export interface IdempotencyStoreOptions {
  /**
   * How long a completed job id is remembered (like BullMQ's `removeOnComplete.age`): a copy that
   * arrives later than this after the completion runs again. Default 24 h. Make it longer than the
   * longest gap between duplicates you expect (publisher retries, redeliveries, delayed copies).
   */
  readonly retentionMs?: number;
  /**
   * A copy that arrives while another worker runs the same id is re-delayed by this much (or by what
   * is left of that worker's lease, if less), then checked again. Default 5 000 ms.
   */
  readonly recheckMs?: number;
}

/** Options of {@link MemoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions extends IdempotencyStoreOptions {
  /**
   * At most this many completed ids are kept; past it the oldest are forgotten before their
   * retention ends (memory stays bounded under load). Default 100 000.
   */
  readonly maxCompleted?: number;
  /** The clock, in ms since epoch. Default `Date.now`; tests pass a fake one. */
  readonly now?: () => number;
}

/** Options of {@link PostgresIdempotencyStore}. */
export interface PostgresIdempotencyStoreOptions extends IdempotencyStoreOptions {
  /** The application's node-postgres pool. The store only runs queries on it and never ends it. */
  readonly pool: PgPool;
  /**
   * The table, created if missing: lowercase letters, digits and `_`, optionally schema-qualified
   * (`jobs.warren_idempotency`). Default `warren_idempotency`.
   */
  readonly tableName?: string;
  /**
   * Completed ids past their retention and expired claims are deleted at most this often, by a
   * claim that happens to come along (no timer, nothing to stop). 0 disables it: call `sweep()`
   * yourself. Expired rows never block a claim either way. Default 60 000 ms.
   */
  readonly sweepIntervalMs?: number;
}

export interface ResolvedIdempotencyStoreOptions {
  readonly retentionMs: number;
  readonly recheckMs: number;
}

export interface ResolvedMemoryIdempotencyStoreOptions extends ResolvedIdempotencyStoreOptions {
  readonly maxCompleted: number;
  readonly now: () => number;
}

export interface ResolvedPostgresIdempotencyStoreOptions extends ResolvedIdempotencyStoreOptions {
  readonly pool: PgPool;
  /** The table as written by the user, and its parts. */
  readonly tableName: string;
  readonly schema: string | undefined;
  readonly table: string;
  readonly sweepIntervalMs: number;
}

export const IDEMPOTENCY_DEFAULTS = Object.freeze({
  retentionMs: 24 * 60 * 60_000,
  recheckMs: 5_000,
  maxCompleted: 100_000,
  tableName: 'warren_idempotency',
  sweepIntervalMs: 60_000,
});

/**
 * One identifier part; 48 characters leave room for the index name derived from it within PostgreSQL's 63.
 */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

export function resolveMemoryIdempotencyStoreOptions(
  input: MemoryIdempotencyStoreOptions = {},
): ResolvedMemoryIdempotencyStoreOptions {
  if (input.now !== undefined && typeof input.now !== 'function')
    throw new ConfigurationError(
      validationMessage('idempotency.now', 'must be a function returning ms since epoch', input.now),
    );
  return Object.freeze({
    ...resolveShared(input),
    maxCompleted: checkInteger(
      'idempotency.maxCompleted',
      input.maxCompleted ?? IDEMPOTENCY_DEFAULTS.maxCompleted,
      1,
    ),
    now: input.now ?? Date.now,
  });
}

export function resolvePostgresIdempotencyStoreOptions(
  input: PostgresIdempotencyStoreOptions,
): ResolvedPostgresIdempotencyStoreOptions {
  if (
    input === null ||
    typeof input !== 'object' ||
    input.pool === null ||
    typeof input.pool !== 'object' ||
    typeof input.pool.query !== 'function'
  ) {
    throw new ConfigurationError(
      validationMessage(
        'idempotency.pool',
        'must be a pg.Pool (new Pool(...) from the pg package)',
        input?.pool,
      ),
    );
  }
  const tableName = input.tableName ?? IDEMPOTENCY_DEFAULTS.tableName;
  const parts = typeof tableName === 'string' ? tableName.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new ConfigurationError(
      validationMessage(
        'idempotency.tableName',
        'must be lowercase letters, digits and _ (at most 48, not starting with a digit), optionally schema-qualified as schema.table',
        tableName,
      ),
    );
  }
  return Object.freeze({
    ...resolveShared(input),
    pool: input.pool,
    tableName,
    schema: parts.length === 2 ? parts[0] : undefined,
    table: parts[parts.length - 1]!,
    sweepIntervalMs: checkInteger(
      'idempotency.sweepIntervalMs',
      input.sweepIntervalMs ?? IDEMPOTENCY_DEFAULTS.sweepIntervalMs,
      0,
    ),
  });
}

function resolveShared(input: IdempotencyStoreOptions): ResolvedIdempotencyStoreOptions {
  return {
    retentionMs: checkInteger(
      'idempotency.retentionMs',
      input.retentionMs ?? IDEMPOTENCY_DEFAULTS.retentionMs,
      1,
    ),
    recheckMs: checkInteger('idempotency.recheckMs', input.recheckMs ?? IDEMPOTENCY_DEFAULTS.recheckMs, 1),
  };
}
