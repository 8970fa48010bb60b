import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, defineTopology, Job, TopologyError, type JobHandler } from '../../src';
import { createRecordingLogger } from '../../src/testing';
import { planOf } from '../../src/warren';
import { brokerUnderTest } from '../support/broker-under-test';
import { cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: {
    reports: { bind: { exchange: 'jobs', pattern: 'report.*' }, maxPriority: 5 },
    plain: { bind: { exchange: 'jobs', pattern: 'plain.*' } },
  },
});

type Label = { label: string };

/**
 * The order the handlers saw, shared by both job classes. The first run waits until the test opens the gate.
 */
class RunLog {
  readonly order: string[] = [];
  private open!: () => void;
  readonly gate = new Promise<void>((resolve) => (this.open = resolve));

  release(): void {
    this.open();
  }

  async run(label: string): Promise<void> {
    this.order.push(label);
    await this.gate;
  }
}

/** Two job classes on one queue; the queue's prefetch is the largest concurrency of its jobs. */
function reportJobs(concurrency: number) {
  @Job('report.bulk', { queue: 'reports', priority: 1, concurrency })
  class BulkReport implements JobHandler<Label> {
    constructor(readonly log: RunLog) {}
    handle(data: Label) {
      return this.log.run(data.label);
    }
  }
  @Job('report.urgent', { queue: 'reports', priority: 5, concurrency })
  class UrgentReport implements JobHandler<Label> {
    constructor(readonly log: RunLog) {}
    handle(data: Label) {
      return this.log.run(data.label);
    }
  }
  return { BulkReport, UrgentReport };
}

@Job('plain.job', { queue: 'plain' })
class PlainJob implements JobHandler<object> {
  handle() {}
}

