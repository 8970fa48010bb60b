import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineJob, defineTopology } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { BUCKET_MS, GraphStep, RUN_MS, runWorkload, workloadTopology } from '../support/aggregate-workload';
import { cleanup, rawConnection, testNamespace, testProfile, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const opened: WarrenOps[] = [];

describe('queue aggregates: history for the graphs without another database', () => {
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
    await cleanup();
  });

  it('adds up a known workload per bucket: 600 jobs over 3 buckets, a tenth failing', async () => {
    const namespace = testNamespace('aggr');
    const aggregates = { bucketMs: BUCKET_MS };
    const config = { ...testProfile(namespace), topology: workloadTopology, jobs: [GraphStep], aggregates };
    const warren = await testWarren({ ...config, handlers: [new GraphStep()] });
    const ops = createOps(config);
    opened.push(ops);
    await warren.start();
    const ran = await runWorkload(warren);

    // A forged record and a record of another bucket length: skipped and counted, nothing added.
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    const stream = `${namespace}.warren.aggregates`;
    channel.sendToQueue(stream, Buffer.from('{"v":1,"q":"not counts"}'));
    const other = {
      v: 1,
      p: 'forger',
      h: 'x',
      s: ran[0]!.start,
      l: 1000,
      q: { graphs: { c: 1e6, f: 0, r: 0, d: 0, w: [], x: [] } },
    };
    channel.sendToQueue(stream, Buffer.from(JSON.stringify(other)));
    await channel.close();
    await connection.close();

    const last = ran[ran.length - 1]!;
    const view = await waitFor(
      async () => {
        const v = await ops.aggregates('hour');
        const point = v.series.find((s) => s.queue === 'graphs')?.points.find((p) => p.start === last.start);
        return point && point.completed + point.failed === last.completed + last.failed && v.skipped >= 2
          ? v
          : undefined;
      },
      { what: 'the third bucket and the forged records read', timeoutMs: 4 * BUCKET_MS, intervalMs: 200 },
    );
    assert.equal(view.bucketMs, BUCKET_MS);
    assert.equal(view.stepMs, BUCKET_MS);
    assert.equal(view.series[0]!.queue, '*');
    const points = view.series.find((s) => s.queue === 'graphs')!.points;
    assert.equal(points.length, 60);
    // Aligned on the epoch: every point starts at a multiple of the bucket.
    for (const p of points) assert.equal(p.start % BUCKET_MS, 0);
    const busy = points.filter((p) => p.completed + p.failed > 0);
    assert.deepEqual(
      busy.map((p) => ({ start: p.start, completed: p.completed, failed: p.failed })),
      ran.map((r) => ({ start: r.start, completed: r.completed, failed: r.failed })),
    );
    for (const p of busy) {
      assert.equal(p.deadLettered, p.failed, 'attempts 1: every failure is dead-lettered');
      assert.equal(p.retried, 0);
      assert.equal(p.processes, 1);
      // Run times from one log-spaced histogram: never below the handler's 25 ms (less its 4.5 % bins);
      // above it by the event loop's lag, which a loaded machine stretches to a few times the run.
      assert.ok(p.run.p50! >= RUN_MS * 0.9 && p.run.p50! < RUN_MS * 20, `run p50 ${p.run.p50}`);
      assert.ok(p.run.p50! <= p.run.p95! && p.run.p95! <= p.run.p99!);
      assert.ok(p.wait.p50 !== null && p.wait.p50 >= 0);
      assert.ok(p.depth !== null && p.depth >= 0, 'the process said the depth');
      if (p.depth === 0) assert.equal(p.oldestWaitingMs, 0, 'an empty queue has nothing waiting');
    }
    const total = view.series[0]!.points.reduce((sum, p) => sum + p.completed, 0);
    assert.equal(total, 540);
    assert.ok(view.skipped >= 2, `skipped ${view.skipped}`);
    assert.equal(view.isWritten, true);

    // A day and a week read the hours' stream and end with the open hour, read from its buckets. A process
    // that stops appends its partial hour as well: the open hour must not count it twice.
    await warren.close();
    for (const range of ['day', 'week'] as const) {
      const long = await ops.aggregates(range);
      assert.equal(long.stepMs, 60 * BUCKET_MS);
      const graphs = long.series.find((s) => s.queue === 'graphs')!;
      assert.equal(graphs.points.length, range === 'day' ? 24 : 168);
      const sum = (pick: (p: (typeof graphs.points)[number]) => number) =>
        graphs.points.reduce((n, p) => n + pick(p), 0);
      assert.deepEqual(
        { completed: sum((p) => p.completed), failed: sum((p) => p.failed) },
        { completed: 540, failed: 60 },
        `${range}: ${JSON.stringify(graphs.points.filter((p) => p.completed + p.failed > 0))}`,
      );
    }
  });

  it('keeps depth and the oldest waiting job while a backed-up queue starts nothing and its wait histogram is silent', async () => {
    const namespace = testNamespace('aggr-backlog');
    const releases: (() => void)[] = [];
    const slow = defineJob(
      'backlog.slow',
      { queue: 'backlog', concurrency: 1, attempts: 1 },
      () => new Promise<void>((resolve) => releases.push(resolve)),
    );
    const config = {
      ...testProfile(namespace),
      topology: defineTopology({ queues: { backlog: {} } }),
      jobs: [slow],
      aggregates: { bucketMs: 1000 },
    };
    const warren = await testWarren({ ...config, handlers: [slow] });
    const ops = createOps(config);
    opened.push(ops);
    try {
      await warren.start();
      // one job takes the only slot and holds it; ten more wait behind it in the queue
      await warren.publish(slow, {});
      const heldPublished = Date.now();
      await waitFor(() => releases.length === 1, { what: 'the first job to start' });
      await warren.publishMany(Array.from({ length: 10 }, () => ({ job: slow, data: {} })));
      const backedUp = Date.now();
      const point = await waitFor(
        async () => {
          const view = await ops.aggregates('hour');
          const points = view.series.find((s) => s.queue === 'backlog')?.points ?? [];
          // a whole bucket after the ten were published: nothing started in it
          return points.find((p) => p.start >= backedUp && p.depth !== null);
        },
        { what: 'a bucket of the backed-up queue', timeoutMs: 15_000, intervalMs: 250 },
      );
      assert.equal(point.depth, 10, 'the ten jobs waiting');
      assert.equal(point.completed + point.failed, 0);
      assert.equal(point.wait.p50, null, 'nothing started: the wait histogram says nothing');
      // the oldest waiting job is at least as old as the job started last (published before the bucket)
      const floor = point.start + 1000 - heldPublished;
      assert.ok(
        point.oldestWaitingMs !== null && point.oldestWaitingMs >= floor - 50,
        `oldest waiting ${point.oldestWaitingMs} ms, at least ${floor} ms expected`,
      );
    } finally {
      for (const release of releases.splice(0)) release();
    }
  });

  it('says the aggregates are not written when no process of the namespace has them on', async () => {
    const ops = createOps({ ...testProfile(testNamespace('aggr-off')), topology: workloadTopology });
    opened.push(ops);
    const view = await ops.aggregates('day');
    assert.equal(view.isWritten, false);
    assert.deepEqual(view.series, []);
  });
});
