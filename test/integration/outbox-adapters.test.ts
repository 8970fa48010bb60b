import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { knexTransaction, kyselyTransaction, type Warren } from '../../src';
import { outboxTables, outboxTopology, PG_URL, SendReceipt } from '../fixtures/outbox-jobs';
import { cleanup, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

describe('outbox adapters for Kysely and Knex (the real libraries, on PostgreSQL)', () => {
  let pool: Pool;
  let kysely: Kysely<Record<string, never>>;
  let knex: Knex;
  const tables = outboxTables();

  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 10 });
    kysely = new Kysely({
      dialect: new PostgresDialect({ pool: new Pool({ connectionString: PG_URL, max: 4 }) }),
    });
    knex = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 4 } });
  });
  afterEach(async () => {
    await cleanup();
    await tables.drop(pool);
  });
  after(async () => {
    await kysely.destroy();
    await knex.destroy();
    await pool.end();
  });

  async function relaying(handler: SendReceipt): Promise<{ warren: Warren; table: string }> {
    const table = tables.next();
    const warren = await testWarren({
      topology: outboxTopology,
      handlers: [handler],
      outbox: { pool, tableName: table },
    });
    await warren.start();
    return { warren, table };
  }

  const rowsIn = async (table: string) =>
    (await pool.query(`SELECT job_id FROM "${table}" ORDER BY id`)).rows.map((r) => r.job_id);

  it('writes through a Kysely transaction: committed jobs run, rolled-back ones do not, duplicates are reported', async () => {
    const handler = new SendReceipt();
    const { warren, table } = await relaying(handler);
    await assert.rejects(
      kysely.transaction().execute(async (trx) => {
        await warren.outbox.publish(kyselyTransaction(trx), SendReceipt, { orderId: 0 }, { jobId: 'ky-0' });
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    const duplicates = await kysely.transaction().execute(async (trx) => {
      const tx = kyselyTransaction(trx);
      const first = await warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'ky-1' });
      const second = await warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'ky-1' });
      return [first.duplicate, second.duplicate];
    });
    assert.deepEqual(duplicates, [false, true]);
    await waitFor(() => handler.runs.length === 1, { what: 'the committed job' });
    assert.deepEqual(handler.runs, [{ jobId: 'ky-1', orderId: 1 }]);
    await waitFor(async () => (await rowsIn(table)).length === 0, { what: 'the row to be deleted' });
  });

  it('writes through a Knex transaction: committed jobs run, rolled-back ones do not, duplicates are reported', async () => {
    const handler = new SendReceipt();
    const { warren, table } = await relaying(handler);
    await assert.rejects(
      knex.transaction(async (trx) => {
        await warren.outbox.publish(knexTransaction(trx), SendReceipt, { orderId: 0 }, { jobId: 'kx-0' });
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    const duplicates = await knex.transaction(async (trx) => {
      const tx = knexTransaction(trx);
      const first = await warren.outbox.publish(tx, SendReceipt, { orderId: 2 }, { jobId: 'kx-2' });
      const second = await warren.outbox.publish(tx, SendReceipt, { orderId: 2 }, { jobId: 'kx-2' });
      return [first.duplicate, second.duplicate];
    });
    assert.deepEqual(duplicates, [false, true]);
    await waitFor(() => handler.runs.length === 1, { what: 'the committed job' });
    assert.deepEqual(handler.runs, [{ jobId: 'kx-2', orderId: 2 }]);
    await waitFor(async () => (await rowsIn(table)).length === 0, { what: 'the row to be deleted' });
  });
});
