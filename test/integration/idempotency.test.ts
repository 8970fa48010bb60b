import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import {
  HEADERS,
  Job,
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  type IdempotencyStore,
  type JobContext,
  type JobHandler,
} from '../../src';
import type { JobEventBase } from '../../src/core';
import { dedupTopology, DedupJob, type WorkerReport } from '../fixtures/idempotency-worker';
import { cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';
import { createRecordingLogger } from '../../src/testing';

const PG_URL = process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Fails its first attempt when asked to, then succeeds. */
@Job('dedup.flaky', { queue: 'dedup', attempts: 3, backoff: { type: 'fixed', delayMs: 100 } })
class FlakyJob implements JobHandler<{ failFirst: boolean }> {
  readonly runs: { jobId: string; attempt: number }[] = [];
  async handle(data: { failFirst: boolean }, ctx: JobContext) {
    this.runs.push({ jobId: ctx.jobId, attempt: ctx.attempt });
    if (data.failFirst && ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

/** Counts runs per job id. */
function runCounter() {
  const runs: string[] = [];
  const handler = new DedupJob((ctx) => runs.push(ctx.jobId));
  return { runs, handler };
}

function collect(
  warren: { on(event: 'duplicate' | 'completed', listener: (event: JobEventBase) => void): unknown },
  event: 'duplicate' | 'completed',
): string[] {
  const ids: string[] = [];
  warren.on(event, (e) => ids.push(e.jobId));
  return ids;
}

describe('idempotency keys', () => {
  let pool: Pool;
  const tables: string[] = [];
  const children: ChildProcess[] = [];
  const pgStore = (options: { recheckMs?: number; tableName?: string; pool?: Pool } = {}) => {
    const tableName = options.tableName ?? `warren_idem_i_${randomBytes(4).toString('hex')}`;
    if (!tables.includes(tableName)) tables.push(tableName);
    return new PostgresIdempotencyStore({
      pool: options.pool ?? pool,
      tableName,
      recheckMs: options.recheckMs ?? 200,
    });
  };

  before(() => {
    pool = new Pool({ connectionString: PG_URL });
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map(stopChild));
    await cleanup();
    for (const name of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
  });
  after(() => pool.end());

  for (const [label, makeStore] of [
    ['the memory store', () => new MemoryIdempotencyStore({ recheckMs: 200 })],
    ['the PostgreSQL store', () => pgStore()],
  ] as const) {
    it(`runs a job id published twice once, and reports the copy as a duplicate (${label})`, async () => {
      const { runs, handler } = runCounter();
      const warren = await testWarren({
        topology: dedupTopology,
        handlers: [handler],
        idempotency: makeStore(),
      });
      const completed = collect(warren, 'completed');
      const duplicates = collect(warren, 'duplicate');
      await warren.start();
      // Both copies are in flight together: the second finds the first running, waits, then sees it
      // completed.
      await warren.publish(DedupJob, { workMs: 300 }, { jobId: 'invoice-42' });
      await warren.publish(DedupJob, { workMs: 300 }, { jobId: 'invoice-42' });
      await waitFor(() => duplicates.length === 1, { what: 'the duplicate event' });
      assert.deepEqual(runs, ['invoice-42']);
      assert.deepEqual(completed, ['invoice-42']);
      assert.deepEqual(duplicates, ['invoice-42']);

      // A copy long after the completion is a duplicate at once.
      await warren.publish(DedupJob, { workMs: 0 }, { jobId: 'invoice-42' });
      await waitFor(() => duplicates.length === 2, { what: 'the second duplicate event' });
      assert.deepEqual(runs, ['invoice-42']);
    });
  }

  it('runs each id once when two warren instances of one process share a memory store', async () => {
    const store = new MemoryIdempotencyStore({ recheckMs: 200 });
    const namespace = testNamespace('idem');
    const a = runCounter();
    const b = runCounter();
    const first = await testWarren({
      namespace,
      topology: dedupTopology,
      handlers: [a.handler],
      idempotency: store,
    });
    const second = await testWarren({
      namespace,
      topology: dedupTopology,
      handlers: [b.handler],
      idempotency: store,
    });
    const duplicates = [...[first, second].map((w) => collect(w, 'duplicate'))];
    await Promise.all([first.start(), second.start()]);
    for (let copy = 0; copy < 3; copy++)
      for (let i = 0; i < 10; i++) await first.publish(DedupJob, { workMs: 50 }, { jobId: `m-${i}` });
    await waitFor(() => duplicates.flat().length === 20, { what: '20 duplicates', timeoutMs: 15_000 });
    assert.deepEqual([...a.runs, ...b.runs].sort(), Array.from({ length: 10 }, (_, i) => `m-${i}`).sort());
  });

  it('runs each id exactly once when two worker processes consume one queue with a shared PostgreSQL store', async () => {
    const namespace = testNamespace('idem');
    const store = pgStore();
    await store.prepare();
    const publisher = await testWarren({ namespace, topology: dedupTopology, jobs: [DedupJob] });
    const reports: WorkerReport[] = [];
    const workers = [0, 1].map(() =>
      startWorker(
        { WARREN_NAMESPACE: namespace, WARREN_PG_URL: PG_URL, WARREN_PG_TABLE: store.tableName },
        reports,
      ),
    );
    children.push(...workers);
    await waitFor(() => reports.filter((r) => r.kind === 'ready').length === 2, {
      what: 'both worker processes',
      timeoutMs: 20_000,
    });

    // 30 ids, 3 copies each: half published back to back (copies run into each other while running),
    // half spread over the batch (copies arrive after the completion).
    const ids = Array.from({ length: 30 }, (_, i) => `order-${i}`);
    for (const id of ids.slice(0, 15))
      for (let copy = 0; copy < 3; copy++) await publisher.publish(DedupJob, { workMs: 100 }, { jobId: id });
    for (let copy = 0; copy < 3; copy++)
      for (const id of ids.slice(15)) await publisher.publish(DedupJob, { workMs: 100 }, { jobId: id });

    const settled = () => reports.filter((r) => r.kind === 'ran' || r.kind === 'duplicate').length;
    await waitFor(() => settled() === 90, {
      what: 'all 90 copies to run or be reported as duplicates',
      timeoutMs: 30_000,
    });
    const ran = reports.filter((r): r is Extract<WorkerReport, { jobId: string }> => r.kind === 'ran');
    const runsPerId = new Map<string, number>();
    for (const r of ran) runsPerId.set(r.jobId, (runsPerId.get(r.jobId) ?? 0) + 1);
    assert.deepEqual([...runsPerId.keys()].sort(), [...ids].sort());
    assert.deepEqual([...new Set(runsPerId.values())], [1], 'every id ran exactly once');
    assert.equal(reports.filter((r) => r.kind === 'duplicate').length, 60);
    assert.equal(new Set(ran.map((r) => r.pid)).size, 2, 'both processes ran jobs');
  });

  it('does not run a job again when a copy of an already completed id is redelivered, even to a fresh process', async () => {
    const namespace = testNamespace('idem');
    const tableName = `warren_idem_i_${randomBytes(4).toString('hex')}`;
    const first = runCounter();
    const original = await testWarren({
      namespace,
      topology: dedupTopology,
      handlers: [first.handler],
      idempotency: pgStore({ tableName }),
    });
    await original.start();
    const done = nextEvent(original, 'completed');
    await original.publish(DedupJob, { workMs: 0 }, { jobId: 'ship-7' });
    await done;
    await original.close();

    // "After a restart": another connection, another pool, another store object on the same table.
    const otherPool = new Pool({ connectionString: PG_URL });
    try {
      const second = runCounter();
      const afterRestart = await testWarren({
        namespace,
        topology: dedupTopology,
        handlers: [second.handler],
        idempotency: pgStore({ tableName, pool: otherPool }),
      });
      const duplicate = nextEvent<JobEventBase>(afterRestart, 'duplicate');
      await afterRestart.start();
      // The copy the broker would redeliver had the worker crashed between recording the completion and
      // acking.
      const connection = await rawConnection();
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(
        planOf(afterRestart).jobs.get('dedup.run')!.queueName,
        Buffer.from('{"workMs":0}'),
        {
          type: 'dedup.run',
          messageId: 'ship-7',
          contentType: 'application/json',
          persistent: true,
          headers: { [HEADERS.attempt]: 1 },
        },
      );
      await channel.waitForConfirms();
      await connection.close();
      assert.deepEqual(await duplicate, { jobId: 'ship-7', name: 'dedup.run', queue: 'dedup', attempt: 1 });
      assert.deepEqual(first.runs, ['ship-7']);
      assert.deepEqual(second.runs, []);
    } finally {
      await cleanup();
      await otherPool.end();
    }
  });

  it("runs a job whose claim was left by a crashed worker once that claim's lease expires", async () => {
    const store = pgStore();
    const { runs, handler } = runCounter();
    const warren = await testWarren({ topology: dedupTopology, handlers: [handler], idempotency: store });
    await warren.start();
    const completed = nextEvent<JobEventBase>(warren, 'completed', () => true, 15_000);
    // A worker claimed the id and died before finishing: nobody completes or releases the claim. Claimed
    // just before the publish (not before the warren starts, which may take longer than the lease on a
    // loaded machine), and timed from before the claim: its lease ends 1.5 s after that at the earliest.
    const claimedAt = Date.now();
    assert.equal((await pgStore({ tableName: store.tableName }).claim('report-9', 1_500)).status, 'claimed');
    await warren.publish(DedupJob, { workMs: 0 }, { jobId: 'report-9' });
    assert.equal((await completed).attempt, 1, 'waiting for the lease spent no attempt');
    assert.ok(Date.now() - claimedAt >= 1_500, 'it waited for the lease');
    assert.deepEqual(runs, ['report-9']);
  });

  it('releases the claim of a failed attempt so the retry runs, and remembers only the success', async () => {
    const store: IdempotencyStore = pgStore();
    const flaky = new FlakyJob();
    const warren = await testWarren({ topology: dedupTopology, handlers: [flaky], idempotency: store });
    const duplicates = collect(warren, 'duplicate');
    await warren.start();
    const completed = nextEvent<JobEventBase>(warren, 'completed');
    await warren.publish(FlakyJob, { failFirst: true }, { jobId: 'pay-3' });
    assert.equal((await completed).attempt, 2);
    await warren.publish(FlakyJob, { failFirst: true }, { jobId: 'pay-3' });
    await waitFor(() => duplicates.length === 1, { what: 'the duplicate' });
    assert.deepEqual(flaky.runs, [
      { jobId: 'pay-3', attempt: 1 },
      { jobId: 'pay-3', attempt: 2 },
    ]);
  });

  it('postpones a job without spending an attempt or a delivery while the store is down, and runs it once the store is back', async () => {
    // The store's own failure modes are tested against PostgreSQL; here the point is what the worker does
    // about one.
    const memory = new MemoryIdempotencyStore();
    let outages = 4;
    const flakyStore: IdempotencyStore = {
      claim: (jobId, leaseMs) =>
        outages-- > 0 ? Promise.reject(new Error('database is restarting')) : memory.claim(jobId, leaseMs),
      complete: (jobId) => memory.complete(jobId),
      release: (jobId) => memory.release(jobId),
    };
    const { runs, handler } = runCounter();
    // deliveryLimit 2: returning the job to its queue on every store failure would dead-letter it on the
    // third.
    const warren = await testWarren({
      topology: dedupTopology,
      handlers: [handler],
      idempotency: flakyStore,
      queues: { deliveryLimit: 2 },
      worker: { postponeDelayMs: 100 },
    });
    await warren.start();
    const completed = nextEvent<JobEventBase>(warren, 'completed', () => true, 15_000);
    await warren.publish(DedupJob, { workMs: 0 }, { jobId: 'during-outage' });
    assert.equal((await completed).attempt, 1);
    assert.deepEqual(runs, ['during-outage']);
    assert.equal(await warren.deadLetters.count('dedup'), 0);
  });

  it('logs a claim it could not release when a shutdown returns a running job to its queue', async () => {
    // The store's release fails as a database that went away would; what is observed is the worker's
    // answer to it: a warning naming the job (the claim then holds until its lease ends), not silence.
    const memory = new MemoryIdempotencyStore({ recheckMs: 200 });
    const failingRelease: IdempotencyStore = {
      claim: (jobId, leaseMs) => memory.claim(jobId, leaseMs),
      complete: (jobId) => memory.complete(jobId),
      release: () => Promise.reject(new Error('connection terminated')),
    };
    const namespace = testNamespace('idem');
    const recording = createRecordingLogger('warn');
    const started: string[] = [];
    const first = await testWarren({
      namespace,
      topology: dedupTopology,
      handlers: [new DedupJob((ctx) => started.push(ctx.jobId))],
      idempotency: failingRelease,
      logger: recording.logger,
    });
    await first.start();
    // 3 s: still running when the 100 ms grace ends, and no timer left for long after the test
    await first.publish(DedupJob, { workMs: 3_000 }, { jobId: 'shut-1' });
    await waitFor(() => started.includes('shut-1'), { what: 'the job to start' });
    await first.close({ graceMs: 100 });
    const warning = recording.entries.find((e) => e.msg === 'could not release the claim');
    assert.ok(warning, `a warning about the claim; logged: ${JSON.stringify(recording.entries)}`);
    assert.equal(warning.jobId, 'shut-1');
    assert.equal(warning.level, 'warn');
  });

  it('fails createWarren with a typed error when the store cannot be prepared', async () => {
    const deadPool = new Pool({
      connectionString: 'postgres://postgres@127.0.0.1:1/test',
      connectionTimeoutMillis: 1_000,
    });
    try {
      await assert.rejects(
        testWarren({
          topology: dedupTopology,
          handlers: [new DedupJob()],
          idempotency: new PostgresIdempotencyStore({ pool: deadPool }),
        }),
        (error: unknown) => (error as { code?: string }).code === 'IDEMPOTENCY_STORE_FAILED',
      );
    } finally {
      await deadPool.end();
    }
  });
});

function startWorker(env: Record<string, string>, reports: WorkerReport[]): ChildProcess {
  const child = fork(join(__dirname, '..', 'fixtures', 'idempotency-worker.js'), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.on('message', (message) => reports.push(message as WorkerReport));
  return child;
}

/** Asks a worker process to close gracefully; kills it (by its own pid) if it does not exit in time. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.send('close');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
