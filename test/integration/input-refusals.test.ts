import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineJob,
  defineTopology,
  Job,
  ShutdownError,
  WarrenError,
  type JobContext,
  type JobHandler,
} from '../../src';
import { createOps } from '../../src/ops';
import { BROKER_URL, cleanup, presentQueues, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

/**
 * Mistakes a user makes from plain JavaScript, against the real broker: each is a typed error at the call
 * (a rejected promise, never a synchronous TypeError), and none runs a job twice or drops one silently.
 */
const topology = defineTopology({ queues: { reports: {} } });

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number }> {
  readonly runs: { jobId: string; at: number }[] = [];
  handle(_data: { n: number }, ctx: JobContext) {
    this.runs.push({ jobId: ctx.jobId, at: Date.now() });
  }
}

const isConfiguration = (words: RegExp) => (error: unknown) =>
  error instanceof ConfigurationError && words.test(error.message);

describe('bad input at the call, against the broker', () => {
  afterEach(cleanup);

  it('a reschedule by a fractional delay moves the job once: the original does not run as well', async () => {
    const namespace = testNamespace('resched-frac');
    const handler = new BuildReport();
    const worker = await testWarren({ namespace, topology, handlers: [handler] });
    await worker.start();
    const ids = ['plain-0.4', 'plain-100.5', 'copy-100.5'];
    for (const jobId of ids)
      await worker.publish(
        'report.build',
        { n: 1 },
        { jobId, delayMs: 2500, ...(jobId.startsWith('copy') ? { controllable: true } : {}) },
      );
    const asked = Date.now();
    await worker.delayed.reschedule('plain-0.4', { delayMs: 0.4 }); // later than asked: re-delayed when due
    await worker.delayed.reschedule('plain-100.5', { delayMs: 4000.5 });
    await worker.delayed.reschedule('copy-100.5', { delayMs: 100.5 }); // through the stored copy: earlier
    await waitFor(() => handler.runs.length >= 3, { what: 'the three jobs to run', timeoutMs: 15_000 });
    await passTime(1500); // a second run of any of them (the original, past its 2.5 s) would come by now
    assert.deepEqual(handler.runs.map((r) => r.jobId).sort(), [...ids].sort(), 'each ran once');
    const at = (id: string) => handler.runs.find((r) => r.jobId === id)!.at - asked;
    assert.ok(at('copy-100.5') < 2000, `the copy ran early (${at('copy-100.5')} ms)`);
    assert.ok(at('plain-100.5') >= 3900, `the later one waited (${at('plain-100.5')} ms)`);
  });

  it('refuses a bad reschedule, cancel or promote with a ConfigurationError, and emits nothing', async () => {
    const warren = await testWarren({ namespace: testNamespace('ctl-bad'), topology, jobs: [BuildReport] });
    const cancelled: string[] = [];
    warren.on('cancelled', (e) => cancelled.push(e.jobId));
    const delayed = warren.delayed as unknown as {
      reschedule(id: unknown, options?: unknown): Promise<void>;
      cancel(id: unknown): Promise<unknown>;
      promote(id: unknown): Promise<void>;
    };
    await assert.rejects(delayed.reschedule('j'), isConfiguration(/needs \{ runAt: Date \} or \{ delayMs/));
    await assert.rejects(
      delayed.reschedule('j', { runAt: '2030-01-01' }),
      isConfiguration(/runAt must be a valid Date/),
    );
    await assert.rejects(
      delayed.reschedule('j', { delayMs: -1 }),
      isConfiguration(/delayMs must be a finite/),
    );
    await assert.rejects(
      delayed.reschedule('j', { delayMs: 5, runAt: new Date() }),
      isConfiguration(/give delayMs or runAt, not both/),
    );
    for (const id of ['', 42, undefined])
      await assert.rejects(delayed.cancel(id), isConfiguration(/^cancel jobId must be a string of 1 to 512/));
    await assert.rejects(delayed.promote(''), isConfiguration(/^promote jobId must be a string/));
    await assert.rejects(delayed.reschedule('', { delayMs: 5 }), isConfiguration(/^reschedule jobId/));
    assert.deepEqual(cancelled, []);
  });

  it('publish and publishMany reject what is not a job, unknown options and bad entries (never a sync throw)', async () => {
    const handler = new BuildReport();
    const warren = await testWarren({ namespace: testNamespace('pub-bad'), topology, handlers: [handler] });
    const loose = warren as unknown as {
      publish(job: unknown, data: unknown, options?: unknown): Promise<unknown>;
      publishWithResult(job: unknown, data: unknown, options?: unknown): Promise<unknown>;
      publishMany(jobs: unknown): Promise<unknown>;
    };
    const rejected = (call: () => Promise<unknown>) => {
      let promise: Promise<unknown> | undefined;
      assert.doesNotThrow(() => {
        promise = call();
      }, 'rejects, does not throw at the call');
      return promise!;
    };
    await assert.rejects(
      rejected(() => loose.publish(undefined, {})),
      isConfiguration(/^the job must be a job name, a @Job class or a defineJob job \(got undefined\)/),
    );
    await assert.rejects(
      rejected(() => loose.publish({}, {})),
      isConfiguration(/is not a job handler/),
    );
    await assert.rejects(
      rejected(() => loose.publish('report.build', { n: 1 }, { delay: 5000 })),
      isConfiguration(/^publish\('report.build'\) options.delay is not an option/),
    );
    for (const options of ['x', null, [1]])
      await assert.rejects(
        rejected(() => loose.publish('report.build', { n: 1 }, options)),
        isConfiguration(/^publish\('report.build'\) options must be an object/),
      );
    await assert.rejects(
      rejected(() => loose.publishWithResult('report.build', { n: 1 }, null)),
      isConfiguration(/^publishWithResult\('report.build'\) options must be an object \(got null\)/),
    );
    await assert.rejects(
      rejected(() => loose.publishWithResult('report.build', { n: 1 }, { timeout: 100 })),
      isConfiguration(/options.timeout is not an option/),
    );
    await assert.rejects(loose.publishMany('nope'), isConfiguration(/^publishMany takes an array/));
    await assert.rejects(
      loose.publishMany([{ job: BuildReport, data: { n: 1 } }, null]),
      (error: unknown) =>
        isConfiguration(/^publishMany job \[1\] must be \{ job, data, options\? \}/)(error) &&
        (error as ConfigurationError).batchIndex === 1,
    );
    // nothing of the refused calls reached the queue
    await warren.start();
    await passTime(300);
    assert.deepEqual(handler.runs, []);
  });

  it('a listener that throws neither fails the publish nor silences the others; an unknown event name is refused', async () => {
    const handler = new BuildReport();
    const warren = await testWarren({ namespace: testNamespace('listeners'), topology, handlers: [handler] });
    const heard: string[] = [];
    warren.on('published', () => {
      throw new Error('a listener bug');
    });
    warren.on('published', (e) => heard.push(`published ${e.jobId}`));
    warren.on('completed', async () => {
      throw new Error('an async listener bug');
    });
    warren.on('completed', () => {
      throw new Error('a listener bug');
    });
    warren.on('completed', (e) => heard.push(`completed ${e.jobId}`));
    assert.throws(
      () => warren.on('complete' as 'completed', () => undefined),
      isConfiguration(/'complete' is not a warren event/),
    );
    await warren.start();
    const job = await warren.publish('report.build', { n: 1 }, { jobId: 'one' });
    assert.equal(job.jobId, 'one');
    await waitFor(() => heard.includes('completed one'), { what: 'the last completed listener' });
    await waitFor(() => heard.includes('published one'), { what: 'the last published listener' });
    assert.deepEqual(heard.sort(), ['completed one', 'published one']);
    assert.equal(handler.runs.length, 1);
  });

  it('subscribe after close is a ShutdownError; a subscribe option it does not know is refused', async () => {
    const warren = await testWarren({ namespace: testNamespace('sub-bad'), topology, jobs: [BuildReport] });
    await assert.rejects(
      warren.events.subscribe({ queue: 'reports' }, { bogus: 1 } as never),
      isConfiguration(/^subscribe options.bogus is not an option/),
    );
    await assert.rejects(
      warren.events.subscribe({ queue: 'reports', bogus: 1 } as never),
      isConfiguration(/^subscribe filter.bogus is not an option/),
    );
    await warren.close();
    await assert.rejects(warren.events.subscribe({ queue: 'reports' }), ShutdownError);
  });

  it('ops.limits.set refuses a target the planned jobs do not have, before writing anything', async () => {
    const namespace = testNamespace('limits-bad');
    const limitsTopology = defineTopology({ queues: { api: { partitions: { count: 2, order: 'none' } } } });
    const jobs = [
      defineJob(
        'api.call',
        { queue: 'api', perKeyConcurrency: 2, key: (d: { a: string }) => d.a },
        async () => undefined,
      ),
    ];
    const warren = await testWarren({ namespace, topology: limitsTopology, jobs });
    const ops = createOps({ url: BROKER_URL, namespace, topology: limitsTopology, jobs });
    try {
      const refused = (input: object, words: RegExp) =>
        assert.rejects(
          ops.limits.set(input as never),
          (error: unknown) =>
            error instanceof WarrenError && error.code === 'LIMIT_INVALID' && words.test(error.message),
        );
      await refused(
        { target: 'nope', key: 'c-7', concurrency: 2 },
        /'nope' is not a job with perKeyConcurrency \(known: api.call\)/,
      );
      await refused(
        { target: 'api.call', key: 'c-7', max: 2 },
        /'api.call' is not a per-key rate limit \(none is planned\)/,
      );
      await refused({ target: 'api.call', key: 'c-7' }, /give concurrency or max/);
      assert.deepEqual(await ops.limits.list(), []);
      const set = await ops.limits.set({ target: 'api.call', key: 'c-7', concurrency: 3 });
      assert.equal(set.concurrency, 3);
    } finally {
      await ops.close();
      await warren.close();
    }
  });

  it('deleteTopology deletes the indexes declared beside the history', async () => {
    const namespace = testNamespace('del-index');
    const handler = new BuildReport();
    const warren = await testWarren({ namespace, topology, handlers: [handler], history: { flushMs: 20 } });
    await warren.start();
    await warren.publish('report.build', { n: 1 }, { jobId: 'indexed' });
    const ops = createOps({
      url: BROKER_URL,
      namespace,
      topology,
      jobs: [BuildReport],
      history: { flushMs: 20 },
    });
    const exists = async (name: string) => (await presentQueues([name])).length === 1;
    try {
      await waitFor(async () => (await ops.job('indexed')).events.some((e) => e.kind === 'completed'), {
        what: 'the job in the history',
      });
      const index = [`${namespace}.warren.history.index`, `${namespace}.warren.history.checkpoints`];
      // declared by the writer's background indexing, about a second after its first appends
      for (const name of index)
        await waitFor(() => exists(name), { what: `${name} declared`, timeoutMs: 15_000 });
      await warren.deleteTopology();
      for (const name of index) assert.equal(await exists(name), false, `${name} deleted`);
      assert.equal(await exists(`${namespace}.warren.history`), false);
    } finally {
      await ops.close();
    }
  });
});
