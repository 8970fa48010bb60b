/**
 * `ops.delayed.dueNext`: the `controllable` delayed jobs due next, from another process's view of the
 * job-control stream (the dashboard's queue page lists them).
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, defineTopology, Job, type JobHandler } from '../../src';
import { createOps, UnknownQueueError } from '../../src/ops';
import { startDashboardServer } from '../../src/ui';
import { BROKER_URL, cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { reports: {}, mails: {} } });

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number }> {
  handle() {}
}

@Job('mail.send', { queue: 'mails', attempts: 1 })
class SendMail implements JobHandler<{ n: number }> {
  handle() {}
}

describe('the delayed jobs due next', () => {
  afterEach(cleanup);

  it('lists controllable delayed jobs soonest first, without the cancelled, promoted and uncontrollable ones', async () => {
    const namespace = testNamespace('due');
    const publisher = await testWarren({ namespace, topology, jobs: [BuildReport, SendMail] });
    const publish = (jobId: string, delayMs: number, controllable = true, name = 'report.build') =>
      publisher.publish(name, { n: 1 }, { jobId, delayMs, controllable });
    await publish('in-20s', 20_000);
    await publish('in-10s', 10_000);
    await publish('in-30s', 30_000);
    await publish('plain-15s', 15_000, false);
    await publish('cancelled-25s', 25_000);
    await publish('mail-12s', 12_000, true, 'mail.send');
    await publisher.delayed.cancel('cancelled-25s');
    const rescheduledTo = Date.now() + 5_000;
    await publisher.delayed.reschedule('in-30s', { runAt: new Date(rescheduledTo) });

    const ops = createOps({ url: BROKER_URL, namespace, topology });
    try {
      const all = await ops.delayed.dueNext();
      assert.deepEqual(
        all.map((j) => j.jobId),
        ['in-30s', 'in-10s', 'mail-12s', 'in-20s'],
      );
      assert.equal(all[0]!.dueAt.getTime(), rescheduledTo);
      assert.deepEqual(
        all.map((j) => [j.name, j.queue]),
        [
          ['report.build', 'reports'],
          ['report.build', 'reports'],
          ['mail.send', 'mails'],
          ['report.build', 'reports'],
        ],
      );
      const reports = await ops.delayed.dueNext({ queue: 'reports', limit: 2 });
      assert.deepEqual(
        reports.map((j) => j.jobId),
        ['in-30s', 'in-10s'],
      );

      // promoted: it runs now, and is no longer waiting
      await publisher.delayed.promote('in-10s');
      await waitFor(
        async () => !(await ops.delayed.dueNext()).some((j) => j.jobId === 'in-10s') || undefined,
        { what: 'the promoted job to leave the list' },
      );

      // the dashboard's queue page reads the same list, as JSON
      const server = await startDashboardServer({ ops, port: 0, authorize: () => ({ role: 'viewer' }) });
      try {
        const response = await fetch(`${server.url}api/queues/mails/delayed`);
        assert.equal(response.status, 200);
        const listed = (await response.json()) as { jobId: string; dueAt: string }[];
        assert.deepEqual(
          listed.map((j) => j.jobId),
          ['mail-12s'],
        );
        assert.ok(Number.isFinite(Date.parse(listed[0]!.dueAt)));
      } finally {
        await server.close();
      }

      await assert.rejects(ops.delayed.dueNext({ queue: 'nope' }), UnknownQueueError);
      await assert.rejects(ops.delayed.dueNext({ limit: 0 }), ConfigurationError);
    } finally {
      await ops.close();
    }
  });
});
