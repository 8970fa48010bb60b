import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler, type WarrenEvents } from '../../src';
import { createOps } from '../../src/ops';
import { opsAppOptions, SendEmail, type JobLog } from '../fixtures/ops-jobs';
import { configDir, runCli } from '../support/run-cli';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { reports: {} } });
const UNIT_MS = 100;

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number }> {
  readonly runs: string[] = [];
  handle(_data: { n: number }, ctx: JobContext) {
    this.runs.push(ctx.jobId);
  }
}

type Cancelled = WarrenEvents['cancelled'][0];

describe('cancel reports at the call', () => {
  afterEach(cleanup);

  it('resolves with what it knows, emits cancelled once at the call, and the job never runs', async () => {
    const namespace = testNamespace('cancel');
    const handler = new BuildReport();
    const worker = await testWarren({ namespace, topology, handlers: [handler] });
    const other = await testWarren({ namespace, topology, jobs: [BuildReport] });
    const atCaller: Cancelled[] = [];
    const atWorker: Cancelled[] = [];
    const discarded: string[] = [];
    other.on('cancelled', (e) => atCaller.push(e));
    worker.on('cancelled', (e) => atWorker.push(e));
    worker.on('discarded', (e) => discarded.push(e.jobId));
    await worker.start();

    const publishedAt = Date.now();
    await other.publish('report.build', { n: 1 }, { jobId: 'stored', delayMs: 1500, controllable: true });
    await other.publish('report.build', { n: 2 }, { jobId: 'plain', delayMs: 1500 });
    await other.publish('report.build', { n: 3 }, { jobId: 'moved', delayMs: 1000 });
    await other.publish('report.build', { n: 4 }, { jobId: 'kept', delayMs: 1500 });
    const movedTo = new Date(Date.now() + 2000);
    await other.delayed.reschedule('moved', { runAt: movedTo });

    const stored = await other.delayed.cancel('stored');
    assert.equal(atCaller.length, 1, 'cancelled is emitted at the call, before it resolves');
    assert.equal(stored.jobId, 'stored');
    assert.ok(Math.abs(stored.cancelledAt.getTime() - Date.now()) < 5000);
    assert.ok(stored.dueAt, 'a controllable job’s due time is known');
    const dueMs = stored.dueAt.getTime() - publishedAt;
    assert.ok(dueMs >= 1500 && dueMs < 1500 + UNIT_MS + 1000, `due ${dueMs} ms after publish`);
    assert.deepEqual([stored.name, stored.queue], ['report.build', 'reports']);
    assert.deepEqual(atCaller[0], {
      jobId: 'stored',
      name: 'report.build',
      queue: 'reports',
      cancelledAt: stored.cancelledAt.getTime(),
      dueAt: stored.dueAt.getTime(),
    });

    const plain = await other.delayed.cancel('plain');
    assert.deepEqual(
      [plain.jobId, plain.dueAt, plain.name, plain.queue],
      ['plain', undefined, undefined, undefined],
      'a plain delayed job’s due time is only in its message',
    );
    const moved = await other.delayed.cancel('moved');
    assert.equal(moved.dueAt?.getTime(), movedTo.getTime(), 'the latest reschedule’s time');
    assert.deepEqual(
      atCaller.map((e) => e.jobId),
      ['stored', 'plain', 'moved'],
    );

    await waitFor(() => handler.runs.includes('kept'), { what: 'the job that was not cancelled' });
    await waitFor(() => ['stored', 'plain', 'moved'].every((id) => discarded.includes(id)), {
      what: 'the held messages to come due and be discarded',
      timeoutMs: 10_000,
    });
    assert.deepEqual(handler.runs, ['kept']);
    assert.equal(atCaller.length, 3, 'not emitted again when the held message comes due');
    assert.equal(atWorker.length, 0, 'the worker that drops the held message emits discarded, not cancelled');
  });

  it('ops and the warren command report the cancel and when the job would have run', async () => {
    const namespace = testNamespace('cancel');
    const log: JobLog = [];
    const worker = await testWarren({ ...opsAppOptions(namespace), handlers: [new SendEmail(log)] });
    const discarded: string[] = [];
    worker.on('discarded', (e) => discarded.push(e.jobId));
    await worker.start();
    await worker.publish(
      'email.send',
      { id: 'a', ms: 0 },
      // two runs of the command come before the due time: at load 13 they took more than 6 s
      { jobId: 'cli-cancel', delayMs: 10_000, controllable: true },
    );
    await worker.publish('email.send', { id: 'b', ms: 0 }, { jobId: 'ops-cancel', delayMs: 10_000 });
    const run = await runCli(['job', 'cancel', 'cli-cancel', '--json'], { cwd: configDir(namespace) });
    assert.equal(run.code, 0, run.stderr);
    const printed = JSON.parse(run.stdout) as { jobId: string; action: string; dueAt: string };
    assert.deepEqual([printed.jobId, printed.action], ['cli-cancel', 'cancel']);
    assert.ok(Date.parse(printed.dueAt) > Date.now(), 'it would have run later');
    const text = await runCli(['job', 'cancel', 'cli-cancel'], { cwd: configDir(namespace) });
    assert.match(
      text.stdout,
      /^job cli-cancel: cancel \(it would have run at \d{4}-\d\d-\d\dT[\d:.]+Z; its message stays in the delay levels until then\)/,
    );

    const ops = createOps(opsAppOptions(namespace));
    try {
      const cancelled = await ops.delayed.cancel('ops-cancel');
      assert.deepEqual([cancelled.jobId, cancelled.dueAt], ['ops-cancel', undefined]);
    } finally {
      await ops.close();
    }
    await waitFor(() => discarded.includes('cli-cancel') && discarded.includes('ops-cancel'), {
      what: 'both held messages to come due and be discarded',
      timeoutMs: 15_000,
    });
    assert.equal(log.length, 0, 'neither ran');
  });
});
