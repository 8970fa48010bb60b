import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { HEADERS, type Warren } from '../../src';
import { planOf } from '../../src/warren';
import { ChildWorkers, type ChildWorker } from '../fixtures/child-workers';
import {
  BuildReport,
  eventsAppOptions,
  OtherRun,
  type SubscriberCommand,
  type SubscriberMessage,
} from '../fixtures/event-subscriber';
import {
  cleanup,
  closeConnectionsNamed,
  rawConnection,
  testNamespace,
  testWarren,
} from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const subscribers = new ChildWorkers<SubscriberMessage>('event-subscriber');

afterEach(async () => {
  await subscribers.killAll();
  await cleanup();
});
after(() => subscribers.killAll());

/**
 * A worker here (the test process) and a subscriber in another OS process, on one namespace. With
 * `isWorkerLater`, the worker is created only by `startWorker()`.
 */
async function setUp(
  signingKey?: string,
  isWorkerLater = false,
): Promise<{
  warren: Warren;
  startWorker: () => Promise<Warren>;
  child: ChildWorker<SubscriberMessage>;
  subscribe: (command: Omit<Extract<SubscriberCommand, { cmd: 'subscribe' }>, 'cmd'>) => Promise<void>;
  messages: (id: string) => Record<string, unknown>[];
}> {
  const namespace = testNamespace();
  const startWorker = async () => {
    const worker = await testWarren({
      ...eventsAppOptions(namespace, signingKey),
      namespace,
      handlers: [new BuildReport(), new OtherRun()],
    });
    await worker.start();
    return worker;
  };
  const warren = isWorkerLater ? (undefined as unknown as Warren) : await startWorker();
  const child = subscribers.fork(signingKey ? [namespace, signingKey] : [namespace]);
  await waitFor(() => child.messages.some((m) => m.kind === 'ready'), { what: 'the subscriber process' });
  const subscribe: Awaited<ReturnType<typeof setUp>>['subscribe'] = async (command) => {
    child.child.send({ cmd: 'subscribe', ...command } satisfies SubscriberCommand);
    const answer = await waitFor(
      () =>
        child.messages.find((m) => (m.kind === 'subscribed' || m.kind === 'refused') && m.id === command.id),
      { what: `the answer to subscription ${command.id}` },
    );
    if (answer.kind === 'refused')
      throw Object.assign(new Error(`refused: ${answer.code}`), { code: answer.code });
  };
  const messages = (id: string) =>
    child.messages.flatMap((m) => (m.kind === 'message' && m.id === id ? [m.message] : []));
  return { warren, startWorker, child, subscribe, messages };
}

const kinds = (messages: Record<string, unknown>[]) => messages.map((m) => m.kind);