const range = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('priorities', () => {
  afterEach(cleanup);

  it('lets high-priority jobs overtake a backlog of low-priority ones when concurrency is 1', async () => {
    const log = new RunLog();
    const { BulkReport: Bulk, UrgentReport } = reportJobs(1);
    const warren = await testWarren({ topology, handlers: [new Bulk(log), new UrgentReport(log)] });
    // The backlog is in the queue before anything consumes it.
    for (const label of range(20, 'low')) await warren.publish(Bulk, { label });
    await warren.start();
    await waitFor(() => log.order.length === 1, { what: 'the first low-priority job to start' });

    // While low-0 runs: five jobs with the class priority 5, and one bulk job promoted per publish.
    for (const label of range(5, 'high')) await warren.publish(UrgentReport, { label });
    await warren.publish(Bulk, { label: 'promoted' }, { priority: 4 });
    // A bulk job demoted below the class default (1) goes behind the whole backlog.
    await warren.publish(Bulk, { label: 'demoted' }, { priority: 0 });
    log.release();
    await waitFor(() => log.order.length === 27, { what: 'every job to run', timeoutMs: 15_000 });

    // low-0 was already running; prefetch 1 means nothing else had left the queue, so the broker
    // hands out the rest strictly by priority, FIFO within a priority.
    assert.deepEqual(log.order, [
      'low-0',
      ...range(5, 'high'),
      'promoted',
      ...range(20, 'low').slice(1),
      'demoted',
    ]);
  });

  it('cannot reorder jobs the worker already prefetched: with concurrency 10 the first 10 low ones run before the high ones', async () => {
    const log = new RunLog();
    const { BulkReport: Bulk, UrgentReport } = reportJobs(10);
    const warren = await testWarren({ topology, handlers: [new Bulk(log), new UrgentReport(log)] });
    for (const label of range(30, 'low')) await warren.publish(Bulk, { label });
    await warren.start();
    await waitFor(() => log.order.length === 10, { what: 'ten low-priority jobs to start' });
    for (const label of range(5, 'high')) await warren.publish(UrgentReport, { label });
    log.release();
    await waitFor(() => log.order.length === 35, { what: 'every job to run', timeoutMs: 15_000 });

    assert.deepEqual(
      log.order.slice(0, 10),
      range(10, 'low'),
      'the prefetch window was delivered before the high ones existed',
    );
    // After the window, priorities apply again: every high job starts before the remaining low ones.
    const firstRemainingLow = log.order.indexOf('low-10');
    for (const label of range(5, 'high'))
      assert.ok(
        log.order.indexOf(label) < firstRemainingLow,
        `${label} ran before low-10: ${log.order.join(',')}`,
      );
  });

  it('checks priorities against the queue when publishing and when planning', async () => {
    const { BulkReport, UrgentReport } = reportJobs(1);
    const warren = await testWarren({ topology, jobs: [BulkReport, UrgentReport, PlainJob] });
    await assert.rejects(
      warren.publish('report.urgent', { label: 'x' }, { priority: 6 }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        /priority must be an integer from 0 to 5 \(got 6\)/.test(error.message),
    );
    await assert.rejects(
      warren.publish('plain.job', {}, { priority: 1 }),
      (error: unknown) => error instanceof ConfigurationError && /queue 'plain' has none/.test(error.message),
    );

    @Job('plain.urgent', { queue: 'plain', priority: 2 })
    class PlainUrgent implements JobHandler<object> {
      handle() {}
    }
    await assert.rejects(
      testWarren({ topology, jobs: [PlainUrgent] }),
      (error: unknown) => error instanceof TopologyError && /has no maxPriority/.test(error.message),
    );
  });

  it('on RabbitMQ 4.x runs quorum-queue priorities strictly, a job without one as 0 and a foreign message without one as 4; a 3.x broker refuses them before declaring anything; the version and its features are logged and in health()', async () => {
    const broker = await brokerUnderTest();
    const { logger, entries } = createRecordingLogger('info');
    const namespace = testNamespace('qprio');
    const quorumPriorities = defineTopology({ queues: { urgent: { type: 'quorum', maxPriority: 9 } } });
    if (!broker.isV4) {
      // 3.x quorum queues would take the messages and ignore their priority
      await assert.rejects(
        testWarren({ namespace, topology: quorumPriorities, logger }),
        (error: unknown) =>
          error instanceof TopologyError &&
          new RegExp(`${namespace}\\.urgent.*need RabbitMQ 4\\.0 or later; the broker is RabbitMQ 3\\.`).test(
            error.message,
          ),
      );
      const connection = await rawConnection();
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await assert.rejects(channel.checkQueue(`${namespace}.urgent`), /NOT_FOUND/);
      await connection.close().catch(() => undefined);
    } else {
      const log = new RunLog();
      @Job('urgent.plain', { queue: 'urgent', concurrency: 1 })
      class Plain implements JobHandler<Label> {
        handle(data: Label) {
          return log.run(data.label);
        }
      }
      const warren = await testWarren({
        namespace,
        topology: quorumPriorities,
        handlers: [new Plain()],
        logger,
      });
      const queue = planOf(warren).jobs.get('urgent.plain')!.queueName;
      await warren.publish(Plain, { label: 'first' }); // runs at once and holds the only prefetch slot
      await warren.start();
      await waitFor(() => log.order.length === 1, { what: 'the first job to start' });
      for (const label of range(3, 'none')) await warren.publish(Plain, { label });
      for (const priority of [1, 3, 5, 9])
        await warren.publish(Plain, { label: `p${priority}` }, { priority });
      // A foreign publisher's job without a priority property (the wire format lets it leave it out)
      const connection = await rawConnection();
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(queue, Buffer.from(JSON.stringify({ label: 'foreign' })), {
        type: 'urgent.plain',
        contentType: 'application/json',
        persistent: true,
      });
      await channel.waitForConfirms();
      await connection.close();
      log.release();
      await waitFor(() => log.order.length === 9, { what: 'every job to run' });
      // Measured on 4.3.6: strictly by priority, FIFO within one; a message without a priority counts as
      // 4 (so warren sends 0 for a job without one, as on classic queues).
      assert.deepEqual(log.order, ['first', 'p9', 'p5', 'foreign', 'p3', 'p1', ...range(3, 'none')]);
    }

    const warren = await testWarren({ topology, logger });
    const connected = entries.find((entry) => entry.msg === 'connected');
    assert.equal(connected?.broker, `RabbitMQ ${broker.version}`);
    // the features warren derives from the version, in the connect log and in health()
    assert.equal(String(connected?.features).includes('quorumPriorities'), broker.isV4);
    assert.equal(warren.health().broker?.version, broker.version);
    assert.equal(warren.health().broker?.features.quorumPriorities, broker.isV4);
  });
});
