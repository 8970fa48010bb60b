import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Pool } from 'pg';
import { ConfigurationError, MemoryIdempotencyStore, PostgresIdempotencyStore } from '../../../src';
import { IDEMPOTENCY_DEFAULTS } from '../../../src/idempotency';

/** Never queried: construction must not touch the database. */
const pool = { query: () => Promise.reject(new Error('not used')) } as unknown as Pool;

function rejects(make: () => unknown, message: string): void {
  assert.throws(
    make,
    (error: unknown) =>
      error instanceof ConfigurationError &&
      error.code === 'CONFIGURATION_INVALID' &&
      error.message === message,
  );
}

describe('idempotency store options', () => {
  it('has frozen defaults', () => {
    assert.ok(Object.isFrozen(IDEMPOTENCY_DEFAULTS));
    assert.equal(IDEMPOTENCY_DEFAULTS.retentionMs, 24 * 60 * 60_000);
    assert.equal(new PostgresIdempotencyStore({ pool }).tableName, 'warren_idempotency');
  });

  it('rejects invalid values at construction, naming the option, the rule and the value', () => {
    rejects(
      () => new MemoryIdempotencyStore({ retentionMs: 0 }),
      'idempotency.retentionMs must be an integer >= 1 (got 0)',
    );
    rejects(
      () => new MemoryIdempotencyStore({ recheckMs: 1.5 }),
      'idempotency.recheckMs must be an integer >= 1 (got 1.5)',
    );
    rejects(
      () => new MemoryIdempotencyStore({ maxCompleted: -1 }),
      'idempotency.maxCompleted must be an integer >= 1 (got -1)',
    );
    rejects(
      () => new PostgresIdempotencyStore({ pool, sweepIntervalMs: -5 }),
      'idempotency.sweepIntervalMs must be an integer >= 0 (got -5)',
    );
    rejects(
      () => new PostgresIdempotencyStore({ pool: undefined as unknown as Pool }),
      'idempotency.pool must be a pg.Pool (new Pool(...) from the pg package) (got undefined)',
    );
  });

  it('accepts plain and schema-qualified lowercase table names and refuses anything that would need escaping', () => {
    assert.equal(
      new PostgresIdempotencyStore({ pool, tableName: 'jobs.done_ids' }).tableName,
      'jobs.done_ids',
    );
    for (const tableName of [
      'Jobs',
      'done-ids',
      'a.b.c',
      '1st',
      'x"; DROP TABLE users; --',
      '',
      'a'.repeat(49),
    ]) {
      assert.throws(
        () => new PostgresIdempotencyStore({ pool, tableName }),
        (error: unknown) =>
          error instanceof ConfigurationError &&
          error.message.startsWith('idempotency.tableName must be lowercase'),
        tableName,
      );
    }
  });
});