describe('live job events in another process', () => {
  it('follow one job id: its progress, then completed with the result; other jobs are not sent', async () => {
    const { warren, subscribe, messages } = await setUp();
    const jobId = `report-${randomBytes(4).toString('hex')}`;
    await subscribe({ id: 's', filter: { jobId } });
    let completed = 0;
    warren.on('completed', () => (completed += 1));
    await warren.publish('report.build', { steps: [1, 2] }, { jobId: `${jobId}-other` });
    await waitFor(() => completed === 1, { what: 'the other job' });
    await warren.publish('report.build', { steps: [10, 20, 30] }, { jobId });
    const seen = await waitFor(
      () => (messages('s').some((m) => m.kind === 'completed') ? messages('s') : undefined),
      { what: 'the completed event in the subscriber' },
    );
    assert.ok(
      seen.every((m) => m.jobId === jobId),
      'only the subscribed job id',
    );
    assert.deepEqual(
      seen.filter((m) => m.kind === 'progress').map((m) => m.progress),
      [10, 20, 30],
    );
    const done = seen.at(-1)!;
    assert.equal(done.kind, 'completed');
    assert.deepEqual(done.result, { done: 3 });
    assert.equal(done.name, 'report.build');
    assert.equal(done.queue, 'reports');
    assert.equal(done.process, warren.processId);
    assert.equal(typeof done.durationMs, 'number');
  });

  it('send a result larger than events.maxValueBytes without it, marked truncated', async () => {
    const { warren, subscribe, messages } = await setUp();
    const jobId = `big-${randomBytes(4).toString('hex')}`;
    await subscribe({ id: 'big', filter: { jobId } });
    await warren.publish('report.build', { bytes: 20_000 }, { jobId });
    await waitFor(() => messages('big').length === 1, { what: 'the completed event' });
    const [done] = messages('big');
    assert.equal(done!.kind, 'completed');
    assert.equal(done!.isTruncated, true);
    assert.equal(done!.result, undefined);
  });

  it('follow a job name and a queue: failed, retrying, failed, dead, and a cancel', async () => {
    const { warren, subscribe, messages } = await setUp();
    await subscribe({ id: 'name', filter: { name: 'report.build' } });
    await subscribe({ id: 'queue', filter: { queue: 'reports' } });
    const { jobId } = await warren.publish('report.build', { fail: true });
    const expected = ['failed', 'retrying', 'failed', 'dead'];
    for (const id of ['name', 'queue'])
      await waitFor(() => messages(id).length >= expected.length, { what: `the failures in ${id}` });
    for (const id of ['name', 'queue']) {
      assert.deepEqual(kinds(messages(id)), expected, id);
      const [failed, retrying, , dead] = messages(id);
      assert.equal(failed!.jobId, jobId);
      assert.equal(failed!.error, 'Error: report source unavailable');
      assert.equal(failed!.willRetry, true);
      assert.equal(retrying!.nextAttempt, 2);
      assert.equal(dead!.reason, 'attempts-exhausted');
    }
    // its name and queue are known from its stored copy (controllable): a queue subscriber hears the cancel
    const delayed = await warren.publish(
      'report.build',
      {},
      { jobId: `later-${jobId}`, delayMs: 60_000, controllable: true },
    );
    await warren.delayed.cancel(delayed.jobId);
    await waitFor(() => messages('queue').some((m) => m.kind === 'cancelled'), { what: 'the cancel' });
    assert.equal(messages('queue').at(-1)!.jobId, delayed.jobId);
  });

  it('reach a subscriber whose subscription is older than the worker (the worker says hello)', async () => {
    const { startWorker, subscribe, messages } = await setUp(undefined, true);
    await subscribe({ id: 'early', filter: { queue: 'other' } });
    const worker = await startWorker();
    // the worker hears the subscriber's answer to its hello within a round trip; the subscription's own
    // renewal would come only 10 s after it subscribed, after this deadline
    const published: string[] = [];
    await waitFor(
      async () => {
        published.push((await worker.publish('other.run', {})).jobId);
        return messages('early').length > 0;
      },
      {
        what: 'an event of the worker started later, well before the renewal',
        timeoutMs: 5000,
        intervalMs: 50,
      },
    );
    assert.ok(published.includes(messages('early')[0]!.jobId as string));
  });

  it('refuses a job name or a queue the plan does not have, with typed errors', async () => {
    const { subscribe } = await setUp();
    await assert.rejects(subscribe({ id: 'a', filter: { name: 'report.biuld' } }), { code: 'UNKNOWN_JOB' });
    await assert.rejects(subscribe({ id: 'b', filter: { queue: 'reprots' } }), { code: 'UNKNOWN_QUEUE' });
  });

  it('bound a slow subscriber: the broker drops the oldest, and the subscriber is told how many', async () => {
    const { warren, subscribe, messages, child } = await setUp();
    await subscribe({ id: 'slow', filter: { queue: 'other' }, maxLength: 5, isHeld: true });
    let completed = 0;
    warren.on('completed', () => (completed += 1));
    const total = 60;
    await warren.publishMany(Array.from({ length: total }, () => ({ job: 'other.run', data: {} })));
    await waitFor(() => completed === total, { what: 'every job run' });
    child.child.send({ cmd: 'read', id: 'slow' } satisfies SubscriberCommand);
    const missedOf = () =>
      messages('slow')
        .filter((m) => m.kind === 'gap')
        .reduce((sum, m) => sum + (m.missed as number), 0);
    const received = () => messages('slow').filter((m) => m.kind === 'completed').length;
    await waitFor(() => received() + missedOf() === total, {
      what: () => `received + missed = ${total} (got ${received()} + ${missedOf()})`,
    });
    assert.ok(missedOf() > 0, 'some were dropped');
    // the queue (5) and the prefetch (5) were kept, and any event still on its way when reading began
    assert.ok(received() < total / 2, `most were dropped (kept ${received()} of ${total})`);
    const gap = messages('slow').find((m) => m.kind === 'gap')!;
    assert.equal(gap.process, warren.processId);
  });

  it('subscribe again after a lost connection and report what was missed meanwhile', async () => {
    const { warren, subscribe, messages, child } = await setUp();
    await subscribe({ id: 'r', filter: { name: 'other.run' } });
    let completed = 0;
    warren.on('completed', () => (completed += 1));
    await warren.publish('other.run', {});
    await waitFor(() => messages('r').length === 1, { what: 'the first event' });
    const ready = child.messages.find((m) => m.kind === 'ready') as { connectionName: string };
    assert.equal(await closeConnectionsNamed(ready.connectionName), 1);
    // the subscriber waits 3 s before it reconnects: these two run while it is away
    await warren.publish('other.run', {});
    await warren.publish('other.run', {});
    await waitFor(() => completed === 3, { what: 'the jobs run meanwhile' });
    await waitFor(() => messages('r').some((m) => m.kind === 'reconnected'), { what: 'the reconnect' });
    await warren.publish('other.run', {});
    await waitFor(() => messages('r').filter((m) => m.kind === 'completed').length === 2, {
      what: 'the event after the reconnect',
    });
    assert.deepEqual(kinds(messages('r')), ['completed', 'reconnected', 'gap', 'completed']);
    assert.equal(messages('r')[2]!.missed, 2);
  });

  it('skip a forged event when the subscriber has a key, and hear the signed ones', async () => {
    const key = randomBytes(24).toString('hex');
    const { warren, subscribe, messages } = await setUp(key);
    await subscribe({ id: 'k', filter: { queue: 'other' } });
    const forged = {
      v: 1,
      kind: 'completed',
      jobId: 'forged',
      name: 'other.run',
      queue: 'other',
      at: Date.now(),
      process: 'someone',
      seq: { queue: 1 },
      durationMs: 1,
    };
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      channel.publish(planOf(warren).naming.jobEvents(), '', Buffer.from(JSON.stringify(forged)), {
        headers: { [HEADERS.event]: 'event', [HEADERS.queue]: 'other', [HEADERS.jobId]: 'forged' },
      });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    const { jobId } = await warren.publish('other.run', {});
    await waitFor(() => messages('k').length === 1, { what: 'the signed event' });
    assert.equal(messages('k')[0]!.jobId, jobId);
  });
});
