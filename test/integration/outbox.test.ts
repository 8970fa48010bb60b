import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Pool } from 'pg';
import { ConfigurationError, OutboxError, PayloadValidationError, type Warren } from '../../src';
import { inTransaction, outboxTables, outboxTopology, PG_URL, SendReceipt } from '../fixtures/outbox-jobs';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

describe('transactional outbox', () => {
  let pool: Pool;
  const tables = outboxTables();

  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 20 });
  });
  afterEach(async () => {
    await cleanup();
    await tables.drop(pool);
  });
  after(() => pool.end());

  const rowsIn = async (table: string) =>
    Number((await pool.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n);

  async function relaying(
    handler: SendReceipt,
    table: string,
    relay:
      | { pollIntervalMs?: number; batchSize?: number; retryBaseMs?: number; retryMaxMs?: number }
      | false = {},
    namespace?: string,
  ): Promise<Warren> {
    const warren = await testWarren({
      ...(namespace ? { namespace } : {}),
      topology: outboxTopology,
      handlers: [handler],
      outbox: { pool, tableName: table, relay },
    });
    await warren.start();
    return warren;
  }

  it('publishes a committed job once, with its job id as message id, deletes its row and says so', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const warren = await relaying(handler, table);
    const relayed: string[] = [];
    warren.on('outboxRelayed', (event) => {
      assert.equal(event.table, table);
      relayed.push(...event.jobIds);
    });
    const published = await inTransaction(pool, (tx) =>
      warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'receipt-1' }),
    );
    assert.deepEqual(published, {
      jobId: 'receipt-1',
      name: 'receipt.send',
      queue: 'receipts',
      duplicate: false,
    });
    await waitFor(() => handler.runs.length === 1, { what: 'the job to run' });
    assert.deepEqual(handler.runs, [{ jobId: 'receipt-1', orderId: 1 }]);
    await waitFor(async () => (await rowsIn(table)) === 0, { what: 'the row to be deleted' });
    await waitFor(() => relayed.length > 0, { what: 'the outboxRelayed event' });
    assert.deepEqual(relayed, ['receipt-1']);
  });

  it('publishes nothing from a rolled-back transaction', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const warren = await relaying(handler, table);
    await assert.rejects(
      inTransaction(pool, async (tx) => {
        await warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'rolled-back' });
        throw new Error('the business write failed');
      }),
      /business write failed/,
    );
    // A later committed job is relayed: had the rolled-back one existed, it would have gone first.
    await inTransaction(pool, (tx) =>
      warren.outbox.publish(tx, SendReceipt, { orderId: 2 }, { jobId: 'later' }),
    );
    await waitFor(() => handler.runs.length === 1, { what: 'the committed job' });
    assert.deepEqual(handler.runs, [{ jobId: 'later', orderId: 2 }]);
  });

  it('ignores a second write of a waiting job id without aborting the transaction', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const warren = await relaying(handler, table, false);
    const results = await inTransaction(pool, async (tx) => {
      const first = await warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'dup' });
      const second = await warren.outbox.publish(tx, SendReceipt, { orderId: 99 }, { jobId: 'dup' });
      // The transaction is still usable: a failed statement would make this throw 25P02.
      await tx.query('SELECT 1');
      return [first.duplicate, second.duplicate];
    });
    assert.deepEqual(results, [false, true]);
    const { rows } = await pool.query(`SELECT job_id, payload FROM "${table}"`);
    assert.deepEqual(rows, [{ job_id: 'dup', payload: { orderId: 1 } }]);
  });

  it('checks the payload and options like publish, before anything is written', async () => {
    const table = tables.next();
    const warren = await relaying(new SendReceipt(), table, false);
    await inTransaction(pool, async (tx) => {
      await assert.rejects(
        warren.outbox.publish(tx, SendReceipt, { orderId: 'x' } as never),
        PayloadValidationError,
      );
      await assert.rejects(
        warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { priority: 3 }),
        ConfigurationError,
      );
      await assert.rejects(warren.outbox.publish(tx, 'no.such.job', {}), /no\.such\.job/);
      // the relay sends rows later: it neither reserves a deduplicated id nor keeps a controllable copy
      await assert.rejects(
        warren.outbox.publish(tx, SendReceipt, { orderId: 1 }, { jobId: 'd1', deduplicate: true }),
        /work with warren\.publish only/,
      );
    });
    assert.equal(await rowsIn(table), 0);
  });

  it('reports a failed write as OUTBOX_FAILED with the driver error as cause', async () => {
    const table = tables.next();
    const warren = await relaying(new SendReceipt(), table, false);
    await pool.query(`DROP TABLE "${table}"`);
    const error = await inTransaction(pool, (tx) =>
      warren.outbox.publish(tx, SendReceipt, { orderId: 1 }),
    ).catch((e: unknown) => e);
    assert.ok(error instanceof OutboxError);
    assert.equal(error.code, 'OUTBOX_FAILED');
    assert.equal(error.operation, 'publish');
    assert.equal((error.cause as { code?: string }).code, '42P01');
  });

  it('wakes on the commit notification, long before its poll interval', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const warren = await relaying(handler, table, { pollIntervalMs: 600_000 });
    // The relay looks once when its LISTEN is set up; wait for that, then it sleeps for 10 minutes.
    await waitFor(
      async () =>
        (await pool.query('SELECT 1 FROM pg_stat_activity WHERE query LIKE $1', [`LISTEN "${table}"`]))
          .rowCount,
    );
    const startedAt = Date.now();
    await inTransaction(pool, (tx) => warren.outbox.publish(tx, SendReceipt, { orderId: 7 }));
    await waitFor(() => handler.runs.length === 1, { timeoutMs: 10_000, what: 'the notified relay' });
    assert.ok(Date.now() - startedAt < 10_000);
  });

  it('notifies at most once per notifyIntervalMs per process, then once more for the writes it skipped', async () => {
    const table = tables.next();
    const listener = await pool.connect();
    const notifications: number[] = [];
    listener.on('notification', (message) => message.channel === table && notifications.push(Date.now()));
    try {
      await listener.query(`LISTEN "${table}"`);
      const every = await testWarren({
        topology: outboxTopology,
        jobs: [SendReceipt],
        outbox: { pool, tableName: table, relay: false, notifyIntervalMs: 0 },
      });
      for (let i = 0; i < 3; i++)
        await inTransaction(pool, (tx) => every.outbox.publish(tx, SendReceipt, { orderId: i }));
      await waitFor(() => notifications.length === 3, { what: 'one notification per write' });
      notifications.length = 0;
      const sparing = await testWarren({
        topology: outboxTopology,
        jobs: [SendReceipt],
        outbox: { pool, tableName: table, relay: false, notifyIntervalMs: 1_000 },
      });
      const startedAt = Date.now();
      for (let i = 0; i < 5; i++)
        await inTransaction(pool, (tx) => sparing.outbox.publish(tx, SendReceipt, { orderId: i }));
      await waitFor(() => notifications.length === 2, { what: 'the first and the trailing notification' });
      assert.ok(notifications[1]! - startedAt >= 900, 'the trailing one comes after the interval');
      await waitFor(async () => (await rowsIn(table)) === 8);
      assert.equal(notifications.length, 2);
    } finally {
      listener.release();
    }
  });

  it('polls for rows written without a notification (raw SQL, lost LISTEN connection)', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    await relaying(handler, table, { pollIntervalMs: 200 });
    await pool.query(
      `INSERT INTO "${table}" (job_id, job_name, payload) VALUES ('raw-1', 'receipt.send', '{"orderId":5}')`,
    );
    await waitFor(() => handler.runs.length === 1, { what: 'the polled row' });
    assert.deepEqual(handler.runs, [{ jobId: 'raw-1', orderId: 5 }]);
  });

  it('parks a row naming a job no topology declares after its attempts, and relays a row without its reserved headers', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    await relaying(handler, table, { pollIntervalMs: 100, retryBaseMs: 20, retryMaxMs: 100 });
    // written with raw SQL, as another service or an old warren might: outbox.publish refuses both
    await pool.query(
      `INSERT INTO "${table}" (job_id, job_name, payload, options) VALUES
        ('ghost', 'nobody.knows', '{}', '{}'),
        ('forged-headers', 'receipt.send', '{"orderId":6}', '{"headers":{"warren-max-attempts":0,"x-death":"x","note":"ok"}}'),
        ('plain', 'receipt.send', '{"orderId":7}', '{}')`,
    );
    await waitFor(() => handler.runs.length === 2, { what: 'the two relayable rows to run' });
    assert.deepEqual(handler.runs.map((r) => r.jobId).sort(), ['forged-headers', 'plain']);
    const parked = await waitFor(
      async () =>
        (await pool.query(`SELECT options FROM "${table}" WHERE job_id = 'ghost'`)).rows[0]?.options
          ?.parkedReason,
      { what: 'the unknown job parked', timeoutMs: 20_000 },
    );
    assert.equal(parked, 'unknown-job');
    assert.equal(await rowsIn(table), 1);
  });

  it('publishes rows in commit order within one relay, across batches', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const namespace = testNamespace('outbox');
    const writer = await relaying(handler, table, false, namespace);
    for (let t = 0; t < 5; t++)
      await inTransaction(pool, async (tx) => {
        for (let i = 0; i < 40; i++) await writer.outbox.publish(tx, SendReceipt, { orderId: t * 40 + i });
      });
    await testWarren({
      namespace,
      topology: outboxTopology,
      jobs: [SendReceipt],
      outbox: { pool, tableName: table, relay: { batchSize: 30 } },
    });
    await waitFor(() => handler.runs.length === 200, { what: '200 runs' });
    assert.deepEqual(
      handler.runs.map((r) => r.orderId),
      Array.from({ length: 200 }, (_, i) => i),
    );
  });

  it('reports the backlog: rows waiting and the oldest one age', async () => {
    const table = tables.next();
    const warren = await relaying(new SendReceipt(), table, false);
    assert.deepEqual(await warren.outbox.backlog(), { size: 0, oldestAgeMs: 0 });
    await inTransaction(pool, async (tx) => {
      for (let i = 0; i < 3; i++) await warren.outbox.publish(tx, SendReceipt, { orderId: i });
    });
    await pool.query(`UPDATE "${table}" SET created_at = now() - interval '5 seconds'`);
    const backlog = await warren.outbox.backlog();
    assert.equal(backlog.size, 3);
    assert.ok(backlog.oldestAgeMs >= 5_000 && backlog.oldestAgeMs < 60_000, `${backlog.oldestAgeMs}`);
  });

  it('lets two relays drain one table at once, each job published once', async () => {
    const table = tables.next();
    const handler = new SendReceipt();
    const namespace = testNamespace('outbox');
    const first = await relaying(handler, table, { batchSize: 20 }, namespace);
    await testWarren({
      namespace,
      topology: outboxTopology,
      jobs: [SendReceipt],
      outbox: { pool, tableName: table, relay: { batchSize: 20 } },
    });
    await Promise.all(
      Array.from({ length: 10 }, (_, t) =>
        inTransaction(pool, async (tx) => {
          for (let i = 0; i < 30; i++) await first.outbox.publish(tx, SendReceipt, { orderId: t * 30 + i });
        }),
      ),
    );
    await waitFor(() => handler.runs.length >= 300, { timeoutMs: 30_000, what: '300 runs' });
    await waitFor(async () => (await rowsIn(table)) === 0, { what: 'an empty table' });
    assert.equal(new Set(handler.runs.map((r) => r.orderId)).size, 300);
    assert.equal(handler.runs.length, 300);
  });

  it('says how to configure it when used without outbox options', async () => {
    const warren = await testWarren({ topology: outboxTopology, jobs: [SendReceipt] });
    assert.throws(() => warren.outbox, ConfigurationError);
  });
});
