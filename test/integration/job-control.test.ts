import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, JobControlError, type JobContext, type JobHandler } from '../../src';
import { opsAppOptions, SendEmail, type JobLog } from '../fixtures/ops-jobs';
import { configDir, runCli } from '../support/run-cli';
import { createOps } from '../../src/ops';
import {
  BROKER_URL,
  cleanup,
  testNamespace,
  testWarren,
  closeConnectionsNamed,
  rawConnection,
} from '../support/test-broker';
import { nextEvent, passTime, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';
import { READ_AHEAD_SETTLE_MS } from '../../src/job-control';

const topology = defineTopology({ queues: { reports: {} } });
const UNIT_MS = 100;
/** How late a delayed job may run on a loaded test machine (README, "Performance": tens of ms). */
const LATE_MS = 1500;

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number }> {
  readonly runs: { jobId: string; at: number; n: number }[] = [];
  handle(data: { n: number }, ctx: JobContext) {
    this.runs.push({ jobId: ctx.jobId, at: Date.now(), n: data.n });
  }
}

/** A worker and, on the same namespace, a second instance (another process's stand-in) that acts. */
async function pair(namespace = testNamespace('jc'), history?: object) {
  const handler = new BuildReport();
  const worker = await testWarren({
    namespace,
    topology,
    handlers: [handler],
    ...(history ? { history } : {}),
  });
  const other = await testWarren({ namespace, topology, jobs: [BuildReport] });
  return { handler, worker, other, namespace };
}

