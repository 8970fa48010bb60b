import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import {
  ConfigurationError,
  defineTopology,
  Job,
  MemoryDedupStore,
  PostgresDedupStore,
  type JobContext,
  type JobHandler,
} from '../../src';
import {
  cleanup,
  closeConnectionsNamed,
  messageCount,
  testNamespace,
  testWarren,
} from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const PG_URL = process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const topology = defineTopology({ queues: { reports: {} } });

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ fail?: boolean }> {
  readonly runs: string[] = [];
  gate: Promise<void> = Promise.resolve();
  async handle(data: { fail?: boolean }, ctx: JobContext) {
    this.runs.push(ctx.jobId);
    await this.gate;
    if (data.fail) throw new Error('report failed');
  }
}

function gated(handler: BuildReport): () => void {
  let open!: () => void;
  handler.gate = new Promise<void>((resolve) => (open = resolve));
  return open;
}

describe('deduplicated publishing', () => {
  let pool: Pool;
  const tables: string[] = [];
  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 5 });
  });
  afterEach(cleanup);
  after(async () => {
    await cleanup();
    for (const name of tables) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
    await pool.end();
  });

  it('returns the delayed or waiting job instead of a copy, and enqueues again once it completed', async () => {
    const handler = new BuildReport();
    const deduplication = new MemoryDedupStore();
    const warren = await testWarren({ topology, handlers: [handler], deduplication });
    const queue = planOf(warren).jobs.get('report.build')!.queueName;
    const first = await warren.publish('report.build', {}, { jobId: 'r1', deduplicate: true, delayMs: 300 });
    assert.equal(first.deduplicated, undefined);
    const second = await warren.publish('report.build', {}, { jobId: 'r1', deduplicate: true });
    assert.deepEqual(second, { jobId: 'r1', name: 'report.build', queue: 'reports', deduplicated: true });
    await warren.start();
    await waitFor(() => handler.runs.length === 1, { what: 'the job to run' });
    await waitFor(() => deduplication.size === 0, { what: 'the id to be released' });
    const third = await warren.publish('report.build', {}, { jobId: 'r1', deduplicate: true });
    assert.equal(third.deduplicated, undefined);
    await waitFor(() => handler.runs.length === 2, { what: 'the second job to run' });
    assert.equal(await messageCount(queue), 0);
  });

  it('refuses deduplicate without a jobId, without a store, and in publishMany', async () => {
    const warren = await testWarren({ topology, jobs: [BuildReport] });
    await assert.rejects(warren.publish('report.build', {}, { deduplicate: true }), ConfigurationError);
    await assert.rejects(
      warren.publish('report.build', {}, { jobId: 'x', deduplicate: true }),
      /deduplicate needs createWarren\(\{ deduplication/,
    );
    const withStore = await testWarren({
      topology,
      jobs: [BuildReport],
      deduplication: new MemoryDedupStore(),
    });
    await assert.rejects(
      withStore.publishMany([{ job: 'report.build', data: {}, options: { jobId: 'x', deduplicate: true } }]),
      ConfigurationError,
    );
    await assert.rejects(
      withStore.publish('report.build', {}, { jobId: 'x', deduplicate: { ttlMs: 0 } }),
      ConfigurationError,
    );
  });

  it('holds an id only for its TTL when nothing releases it', async () => {
    const warren = await testWarren({ topology, jobs: [BuildReport], deduplication: new MemoryDedupStore() });
    const queue = planOf(warren).jobs.get('report.build')!.queueName;
    const options = { jobId: 'ttl', deduplicate: { ttlMs: 300 } };
    await warren.publish('report.build', {}, options);
    assert.equal((await warren.publish('report.build', {}, options)).deduplicated, true);
    await waitFor(async () => (await warren.publish('report.build', {}, options)).deduplicated !== true, {
      what: 'the reservation to expire',
    });
    assert.equal(await messageCount(queue), 2);
  });

  it('keeps a reservation across a reconnect of the publisher, and releases it when the job ran', async () => {
    const namespace = testNamespace('dedup');
    const deduplication = new MemoryDedupStore();
    const publisher = await testWarren({
      namespace,
      topology,
      jobs: [BuildReport],
      deduplication,
      connection: { connectionName: `${namespace} publisher` },
    });
    const options = { jobId: 'rc-1', deduplicate: true, delayMs: 300 } as const;
    assert.equal((await publisher.publish('report.build', {}, options)).deduplicated, undefined);
    const reconnected = nextEvent(publisher, 'connected');
    assert.ok((await closeConnectionsNamed(`${namespace} publisher`)) >= 1);
    await reconnected;
    assert.equal((await publisher.publish('report.build', {}, options)).deduplicated, true);
    const handler = new BuildReport();
    const worker = await testWarren({ namespace, topology, handlers: [handler], deduplication });
    await worker.start();
    await waitFor(() => handler.runs.length === 1, { what: 'the delayed job to run once' });
    await waitFor(() => deduplication.size === 0, { what: 'the id to be released' });
    assert.equal((await publisher.publish('report.build', {}, options)).deduplicated, undefined);
    await waitFor(() => handler.runs.length === 2, { what: 'the job published again to run' });
  });

  it('PostgreSQL: two instances share reservations while the job runs, released when it dies', async () => {
    const tableName = `warren_dedup_t_${randomBytes(4).toString('hex')}`;
    tables.push(tableName);
    const namespace = testNamespace('dedup');
    const handler = new BuildReport();
    const worker = await testWarren({
      namespace,
      topology,
      handlers: [handler],
      deduplication: new PostgresDedupStore({ pool, tableName }),
    });
    const publisher = await testWarren({
      namespace,
      topology,
      jobs: [BuildReport],
      deduplication: new PostgresDedupStore({ pool, tableName }),
    });
    const queue = planOf(worker).jobs.get('report.build')!.queueName;
    const open = gated(handler);
    await worker.start();
    const options = { jobId: 'pg-1', deduplicate: true } as const;
    await publisher.publish('report.build', { fail: true }, options);
    await waitFor(() => handler.runs.length === 1, { what: 'the job to start' });
    // running on the other instance: both see the reservation
    assert.equal((await publisher.publish('report.build', {}, options)).deduplicated, true);
    assert.equal((await worker.publish('report.build', {}, options)).deduplicated, true);
    const dead = nextEvent(worker, 'failed', () => true);
    open();
    await dead;
    await waitFor(
      async () => (await pool.query(`SELECT 1 FROM "${tableName}" WHERE job_id = 'pg-1'`)).rowCount === 0,
      { what: 'the dead job to release its id' },
    );
    assert.equal((await publisher.publish('report.build', {}, options)).deduplicated, undefined);
    await waitFor(() => handler.runs.length === 2, { what: 'the new job to run' });
    assert.equal(await messageCount(queue), 0);
  });
  for (const kind of ['memory', 'PostgreSQL'] as const)
    it(`${kind}: a job ending after its reservation expired and the id was published again keeps the new reservation`, async () => {
      const tableName = `warren_dedup_t_${randomBytes(4).toString('hex')}`;
      tables.push(tableName);
      const deduplication =
        kind === 'memory' ? new MemoryDedupStore() : new PostgresDedupStore({ pool, tableName });
      const handler = new BuildReport();
      const worker = await testWarren({ topology, handlers: [handler], deduplication });
      const open = gated(handler);
      await worker.start();
      const id = { jobId: 'late-1' };
      await worker.publish('report.build', {}, { ...id, deduplicate: { ttlMs: 300 } });
      await waitFor(() => handler.runs.length === 1, { what: 'the first job to start' });
      // its reservation expires while it runs: the id is published again (a second copy, delayed 3 s)
      const again = { ...id, deduplicate: { ttlMs: 60_000 }, delayMs: 3_000 };
      await waitFor(async () => (await worker.publish('report.build', {}, again)).deduplicated !== true, {
        what: 'the first reservation to expire',
      });
      const completed = nextEvent(worker, 'completed', () => true);
      open();
      await completed;
      await new Promise((resolve) => setTimeout(resolve, 300)); // the first job's release has run
      assert.equal(
        (await worker.publish('report.build', {}, again)).deduplicated,
        true,
        'the second copy still waits: its reservation holds',
      );
      await waitFor(() => handler.runs.length === 2, { what: 'the second copy to run', timeoutMs: 10_000 });
      await waitFor(async () => (await worker.publish('report.build', {}, again)).deduplicated !== true, {
        what: 'the second copy to release its own reservation',
      });
    });
});
