import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigurationError, outboxTableSql } from '../../../src';
import { OUTBOX_DEFAULTS, resolveOutboxOptions, type OutboxPool } from '../../../src/outbox';

/** Never queried: resolving options must not touch the database. */
const pool = {
  query: () => Promise.reject(new Error('not used')),
  connect: () => Promise.reject(new Error('not used')),
} as unknown as OutboxPool;

function rejects(make: () => unknown, message: string): void {
  assert.throws(
    make,
    (error: unknown) =>
      error instanceof ConfigurationError &&
      error.code === 'CONFIGURATION_INVALID' &&
      error.message === message,
  );
}

describe('outbox options', () => {
  it('has frozen defaults and relays by default', () => {
    assert.ok(Object.isFrozen(OUTBOX_DEFAULTS) && Object.isFrozen(OUTBOX_DEFAULTS.relay));
    const resolved = resolveOutboxOptions({ pool });
    assert.equal(resolved.tableName, 'warren_outbox');
    assert.equal(resolved.qualifiedTable, '"warren_outbox"');
    assert.equal(resolved.channel, 'warren_outbox');
    assert.deepEqual(resolved.relay, OUTBOX_DEFAULTS.relay);
    assert.equal(resolveOutboxOptions({ pool, relay: false }).relay, false);
    assert.equal(resolveOutboxOptions({ pool, relay: { batchSize: 50 } }).relay && 50, 50);
  });

  it('quotes a schema-qualified table and derives its channel', () => {
    const resolved = resolveOutboxOptions({ pool, tableName: 'jobs.outbox' });
    assert.equal(resolved.qualifiedTable, '"jobs"."outbox"');
    assert.equal(resolved.channel, 'jobs_outbox');
  });

  it('rejects invalid values, naming the option, the rule and the value', () => {
    rejects(
      () => resolveOutboxOptions({ pool: {} as OutboxPool }),
      'outbox.pool must be a pg.Pool (new Pool(...) from the pg package) (got {})',
    );
    assert.throws(() => resolveOutboxOptions({ pool, tableName: 'Bad-Name' }), /outbox\.tableName must be/);
    rejects(
      () => resolveOutboxOptions({ pool, relay: { batchSize: 0 } }),
      'outbox.relay.batchSize must be an integer >= 1 (got 0)',
    );
    rejects(
      () => resolveOutboxOptions({ pool, relay: { retryBaseMs: 500, retryMaxMs: 100 } }),
      'outbox.relay.retryMaxMs must be >= retryBaseMs (500) (got 100)',
    );
  });

  it('ships a migration file with the DDL createTable runs', () => {
    let dir = __dirname;
    while (!safeExists(join(dir, 'package.json'))) dir = join(dir, '..');
    const shipped = readFileSync(join(dir, 'migrations', 'warren_outbox.sql'), 'utf8');
    const statement = shipped
      .split('\n')
      .filter((line) => !line.startsWith('--'))
      .join('\n');
    assert.equal(statement, outboxTableSql('"warren_outbox"'));
  });
});

function safeExists(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}