describe('cancel, promote and reschedule delayed jobs', () => {
  afterEach(cleanup);

  it('a job cancelled from another instance before it comes due never runs', async () => {
    const { handler, worker, other } = await pair(testNamespace('jc'), { flushMs: 20 });
    await worker.start();
    const kept = await other.publish('report.build', { n: 1 }, { jobId: 'kept', delayMs: 600 });
    await other.publish('report.build', { n: 2 }, { jobId: 'gone', delayMs: 600 });
    await other.delayed.cancel('gone');
    const cancelled = await nextEvent<{ jobId: string }>(worker, 'discarded');
    assert.equal(cancelled.jobId, 'gone');
    await waitFor(() => handler.runs.length === 1, { what: 'the kept job to run' });
    assert.deepEqual(
      handler.runs.map((r) => r.jobId),
      [kept.jobId],
    );
    const ops = createOps({ url: BROKER_URL, namespace: planOf(worker).naming.namespace, topology });
    try {
      const status = await waitFor(
        async () => {
          const found = await ops.job('gone');
          return found.state === 'cancelled' ? found : undefined;
        },
        { what: 'the cancel in the job history' },
      );
      assert.equal(status.last?.kind, 'cancelled');
    } finally {
      await ops.close();
    }
  });

  it('a job rescheduled later runs at the new time, not before', async () => {
    const { handler, worker, other } = await pair();
    await worker.start();
    await other.publish('report.build', { n: 1 }, { jobId: 'later', delayMs: 300 });
    const runAt = Date.now() + 2000;
    await other.delayed.reschedule('later', { runAt: new Date(runAt) });
    await waitFor(() => handler.runs.length === 1, { what: 'the rescheduled job', timeoutMs: 6000 });
    const ranAt = handler.runs[0]!.at;
    assert.ok(ranAt >= runAt, `ran ${runAt - ranAt} ms early`);
    assert.ok(ranAt <= runAt + LATE_MS, `ran ${ranAt - runAt} ms late`);
  });

  it('a controllable job rescheduled earlier runs at the new time, once', async () => {
    const { handler, worker, other } = await pair();
    await worker.start();
    await other.publish('report.build', { n: 1 }, { jobId: 'early', delayMs: 2500, controllable: true });
    const runAt = Date.now() + 500;
    await other.delayed.reschedule('early', { runAt: new Date(runAt) });
    await waitFor(() => handler.runs.length === 1, { what: 'the rescheduled copy' });
    assert.ok(handler.runs[0]!.at >= runAt - UNIT_MS, 'the copy ran before its time');
    assert.ok(handler.runs[0]!.at < runAt + LATE_MS, 'the copy ran late');
    await nextEvent<{ jobId: string }>(worker, 'discarded', (e) => e.jobId === 'early', 6000);
    assert.equal(handler.runs.length, 1);
  });

  it('promote runs a controllable job now and not again when the original comes due', async () => {
    const { handler, worker, other } = await pair();
    await worker.start();
    await other.publish('report.build', { n: 7 }, { jobId: 'now', delayMs: 2500, controllable: true });
    const promotedAt = Date.now();
    await other.delayed.promote('now');
    await waitFor(() => handler.runs.length === 1, { what: 'the promoted job' });
    assert.ok(handler.runs[0]!.at - promotedAt < 1000, 'the promoted job did not run at once');
    assert.equal(handler.runs[0]!.n, 7);
    await nextEvent<{ jobId: string }>(worker, 'discarded', (e) => e.jobId === 'now', 6000);
    assert.equal(handler.runs.length, 1);
  });

  it('two promotes of one job racing from two instances run it once', async () => {
    const { handler, worker, other, namespace } = await pair();
    const third = await testWarren({ namespace, topology, jobs: [BuildReport] });
    await worker.start();
    const ids = ['race-a', 'race-b', 'race-c'];
    const discarded: string[] = [];
    worker.on('discarded', (e: { jobId: string }) => discarded.push(e.jobId));
    for (const jobId of ids)
      await other.publish('report.build', { n: 1 }, { jobId, delayMs: 2500, controllable: true });
    const promotes = await Promise.allSettled(
      ids.flatMap((id) => [other.delayed.promote(id), third.delayed.promote(id)]),
    );
    // a promote that read the other's record first is refused (the job is due now); at least one of each pair went
    for (const promote of promotes)
      if (promote.status === 'rejected')
        assert.equal((promote.reason as JobControlError).code, 'JOB_ALREADY_DUE', String(promote.reason));
    for (let n = 0; n < ids.length; n++)
      assert.ok(promotes[2 * n].status === 'fulfilled' || promotes[2 * n + 1].status === 'fulfilled');
    // each original comes due and is dropped: by then a second run of a promoted copy would have happened
    await waitFor(() => ids.every((id) => discarded.includes(id)), {
      what: 'the originals dropped',
      timeoutMs: 8000,
    });
    assert.deepEqual(handler.runs.map((r) => r.jobId).sort(), ids, 'each job once');
  });

  it('keeps the deprecated Warren aliases working until their next minor release', async () => {
    const { handler, worker, other } = await pair();
    await worker.start();
    await other.publish('report.build', { n: 1 }, { jobId: 'alias-gone', delayMs: 600 });
    await other.publish('report.build', { n: 2 }, { jobId: 'alias-now', delayMs: 5000, controllable: true });
    await other.cancelDelayed('alias-gone');
    await other.promote('alias-now');
    await waitFor(() => handler.runs.length === 1, { what: 'the promoted job' });
    assert.equal(handler.runs[0]!.jobId, 'alias-now');
    await nextEvent<{ jobId: string }>(worker, 'discarded', (e) => e.jobId === 'alias-gone', 6000);
    await assert.rejects(
      other.reschedule('alias-now', { delayMs: Number.NaN }),
      /delayMs must be a finite number >= 0 \(got NaN\)/,
    );
  });

  it('promote refuses a job published without controllable', async () => {
    const { other } = await pair();
    await other.publish('report.build', { n: 1 }, { jobId: 'plain', delayMs: 5000 });
    await assert.rejects(other.delayed.promote('plain'), (e: unknown) => {
      return e instanceof JobControlError && e.code === 'JOB_NOT_CONTROLLABLE';
    });
    const refused = /controllable needs a jobId and a delay|controllable works with publish only/;
    await assert.rejects(
      other.publish('report.build', { n: 1 }, { delayMs: 500, controllable: true }),
      refused,
    );
    await assert.rejects(
      other.publish('report.build', { n: 1 }, { jobId: 'x', controllable: true }),
      refused,
    );
    await assert.rejects(
      other.publishMany([
        { job: 'report.build', data: { n: 1 }, options: { jobId: 'y', delayMs: 500, controllable: true } },
      ]),
      refused,
    );
  });

  it('a worker that starts after the cancel was recorded still honours it', async () => {
    const namespace = testNamespace('jc');
    const publisher = await testWarren({ namespace, topology, jobs: [BuildReport] });
    await publisher.publish('report.build', { n: 1 }, { jobId: 'late-worker', delayMs: 300 });
    await publisher.delayed.cancel('late-worker');
    await publisher.publish('report.build', { n: 2 }, { jobId: 'control', delayMs: 300 });
    const handler = new BuildReport();
    const worker = await testWarren({ namespace, topology, handlers: [handler] });
    const cancelled = nextEvent<{ jobId: string }>(worker, 'discarded');
    await worker.start();
    assert.equal((await cancelled).jobId, 'late-worker');
    await waitFor(() => handler.runs.length === 1, { what: 'the other job' });
    assert.equal(handler.runs[0]!.jobId, 'control');
  });

  it('after a reconnect a worker reads the cancels it missed before judging a delayed job', async () => {
    const namespace = testNamespace('jc');
    const handler = new BuildReport();
    const worker = await testWarren({
      namespace,
      topology,
      handlers: [handler],
      connection: { connectionName: `${namespace} worker` },
    });
    const other = await testWarren({ namespace, topology, jobs: [BuildReport] });
    await worker.start();
    await other.publish('report.build', { n: 1 }, { jobId: 'warm', delayMs: 100 });
    await waitFor(() => handler.runs.length === 1, { what: 'a first delayed job (the stream is followed)' });
    // due well after the cancel: closing the connection with rabbitmqctl took over 2.5 s at load 8, and a job
    // due before its cancel rightly runs
    await other.publish('report.build', { n: 2 }, { jobId: 'missed', delayMs: 8000 });
    const dueAt = Date.now() + 8000;
    const reconnected = nextEvent(worker, 'connected', () => true, 15_000);
    // listened for from the start: under load the reconnect can take until the job is due, and the
    // cancel then lands before a listener attached after 'connected' would hear it
    const cancelled = nextEvent<{ jobId: string }>(worker, 'discarded', () => true, 20_000);
    assert.ok((await closeConnectionsNamed(`${namespace} worker`)) >= 1);
    await other.delayed.cancel('missed');
    assert.ok(
      Date.now() < dueAt,
      'the cancel was confirmed before the job was due (else this run proves nothing)',
    );
    await reconnected;
    assert.equal((await cancelled).jobId, 'missed');
    assert.deepEqual(
      handler.runs.map((r) => r.jobId),
      ['warm'],
    );
  });

  it('a worker reads the planned control stream as it starts, after a settle wait, and at once after a reconnect', async () => {
    const namespace = testNamespace('jc');
    const worker = await testWarren({
      namespace,
      topology,
      handlers: [new BuildReport()],
      connection: { connectionName: `${namespace} worker` },
    });
    const stream = planOf(worker).naming.jobControl();
    // each read appends the reader's own mark record
    const records = () => streamRecords(stream);
    assert.equal(await records(), 0, 'the stream is declared with the plan, before anything used it');
    const startedAt = Date.now();
    await worker.start();
    await passTime(300);
    // workers starting together declare it together: a consumer racing its creation loses its connection
    assert.equal(await records(), 0, 'no read within the settle wait');
    await waitFor(async () => (await records()) === 1, { what: 'the worker to read the stream' });
    assert.ok(Date.now() - startedAt >= READ_AHEAD_SETTLE_MS);
    const reconnected = nextEvent(worker, 'connected', () => true, 15_000);
    assert.ok((await closeConnectionsNamed(`${namespace} worker`)) >= 1);
    await reconnected;
    // left to the first delayed job, this read made that job run tens of milliseconds late
    await waitFor(async () => (await records()) === 2, { what: 'the reconnected worker to read the stream' });
    await worker.deleteTopology();
    assert.equal(await records(), undefined, 'deleteTopology deletes the stream');
  });

  it('the warren command promotes a delayed job (a subprocess), and checks its arguments', async () => {
    const namespace = testNamespace('jc');
    const log: JobLog = [];
    const worker = await testWarren({ ...opsAppOptions(namespace), handlers: [new SendEmail(log)] });
    await worker.start();
    const data = { id: 'cli', ms: 1 };
    await worker.publish('email.send', data, { jobId: 'cli-job', delayMs: 4000, controllable: true });
    const cwd = configDir(namespace);
    const wrong = await runCli(['job', 'reschedule', 'cli-job'], { cwd });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /--run-at <date> or --delay <ms>/);
    const promotedAt = Date.now();
    const run = await runCli(['job', 'promote', 'cli-job'], { cwd });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /job cli-job: promote/);
    await waitFor(() => log.some((e) => e.event === 'start'), { what: 'the promoted job' });
    assert.ok(log[0]!.at < promotedAt + 4000 - UNIT_MS, 'it ran when the original came due, not at once');
    await nextEvent<{ jobId: string }>(worker, 'discarded', (e) => e.jobId === 'cli-job', 8000);
    assert.equal(log.filter((e) => e.event === 'start').length, 1);
  });
});

/** Records in a stream, or undefined when it does not exist. */
async function streamRecords(stream: string): Promise<number | undefined> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    return (await channel.checkQueue(stream)).messageCount;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
