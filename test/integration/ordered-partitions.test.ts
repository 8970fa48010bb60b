import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineJob,
  defineTopology,
  MemoryIdempotencyStore,
  PublishError,
  TopologyError,
  type IdempotencyStore,
} from '../../src';
import { checkQueueIfExists } from '../../src/connection';
import { ChildWorkers } from '../fixtures/child-workers';
import { checkLedger } from '../fixtures/partition-ledger';
import {
  ledgerJob,
  partitionTopology,
  type LedgerJob,
  type PartitionWorkerMessage,
} from '../fixtures/partition-worker';
import { cleanup, messageCount, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Ordered partitions on the broker under test (docs/guide/ordered-partitions.md): per-key order with many keys
 * at once, retries in place that hold the key, the refusals, and the assignment across worker processes. The
 * churn test (workers joining and leaving under load, SIGKILL and SIGSTOP included) is in the fault tier:
 * test/resilience/ordered-partitions-churn.test.ts.
 */
type RunEvent = Extract<PartitionWorkerMessage, { kind: 'start' | 'end' | 'abort' }>;

/** Publishes `perKey` jobs for each of `keys` keys, interleaved, each key's in order. */
async function publishLedger(
  publish: (job: LedgerJob) => Promise<unknown>,
  keys: number,
  perKey: number,
): Promise<Map<string, number>> {
  const jobs = new Map<string, number>();
  for (let seq = 0; seq < perKey; seq++)
    await Promise.all(Array.from({ length: keys }, (_, k) => publish({ key: `key-${k}`, seq })));
  for (let k = 0; k < keys; k++) jobs.set(`key-${k}`, perKey);
  return jobs;
}

describe('ordered partitions', () => {
  const workers = new ChildWorkers<PartitionWorkerMessage>('../fixtures/partition-worker');
  afterEach(async () => {
    await workers.killAll();
    await cleanup();
  });

  it('runs the jobs of each key one at a time in publish order, many keys at once', async () => {
    const events: RunEvent[] = [];
    let running = 0;
    let mostAtOnce = 0;
    const job = ledgerJob(3, 6, (m) => {
      if (m.kind === 'start') mostAtOnce = Math.max(mostAtOnce, ++running);
      else if (m.kind !== 'ready' && m.kind !== 'owned') running -= 1;
      if (m.kind === 'start' || m.kind === 'end' || m.kind === 'abort') events.push(m);
    });
    const warren = await testWarren({ topology: partitionTopology(4), handlers: [job] });
    await warren.start();
    const jobs = await publishLedger((data) => warren.publish(job, data), 12, 15);
    await waitFor(() => events.filter((e) => e.kind === 'end').length >= 180, {
      timeoutMs: 30_000,
      what: () => `180 jobs to end (${events.filter((e) => e.kind === 'end').length} so far)`,
    });
    const report = checkLedger(events, jobs);
    assert.deepEqual(report.lost, []);
    assert.deepEqual(report.reorderings, []);
    assert.deepEqual(report.overlaps, []);
    assert.ok(mostAtOnce > 1, `jobs of several keys ran at once (at most ${mostAtOnce} did)`);
    const partitions = warren.health().consumers.find((c) => c.queue === 'ordered')?.partitions;
    assert.deepEqual(partitions?.owned, [0, 1, 2, 3], 'the only member owns every partition');
  });

  it('refuses a publish without a key, and partitions beside fairness or priorities', async () => {
    const unkeyed = defineJob('ordered.unkeyed', { queue: 'ordered' }, async () => undefined);
    const warren = await testWarren({ topology: partitionTopology(4), handlers: [unkeyed] });
    await assert.rejects(warren.publish(unkeyed, {}), (error: unknown) => {
      assert.ok(error instanceof PublishError);
      assert.equal(error.code, 'PUBLISH_MISSING_KEY');
      assert.match(error.message, /ordered partitions/);
      return true;
    });
    // a key given with the publish is enough
    await warren.publish(unkeyed, {}, { key: 'k' });
    for (const extra of [{ fairness: true as const }, { maxPriority: 3 }, { singleActiveConsumer: true }]) {
      await assert.rejects(
        testWarren({
          topology: defineTopology({ queues: { ordered: { partitions: 4, ...extra } } }),
          handlers: [unkeyed],
        }),
        (error: unknown) => error instanceof TopologyError && /cannot be combined with/.test(error.message),
      );
    }
    await assert.rejects(
      testWarren({
        topology: defineTopology({ queues: { ordered: { partitions: 65 } } }),
        handlers: [unkeyed],
      }),
      /from 1 to 64/,
    );
  });

  it("retries a failing job in place, holding its key's later jobs, and dead-letters it when its attempts are spent", async () => {
    const log: string[] = [];
    const failures = new Map<string, number>();
    const job = defineJob(
      'ordered.flaky',
      {
        queue: 'ordered',
        concurrency: 4,
        attempts: 3,
        backoff: { type: 'fixed', delayMs: 300 },
        key: (j: { key: string; seq: number; fail: number }) => j.key,
      },
      async (j, ctx) => {
        log.push(`${j.key}${j.seq}@${ctx.attempt}`);
        const id = `${j.key}${j.seq}`;
        const failed = failures.get(id) ?? 0;
        if (failed < j.fail) {
          failures.set(id, failed + 1);
          throw new Error(`fails ${j.fail} times`);
        }
      },
    );
    const namespace = testNamespace();
    const warren = await testWarren({ namespace, topology: partitionTopology(2), handlers: [job] });
    await warren.start();
    const dead: { reason: string }[] = [];
    warren.on('deadLettered', (e) => dead.push({ reason: e.reason }));
    await warren.publish(job, { key: 'a', seq: 0, fail: 1 });
    await warren.publish(job, { key: 'a', seq: 1, fail: 0 });
    await warren.publish(job, { key: 'a', seq: 2, fail: 5 });
    await warren.publish(job, { key: 'a', seq: 3, fail: 0 });
    for (let seq = 0; seq < 4; seq++) await warren.publish(job, { key: 'b', seq, fail: 0 });
    await waitFor(() => log.includes('a3@1'), {
      timeoutMs: 15_000,
      what: () => `a3 to run (${log.join(' ')})`,
    });
    const a = log.filter((l) => l.startsWith('a'));
    assert.deepEqual(a, ['a0@1', 'a0@2', 'a1@1', 'a2@1', 'a2@2', 'a2@3', 'a3@1']);
    // b's jobs ran while a0 waited out its backoff
    assert.ok(log.indexOf('b3@1') < log.indexOf('a0@2'), log.join(' '));
    await waitFor(() => dead.length === 1, { what: 'a2 to be dead-lettered' });
    assert.equal(dead[0]!.reason, 'attempts-exhausted');
    await waitFor(async () => (await messageCount(`${namespace}.ordered.dead`)) === 1, {
      what: 'the dead letter',
    });
  });

  it('aborts a run whose own first read of ctx.signal finds the lease ended, and closes the partition only after its handler returned', async () => {
    // The busy wait stands for a freeze (SIGSTOP, a starved process) between the start's lease check and the
    // handler's first read of ctx.signal: that read fences the partition and must abort this very run.
    const seen: { attempt: number; aborted: boolean; code?: string; at: number }[] = [];
    let handlerReturnedAt = 0;
    const job = defineJob(
      'ordered.frozen',
      { queue: 'ordered', concurrency: 1, key: (j: { key: string }) => j.key },
      async (_j, ctx) => {
        const first = seen.length === 0;
        if (first) {
          const until = performance.now() + 1_000;
          while (performance.now() < until);
        }
        const { aborted, reason } = ctx.signal;
        seen.push({
          attempt: ctx.attempt,
          aborted,
          code: (reason as { code?: string })?.code,
          at: Date.now(),
        });
        if (first) {
          // a handler slow to stop: the partition must not move before it returns
          await new Promise((resolve) => setTimeout(resolve, 300));
          handlerReturnedAt = Date.now();
          ctx.signal.throwIfAborted();
        }
      },
    );
    const warren = await testWarren({
      topology: partitionTopology(1),
      handlers: [job],
      worker: { partitionHeartbeatMs: 100 },
    });
    await warren.start();
    await waitFor(
      () => warren.health().consumers.find((c) => c.queue === 'ordered')?.partitions?.owned.length === 1,
      {
        what: 'the partition to be owned',
      },
    );
    await warren.publish(job, { key: 'k' });
    await waitFor(() => seen.length === 2, {
      timeoutMs: 15_000,
      what: () => `a second run (${JSON.stringify(seen)})`,
    });
    assert.equal(seen[0]!.aborted, true, 'the run whose read fenced the partition reads its signal aborted');
    assert.equal(seen[0]!.code, 'PARTITION_LOST');
    assert.equal(seen[1]!.aborted, false, 'the job ran again, to the end');
    assert.ok(
      seen[1]!.at >= handlerReturnedAt,
      `the next run started after the fenced handler returned (${seen[1]!.at} < ${handlerReturnedAt})`,
    );
  });

  it('gives back the idempotency claim of a job whose partition was fenced during the claim, so it runs when it comes back', async () => {
    // The busy wait stands for a freeze while the store answers: the lease check after the guards fences the
    // partition, the delivery goes back unstarted, and the next owner's claim must find it free.
    const store = new MemoryIdempotencyStore();
    let claims = 0;
    const freezing: IdempotencyStore = {
      async claim(jobId, leaseMs) {
        const answer = await store.claim(jobId, leaseMs);
        if (++claims === 1) {
          const until = performance.now() + 1_000;
          while (performance.now() < until);
        }
        return answer;
      },
      complete: (jobId) => store.complete(jobId),
      release: (jobId) => store.release(jobId),
    };
    const runs: number[] = [];
    const job = defineJob(
      'ordered.claimed',
      { queue: 'ordered', concurrency: 1, key: (j: { key: string }) => j.key },
      async () => {
        runs.push(claims);
      },
    );
    const warren = await testWarren({
      topology: partitionTopology(1),
      handlers: [job],
      idempotency: freezing,
      worker: { partitionHeartbeatMs: 100 },
    });
    await warren.start();
    await waitFor(
      () => warren.health().consumers.find((c) => c.queue === 'ordered')?.partitions?.owned.length === 1,
      { what: 'the partition to be owned' },
    );
    await warren.publish(job, { key: 'k' });
    // without the claim given back, the copy would wait out the lease (the job's timeout and 30 s)
    await waitFor(() => runs.length === 1, {
      timeoutMs: 10_000,
      what: 'the job to run once its partition is back',
    });
    assert.deepEqual(runs, [2], 'it ran on its second claim, the first one given back');
  });

  it('changes the partition count without reordering a key: the old partitions drain before the new ones run', async () => {
    const namespace = testNamespace();
    const events: RunEvent[] = [];
    const record = (m: PartitionWorkerMessage) => {
      if (m.kind === 'start' || m.kind === 'end' || m.kind === 'abort') events.push(m);
    };
    // jobs 0-9 of each key wait in the 2 old partitions (published while nothing consumes them)
    const before = await testWarren({
      namespace,
      topology: partitionTopology(2),
      handlers: [ledgerJob(1, 4, record)],
    });
    for (let seq = 0; seq < 10; seq++)
      await Promise.all(
        Array.from({ length: 6 }, (_, k) => before.publish('ordered.step', { key: `key-${k}`, seq })),
      );
    // step 1: publishers send to 4 partitions, workers drain the 2 old ones and leave the new ones alone
    const step1 = await testWarren({
      namespace,
      topology: defineTopology({ queues: { ordered: { partitions: { count: 4, previous: 2 } } } }),
      handlers: [ledgerJob(1, 4, record)],
    });
    for (let seq = 10; seq < 20; seq++)
      await Promise.all(
        Array.from({ length: 6 }, (_, k) => step1.publish('ordered.step', { key: `key-${k}`, seq })),
      );
    await step1.start();
    await waitFor(() => events.filter((e) => e.kind === 'end').length >= 60, {
      what: 'the old partitions to drain',
    });
    for (let i = 0; i < 2; i++) assert.equal(await messageCount(`${namespace}.ordered.part-2.${i}`), 0);
    assert.equal(
      (await Promise.all([0, 1, 2, 3].map((i) => messageCount(`${namespace}.ordered.part-4.${i}`)))).reduce(
        (a, b) => a + b,
      ),
      60,
      'the new partitions wait',
    );
    assert.ok(events.every((e) => e.seq < 10));
    // pause and resume: the process leaves the membership and joins again
    const ownedBy = (w: typeof step1) =>
      w.health().consumers.find((c) => c.queue === 'ordered')?.partitions?.owned;
    await step1.pause('ordered');
    assert.deepEqual(ownedBy(step1), []);
    await step1.resume('ordered');
    await waitFor(() => ownedBy(step1)?.length === 2, {
      what: 'the resumed process to own the 2 old partitions again',
    });
    // step 2: the new count alone
    await step1.close();
    const step2 = await testWarren({
      namespace,
      topology: partitionTopology(4),
      handlers: [ledgerJob(1, 4, record)],
    });
    await step2.start();
    const jobs = new Map(Array.from({ length: 6 }, (_, k) => [`key-${k}`, 20] as const));
    await waitFor(() => checkLedger(events, jobs).lost.length === 0, { what: 'every job to run' });
    const report = checkLedger(events, jobs);
    assert.deepEqual(report.reorderings, []);
    assert.deepEqual(report.overlaps, []);
  });

  it('spreads the partitions over worker processes, one owner each, and moves them when one leaves', async () => {
    const namespace = testNamespace('parts');
    const events: RunEvent[] = [];
    const owned = new Map<number, readonly number[]>();
    // declares the topology (and deletes it in cleanup); never started, so it is no member
    const publisher = await testWarren({
      namespace,
      topology: partitionTopology(8),
      handlers: [ledgerJob(1, 4, () => undefined)],
    });
    const spawn = () => {
      const worker = workers.fork([namespace, '8', '200', '2', '4']);
      worker.child.on('message', (m: PartitionWorkerMessage) => {
        if (m.kind === 'owned') owned.set(m.pid, m.owned);
        else if (m.kind !== 'ready') events.push(m);
      });
      return worker;
    };
    const children = [spawn(), spawn(), spawn()];
    const settled = (pids: readonly number[], most: number) => {
      const lists = pids.map((pid) => owned.get(pid) ?? []);
      const all = lists.flat().sort((x, y) => x - y);
      return all.length === 8 && all.every((p, i) => p === i) && lists.every((l) => l.length <= most);
    };
    await waitFor(
      () =>
        settled(
          children.map((c) => c.pid),
          3,
        ),
      {
        timeoutMs: 20_000,
        what: () => `three workers to own 8 partitions, at most 3 each (${JSON.stringify([...owned])})`,
      },
    );
    const connection = await rawConnection();
    try {
      for (let i = 0; i < 8; i++) {
        const counts = await checkQueueIfExists(
          () => connection.createChannel(),
          `${namespace}.ordered.part-8.${i}`,
        );
        assert.equal(counts?.consumerCount, 1, `partition ${i} has one consumer`);
      }
    } finally {
      await connection.close();
    }
    const first = await publishLedger((data) => publisher.publish('ordered.step', data), 30, 10);
    await waitFor(() => events.filter((e) => e.kind === 'end').length >= 300, {
      timeoutMs: 30_000,
      what: 'the first 300 jobs',
    });
    // one leaves: the two others own 4 each
    const leaving = children[0]!;
    leaving.child.kill('SIGTERM');
    await leaving.exited;
    const rest = children.slice(1).map((c) => c.pid);
    const movedAt = Date.now();
    await waitFor(() => settled(rest, 4), {
      timeoutMs: 10_000,
      what: () => `two workers to own 8 partitions, 4 each (${JSON.stringify([...owned])})`,
    });
    assert.ok(Date.now() - movedAt < 5_000);
    const second = new Map<string, number>();
    for (let seq = 10; seq < 20; seq++)
      await Promise.all(
        Array.from({ length: 30 }, (_, k) => publisher.publish('ordered.step', { key: `key-${k}`, seq })),
      );
    for (let k = 0; k < 30; k++) second.set(`key-${k}`, 20);
    await waitFor(() => checkLedger(events, second).lost.length === 0, {
      timeoutMs: 30_000,
      what: () => `every job to run (${checkLedger(events, second).lost.length} left)`,
    });
    const report = checkLedger(events, second);
    assert.equal(first.size, 30);
    assert.deepEqual(report.reorderings, []);
    assert.deepEqual(report.overlaps, []);
  });
});
