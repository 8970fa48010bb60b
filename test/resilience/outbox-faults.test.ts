import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import { type Warren } from '../../src';
import { OUTBOX_DEFAULTS } from '../../src/outbox';
import { outboxFaultTopology } from '../fixtures/outbox-fault-jobs';
import { startSingleNode, stopSingleNode } from '../support/private-broker';
import { BROKER_URL, cleanup, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';
import { OutboxLedger, OutboxWriter } from './outbox-ledger';
import {
  cleanPrivatePostgres,
  PRIVATE_PG_PORT,
  restartPrivatePostgres,
  startPrivatePostgres,
} from './private-postgres';
import { privateWarren, useSingleNode } from './private-warren';

const PG_URL = process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TEST_TIMEOUT_MS = 240_000;
const BATCH = 500;
/** The most rows one relay has published but not yet deleted: the batches it has in flight. */
const IN_FLIGHT_ROWS = BATCH * OUTBOX_DEFAULTS.relay.batchesInFlight;

const children = new Set<ChildProcess>();

/** A relay-only warren process on the shared broker; resolves once it relays. */
async function forkRelay(
  namespace: string,
  table: string,
  extraEnv: Record<string, string> = {},
): Promise<ChildProcess> {
  const child = fork(join(__dirname, '..', 'fixtures', 'outbox-fault-jobs.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      WARREN_URL: BROKER_URL,
      WARREN_NAMESPACE: namespace,
      WARREN_PG_URL: PG_URL,
      WARREN_OUTBOX_TABLE: table,
      WARREN_OUTBOX_BATCH: String(BATCH),
      ...extraEnv,
    },
  });
  children.add(child);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`relay process exited (${code}) before it was ready`)));
  });
  return child;
}

function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

const tableName = () => `warren_outbox_f_${randomBytes(4).toString('hex')}`;

async function writeCommitted(ledger: OutboxLedger, pool: Pool, warren: Warren, jobs: number): Promise<void> {
  for (let t = 0; t < jobs / 50; t++) await ledger.transaction(pool, warren, 50, t % 4 === 3);
}

describe('outbox under faults (shared broker, shared PostgreSQL)', () => {
  let pool: Pool;
  const tables: string[] = [];
  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 10 });
  });
  afterEach(async () => {
    await Promise.all([...children].map(killed));
    children.clear();
    await cleanup();
    for (const table of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS "${table}"`);
  });
  after(() => pool.end());

  it('loses nothing when a relay process is SIGKILLed mid-batch: its batch is relayed again', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new OutboxLedger('relay SIGKILLed mid-batch');
    const table = tableName();
    tables.push(table);
    const namespace = testNamespace('obkill');
    const worker = await testWarren({
      namespace,
      topology: outboxFaultTopology,
      handlers: [ledger.handler()],
      outbox: { pool, tableName: table, relay: false },
    });
    await worker.start();
    await writeCommitted(ledger, pool, worker, 4_000);
    // A lock that lets the relay claim and publish but holds its DELETE: the kill lands between the
    // broker's confirm and the delete, the window that at-least-once must cover.
    const blocker = await pool.connect();
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE "${table}" IN SHARE MODE`);
    let ranBeforeKill: Set<string>;
    try {
      // Without it, a backend waiting on a lock finishes the DELETE; COMMIT its dead client sent.
      const victim = await forkRelay(namespace, table, {
        PGOPTIONS: '-c client_connection_check_interval=100',
      });
      await waitFor(() => ledger.runs.size >= BATCH, { timeoutMs: 60_000, what: 'a first batch relayed' });
      await killed(victim);
      ranBeforeKill = new Set(ledger.runs.keys());
      // The server ends the dead relay's sessions within client_connection_check_interval; only then
      // does the lock go, or a session still waiting would run the DELETE; COMMIT it was sent.
      await waitFor(
        async () =>
          (
            await pool.query('SELECT 1 FROM pg_stat_activity WHERE query LIKE $1', [
              `%DELETE FROM "${table}"%`,
            ])
          ).rowCount === 0,
        { what: 'the dead relay sessions to end' },
      );
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    const left = (await worker.outbox.backlog()).size;
    assert.equal(left, ledger.committed.size, 'no row was deleted: the dead relay never committed');
    await forkRelay(namespace, table);
    await waitFor(() => ledger.allCompleted, { timeoutMs: 120_000, what: 'every committed job to run' });
    await waitFor(async () => (await worker.outbox.backlog()).size === 0, { what: 'an empty table' });
    const row = ledger.report({ rowsLeftAtKill: left, ranBeforeKill: ranBeforeKill.size });
    assert.equal(row.lost, 0);
    assert.equal(row.phantoms, 0);
    // The killed relay's batches in flight come twice (published, confirmed, never deleted): every job
    // that ran before the kill, and none beyond what it had in flight.
    assert.ok(row.duplicates >= ranBeforeKill.size, `duplicates ${row.duplicates} < ${ranBeforeKill.size}`);
    assert.ok(row.duplicates <= IN_FLIGHT_ROWS, `duplicates ${row.duplicates} > ${IN_FLIGHT_ROWS} in flight`);
  });

  it('publishes each job once when two relay processes race on one table', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new OutboxLedger('two relays racing');
    const table = tableName();
    tables.push(table);
    const namespace = testNamespace('obrace');
    const worker = await testWarren({
      namespace,
      topology: outboxFaultTopology,
      handlers: [ledger.handler()],
      outbox: { pool, tableName: table, relay: false },
    });
    await worker.start();
    await writeCommitted(ledger, pool, worker, 2_000);
    await Promise.all([forkRelay(namespace, table), forkRelay(namespace, table)]);
    const writer = new OutboxWriter(ledger, pool, worker, { jobsPerTransaction: 10, pauseMs: 5 });
    writer.start();
    await waitFor(() => ledger.committed.size >= 3_000, { timeoutMs: 60_000, what: '3000 committed' });
    await writer.stop();
    await waitFor(() => ledger.allCompleted, { timeoutMs: 120_000, what: 'every committed job to run' });
    const row = ledger.report();
    assert.equal(row.lost, 0);
    assert.equal(row.phantoms, 0);
    // No fault: SKIP LOCKED hands each row to one relay, which deletes it after its confirm.
    assert.equal(row.duplicates, 0);
  });
});

describe(`outbox while PostgreSQL restarts (a cluster of its own on ${PRIVATE_PG_PORT})`, () => {
  let pool: Pool;
  before(async () => {
    const url = await startPrivatePostgres();
    pool = new Pool({ connectionString: url, max: 10 });
    // Idle clients of a restarted server report here; the writer sees its own failures.
    pool.on('error', () => undefined);
  });
  after(async () => {
    await cleanup();
    await pool?.end().catch(() => undefined);
    await cleanPrivatePostgres();
  });

  it('relays every committed job once the database is back, and none that rolled back', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new OutboxLedger('PostgreSQL restarted');
    const worker = await testWarren({
      namespace: testNamespace('obpg'),
      topology: outboxFaultTopology,
      handlers: [ledger.handler()],
      outbox: { pool, relay: { pollIntervalMs: 200, retryMaxMs: 1_000 } },
    });
    await worker.start();
    const writer = new OutboxWriter(ledger, pool, worker, { jobsPerTransaction: 5, pauseMs: 10 });
    writer.start();
    await waitFor(() => ledger.runs.size >= 300, { timeoutMs: 60_000, what: '300 jobs before the restart' });
    const restartedAt = Date.now();
    await restartPrivatePostgres();
    const upAt = Date.now();
    const before = ledger.committed.size;
    await waitFor(() => ledger.committed.size >= before + 300, {
      timeoutMs: 60_000,
      what: '300 commits after',
    });
    await writer.stop();
    await waitFor(() => ledger.allCompleted, { timeoutMs: 120_000, what: 'every committed job to run' });
    const row = ledger.report({ restartMs: upAt - restartedAt });
    assert.equal(row.lost, 0);
    assert.equal(row.phantoms, 0);
    // A batch whose DELETE or COMMIT the restart cut off after its confirms is published again.
    assert.ok(row.duplicates <= IN_FLIGHT_ROWS, `duplicates ${row.duplicates} > ${IN_FLIGHT_ROWS} in flight`);
  });
});

describe('outbox while the broker is down for 10 s (a node of its own)', () => {
  const node = useSingleNode();
  let pool: Pool;
  const table = tableName();
  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 10 });
  });
  after(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });

  it('keeps every row until its confirm and relays all of them after the broker returns', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new OutboxLedger('broker down 10 s');
    const worker = await privateWarren(node.url, {
      namespace: testNamespace('obdown'),
      topology: outboxFaultTopology,
      handlers: [ledger.handler()],
      outbox: { pool, tableName: table, relay: { publishTimeoutMs: 2_000, retryMaxMs: 1_000 } },
    });
    await worker.start();
    const writer = new OutboxWriter(ledger, pool, worker, { jobsPerTransaction: 5, pauseMs: 20 });
    writer.start();
    await waitFor(() => ledger.runs.size >= 200, { timeoutMs: 60_000, what: '200 jobs before the outage' });
    await stopSingleNode();
    // The outage: 10 s during which the table may only grow (no confirm, no delete).
    const sizes: number[] = [];
    const downUntil = Date.now() + 10_000;
    while (Date.now() < downUntil) {
      sizes.push((await worker.outbox.backlog()).size);
      // A sample every 250 ms for the outage's set 10 s: the samples are the measurement, not a wait.
      await passTime(250);
    }
    await startSingleNode();
    const upAt = Date.now();
    assert.ok(sizes.length > 10);
    for (let i = 1; i < sizes.length; i++)
      assert.ok(
        sizes[i]! >= sizes[i - 1]!,
        `the backlog shrank while the broker was down: ${sizes.join(',')}`,
      );
    const runsAtUp = ledger.runs.size;
    await waitFor(() => ledger.runs.size > runsAtUp, {
      timeoutMs: 90_000,
      what: 'a job run after the restart',
    });
    const recoveryMs = Date.now() - upAt;
    await writer.stop();
    await waitFor(() => ledger.allCompleted, { timeoutMs: 120_000, what: 'every committed job to run' });
    await waitFor(async () => (await worker.outbox.backlog()).size === 0, { what: 'an empty table' });
    const row = ledger.report({ backlogDuringOutage: `${sizes[0]}..${sizes.at(-1)}`, recoveryMs });
    assert.equal(row.lost, 0);
    assert.equal(row.phantoms, 0);
  });
});
