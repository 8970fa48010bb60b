import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleepMs } from 'node:timers/promises';
import * as amqp from 'amqplib';
import { defineJob, WarrenError } from '../../src';
import { laneOf } from '../../src/message';
import { ChildWorkers, type ChildWorker } from '../fixtures/child-workers';
import {
  keyLimitJobs,
  keyLimitTopology,
  type KeyLimitJob,
  type KeyLimitWorkerMessage,
  type KeyLimitWorkerSettings,
} from '../fixtures/key-limit-worker';
import { warrenMetrics } from '../../src/observability';
import { createOps, type WarrenOps } from '../../src/ops';
import { createBrokerUser, DEFAULT_EXCHANGE_ONLY, deleteBrokerUser } from '../support/broker-user';
import { BROKER_URL, cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Per-key limits on the broker under test (docs/guide/per-key-limits.md), across 3 worker processes: the ledger
 * is the children's start and end stamps, sent over IPC. Per-key concurrency never exceeded, a key at its cap
 * costing the others nothing, a per-key rate within one of its max per window, and a worker SIGKILLed while it
 * holds a key's slot: the job comes back and the key goes on.
 */
type RunEvent = Extract<KeyLimitWorkerMessage, { kind: 'start' | 'end' }>;

const PARTITIONS = 6;

interface Fleet {
  readonly namespace: string;
  readonly events: RunEvent[];
  readonly children: readonly ChildWorker<KeyLimitWorkerMessage>[];
  readonly owned: Map<number, readonly number[]>;
  readonly publish: (job: 'limited.call' | 'limited.rated', data: KeyLimitJob) => Promise<unknown>;
}

describe('per-key limits across worker processes', () => {
  const workers = new ChildWorkers<KeyLimitWorkerMessage>('../fixtures/key-limit-worker');
  const opened: WarrenOps[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close().catch(() => undefined);
    await workers.killAll();
    await cleanup();
  });
  const opsFor = (namespace: string, signingKey?: string) => {
    const ops = createOps({ url: BROKER_URL, namespace, ...(signingKey ? { signingKey } : {}) });
    opened.push(ops);
    return ops;
  };

  /** Three workers, each partition owned by one of them (stable for a second), and a publisher that never runs. */
  async function fleet(overrides: Partial<KeyLimitWorkerSettings>): Promise<Fleet> {
    const namespace = testNamespace('perkey');
    const settings: KeyLimitWorkerSettings = {
      partitions: PARTITIONS,
      concurrency: 4,
      perKey: 2,
      rateMax: 5,
      rateMs: 1000,
      // the default heartbeat: a member is gone after 3 s unheard, so a loaded machine's pauses move no partition
      heartbeatMs: 500,
      ...overrides,
    };
    // declares the topology (and deletes it in cleanup); never started, so it is no member
    const publisher = await testWarren({
      namespace,
      topology: keyLimitTopology(settings.partitions),
      handlers: [...keyLimitJobs(settings, () => undefined)],
    });
    const events: RunEvent[] = [];
    const owned = new Map<number, readonly number[]>();
    const children = [0, 1, 2].map(() => {
      const worker = workers.fork([namespace, JSON.stringify(settings)]);
      worker.child.on('message', (m: KeyLimitWorkerMessage) => {
        if (m.kind === 'owned') owned.set(m.pid, m.owned);
        else if (m.kind !== 'ready') events.push(m);
      });
      return worker;
    });
    const settled = () => {
      const all = children.flatMap((c) => owned.get(c.pid) ?? []).sort((a, b) => a - b);
      return all.length === settings.partitions && all.every((p, i) => p === i);
    };
    let since = 0;
    await waitFor(
      () => {
        if (!settled()) since = 0;
        else if (since === 0) since = Date.now();
        return since > 0 && Date.now() - since >= 1_000;
      },
      {
        timeoutMs: 30_000,
        what: () => `3 workers to own ${settings.partitions} partitions (${JSON.stringify([...owned])})`,
      },
    );
    return { namespace, events, children, owned, publish: (job, data) => publisher.publish(job, data) };
  }

  it('never runs more than perKeyConcurrency jobs of a key at once, across 3 processes', async () => {
    const { events, publish } = await fleet({ perKey: 2, concurrency: 4 });
    const keys = ['acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5'];
    for (let seq = 0; seq < 24; seq++)
      await Promise.all(keys.map((key) => publish('limited.call', { key, seq, ms: 40 })));
    await waitFor(() => ended(events).size >= keys.length * 24, {
      timeoutMs: 60_000,
      what: () => `${keys.length * 24} jobs to end (${ended(events).size} so far)`,
    });
    for (const key of keys) {
      const most = mostAtOnce(events, 'limited.call', key);
      assert.ok(most <= 2, `key ${key} ran ${most} jobs at once (cap 2)`);
    }
    assert.ok(
      keys.some((key) => mostAtOnce(events, 'limited.call', key) === 2),
      'some key used both of its slots',
    );
    assert.ok(new Set(events.map((e) => e.pid)).size >= 2, 'jobs ran in more than one process');
    // waiting for a slot spends no attempt, also for the jobs re-delayed through the delay levels
    assert.deepEqual(
      events.filter((e) => e.attempt !== 1),
      [],
    );
  });

  it('lets the other keys of a partition flow while a key is at its cap (no head-of-line blocking)', async (t) => {
    const { events, publish } = await fleet({ perKey: 1, concurrency: 8 });
    // the saturated key and two of the light keys share a partition; the other light keys are spread
    const hot = 'hot-key';
    const hotPartition = laneOf(hot, PARTITIONS);
    const sameAsHot = candidates((k) => laneOf(k, PARTITIONS) === hotPartition, 2);
    const elsewhere = candidates((k) => laneOf(k, PARTITIONS) !== hotPartition, 4);
    const light = [...sameAsHot, ...elsewhere];
    const perLight = 20;
    const lightRun = async (seq0: number) => {
      for (let seq = seq0; seq < seq0 + perLight; seq++)
        await Promise.all(light.map((key) => publish('limited.call', { key, seq, ms: 50 })));
      await waitFor(() => light.every((key) => endedOf(events, key, seq0, perLight) === perLight), {
        timeoutMs: 60_000,
        what: () => `the light keys' ${light.length * perLight} jobs to end`,
      });
      return throughput(events, light, seq0, perLight);
    };
    // a first round warms the fleet up (connections, JIT, the partitions' first deliveries): not measured
    await lightRun(2000);
    const alone = await lightRun(0);
    for (let seq = 0; seq < 150; seq++) await publish('limited.call', { key: hot, seq, ms: 50 });
    await waitFor(() => events.some((e) => e.key === hot && e.kind === 'start'), {
      what: 'the hot key to run',
    });
    const beside = await lightRun(1000);
    t.diagnostic(
      `light keys: ${alone.toFixed(1)} jobs/s alone, ${beside.toFixed(1)} beside the saturated key`,
    );
    assert.ok(
      beside >= 0.9 * alone,
      `the light keys ran ${beside.toFixed(1)} jobs/s beside the saturated key, ${alone.toFixed(1)} alone (>= 0.9x)`,
    );
    assert.ok(mostAtOnce(events, 'limited.call', hot) <= 1, 'the hot key kept its cap of 1');
    await waitFor(() => endedOf(events, hot, 0, 150) === 150, {
      timeoutMs: 120_000,
      what: () => `the hot key's 150 jobs to end (${endedOf(events, hot, 0, 150)})`,
    });
    const hotRuns = events.filter((e) => e.key === hot && e.kind === 'start');
    assert.ok(
      hotRuns.some((e) => e.limited === 'concurrency'),
      'some hot jobs were re-delayed for their cap',
    );
    assert.deepEqual(
      hotRuns.filter((e) => e.attempt !== 1),
      [],
      'waiting for the key spent no attempt',
    );
  });

  it('starts at most max jobs of a key per window, and about max while it has a backlog', async () => {
    const { events, publish } = await fleet({ rateMax: 5, rateMs: 1000, concurrency: 4 });
    const keys = ['api-a', 'api-b', 'api-c'];
    for (let seq = 0; seq < 20; seq++)
      await Promise.all(keys.map((key) => publish('limited.rated', { key, seq, ms: 0 })));
    await waitFor(() => ended(events).size >= 60, {
      timeoutMs: 60_000,
      what: () => `60 rated jobs to end (${ended(events).size})`,
    });
    for (const key of keys) {
      const starts = events
        .filter((e) => e.kind === 'start' && e.key === key)
        .map((e) => e.at)
        .sort((a, b) => a - b);
      assert.equal(starts.length, 20, `key ${key} started each job once`);
      // any window of 1 s: at most max (+1 for the stamp taken in the handler, a few ms after the limiter's)
      const most = Math.max(...starts.map((t) => starts.filter((s) => s >= t && s < t + 1000).length));
      assert.ok(most <= 6, `key ${key} started ${most} jobs within 1 s (max 5, +-1)`);
      // while its backlog lasts (4 whole windows of 20 jobs at 5/s): at least max - 1 per window
      for (let w = 0; w < 3; w++) {
        const inWindow = starts.filter((s) => s >= starts[0]! + w * 1000 && s < starts[0]! + (w + 1) * 1000);
        assert.ok(
          inWindow.length >= 4,
          `key ${key} started ${inWindow.length} jobs in window ${w} (max 5, +-1)`,
        );
      }
    }
  });

  it('frees the slots of a worker SIGKILLed while it runs a key: its job runs again and the key goes on', async () => {
    const { events, children, publish } = await fleet({ perKey: 1, concurrency: 4 });
    const key = 'acct-killed';
    for (let seq = 0; seq < 4; seq++) await publish('limited.call', { key, seq, ms: 1500 });
    await waitFor(() => events.some((e) => e.key === key && e.kind === 'start'), {
      what: 'the key to start',
    });
    const first = events.find((e) => e.key === key && e.kind === 'start')!;
    const victim = children.find((c) => c.pid === first.pid)!;
    victim.child.kill('SIGKILL');
    const killedAt = performance.timeOrigin + performance.now();
    await victim.exited;
    await waitFor(() => endedOf(events, key, 0, 4) === 4, {
      timeoutMs: 60_000,
      what: () => `the key's 4 jobs to end after the kill (${endedOf(events, key, 0, 4)})`,
    });
    const rerun = events.find((e) => e.kind === 'end' && e.key === key && e.seq === first.seq);
    assert.ok(rerun && rerun.pid !== victim.pid, 'the killed run ran again on another worker');
    assert.ok(mostAtOnce(events, 'limited.call', key, killedAt) <= 1, 'the key never ran two jobs at once');
  });

  it('applies a rate raised with ops.limits in every owner within 1 s', async (t) => {
    const { namespace, events, publish } = await fleet({ rateMax: 2, rateMs: 1000, concurrency: 4 });
    const key = 'api-raised';
    for (let seq = 0; seq < 40; seq++) await publish('limited.rated', { key, seq, ms: 0 });
    const starts = () =>
      events
        .filter((e) => e.kind === 'start' && e.key === key)
        .map((e) => e.at)
        .sort((a, b) => a - b);
    await waitFor(() => starts().length >= 4, { timeoutMs: 30_000, what: 'two windows at the planned rate' });
    const ops = opsFor(namespace);
    await assert.rejects(
      ops.limits.set({ target: 'limited.rated', key, max: 0 }),
      (error: unknown) => error instanceof WarrenError && error.code === 'LIMIT_INVALID',
    );
    const calledAt = performance.timeOrigin + performance.now();
    const record = await ops.limits.set({ target: 'limited.rated', key, max: 10 });
    // set reads the stream first (to keep the key's other override): the bound runs from its confirm
    const setAt = performance.timeOrigin + performance.now();
    t.diagnostic(`ops.limits.set took ${(setAt - calledAt).toFixed(0)} ms`);
    assert.equal(record.max, 10);
    // the new rate shows: the first start that makes more than the planned 2 within a second
    const over = () =>
      starts().find((s) => s >= setAt && starts().filter((o) => o > s - 1000 && o <= s).length > 2);
    await waitFor(() => over() !== undefined, { timeoutMs: 10_000, what: 'the raised rate to show' });
    const delayMs = over()! - setAt;
    t.diagnostic(`the raised rate showed ${delayMs.toFixed(0)} ms after ops.limits.set resolved`);
    assert.ok(delayMs <= 1000, `the raised rate showed after ${delayMs.toFixed(0)} ms (bound 1000)`);
    const before = starts().filter((s) => s < calledAt);
    const mostBefore = Math.max(...before.map((s) => before.filter((o) => o >= s && o < s + 1000).length));
    assert.ok(mostBefore <= 3, `at most 2 (+1) per second before the raise (${mostBefore})`);
    assert.deepEqual(await ops.limits.get('limited.rated', key), record);
    assert.deepEqual(
      (await ops.limits.list()).map((r) => [r.target, r.key, r.max]),
      [['limited.rated', key, 10]],
    );
  });

  it('skips a limits record forged by another vhost user, and applies a signed one', async () => {
    const KEY = 'per-key-limits-test-signing-key-0123456789';
    const namespace = testNamespace('perkey');
    const settings = {
      partitions: 2,
      concurrency: 6,
      perKey: 1,
      rateMax: 1000,
      rateMs: 1000,
      heartbeatMs: 200,
    };
    const events: RunEvent[] = [];
    const metrics = warrenMetrics();
    const w = await testWarren({
      namespace,
      topology: keyLimitTopology(2),
      handlers: [
        ...keyLimitJobs(settings, (m) => {
          if (m.kind === 'start' || m.kind === 'end') events.push(m);
        }),
      ],
      signingKey: KEY,
      instrumentation: [metrics],
    });
    await w.start();
    const forger = await createBrokerUser('forger', DEFAULT_EXCHANGE_ONLY);
    try {
      const connection = await amqp.connect(forger.url);
      try {
        const channel = await connection.createConfirmChannel();
        const forged = { v: 1, target: 'limited.call', key: 'k', concurrency: 5, at: Date.now() };
        channel.sendToQueue(`${namespace}.warren.limits`, Buffer.from(JSON.stringify(forged)), {
          persistent: true,
        });
        await channel.waitForConfirms();
      } finally {
        await connection.close().catch(() => undefined);
      }
      await waitFor(() => w.health().records.byRole.limits?.unsigned === 1, {
        what: 'the forged record to be skipped',
      });
      const batch = async (seq0: number) => {
        for (let seq = seq0; seq < seq0 + 6; seq++)
          await w.publish('limited.call', { key: 'k', seq, ms: 150 });
        if (seq0 === 0) {
          // metrics: jobs waiting on the key's limit, and the key among the busiest
          await waitFor(
            async () =>
              /warren_key_limit_waiting_jobs\{queue="limited"\} [1-9]/.test(await metrics.metrics()),
            { what: 'the waiting jobs in the metrics' },
          );
          assert.match(
            await metrics.metrics(),
            /warren_key_limit_busiest_running_jobs\{queue="limited",key="k"\} 1/,
          );
        }
        await waitFor(() => endedOf(events, 'k', seq0, 6) === 6, {
          timeoutMs: 30_000,
          what: `jobs ${seq0}+ to end`,
        });
        return mostAtOnce(
          events.filter((e) => e.seq >= seq0 && e.seq < seq0 + 6),
          'limited.call',
          'k',
        );
      };
      assert.equal(await batch(0), 1, 'the forged override was not applied: the key kept its cap of 1');
      await opsFor(namespace, KEY).limits.set({ target: 'limited.call', key: 'k', concurrency: 3 });
      await sleepMs(200);
      assert.equal(await batch(100), 3, 'the signed override was applied: 3 at once');
    } finally {
      await deleteBrokerUser(forger);
    }
  });

  it('refuses per-key limits on a queue that cannot give each key one owner (LIMIT_INVALID)', async () => {
    const settings = { partitions: 2, concurrency: 1, perKey: 2, rateMax: 1, rateMs: 100, heartbeatMs: 200 };
    await assert.rejects(
      testWarren({
        topology: { queues: { limited: { partitions: 2 } } },
        handlers: [...keyLimitJobs(settings, () => undefined)],
      }),
      (error: unknown) => error instanceof WarrenError && error.code === 'LIMIT_INVALID',
    );
    const bare = defineJob(
      'limited.bare',
      { queue: 'limited', perKeyConcurrency: 1, limiter: { max: 1, durationMs: 100, per: 'key' } },
      async () => undefined,
    );
    const publisher = await testWarren({
      topology: keyLimitTopology(2),
      handlers: [...keyLimitJobs(settings, () => undefined), bare],
    });
    const refused = (code: string) => (error: unknown) => error instanceof WarrenError && error.code === code;
    await assert.rejects(publisher.publish(bare, {}), refused('PUBLISH_MISSING_KEY'));
    // a key function (or a per function) that gives no key: the job's key is invalid
    await assert.rejects(
      publisher.publish('limited.rated', { seq: 0, ms: 0 } as never),
      refused('PUBLISH_INVALID_KEY'),
    );
    await publisher.publish(bare, {}, { key: 'k' });
  });
});

/** The (job, key, seq) of every run that ended. */
function ended(events: readonly RunEvent[]): Set<string> {
  return new Set(events.filter((e) => e.kind === 'end').map((e) => `${e.job}/${e.key}/${e.seq}`));
}

function endedOf(events: readonly RunEvent[], key: string, seq0: number, count: number): number {
  return new Set(
    events
      .filter((e) => e.kind === 'end' && e.key === key && e.seq >= seq0 && e.seq < seq0 + count)
      .map((e) => e.seq),
  ).size;
}

/** Jobs per second of the keys' runs from seq0 on: their count over their span, first start to last end. */
function throughput(
  events: readonly RunEvent[],
  keys: readonly string[],
  seq0: number,
  count: number,
): number {
  const runs = events.filter((e) => keys.includes(e.key) && e.seq >= seq0 && e.seq < seq0 + count);
  const first = Math.min(...runs.filter((e) => e.kind === 'start').map((e) => e.at));
  const last = Math.max(...runs.filter((e) => e.kind === 'end').map((e) => e.at));
  return (keys.length * count) / ((last - first) / 1000);
}

/**
 * The most runs of a job type's key at once, from the ledger: a start without its end (its process was killed)
 * counts until `openUntil`.
 */
function mostAtOnce(
  events: readonly RunEvent[],
  job: string,
  key: string,
  openUntil = Number.POSITIVE_INFINITY,
): number {
  const mine = events.filter((e) => e.job === job && e.key === key);
  const marks: { at: number; delta: number }[] = [];
  for (const start of mine.filter((e) => e.kind === 'start')) {
    const end = mine.find(
      (e) => e.kind === 'end' && e.pid === start.pid && e.seq === start.seq && e.at >= start.at,
    );
    marks.push({ at: start.at, delta: 1 }, { at: end?.at ?? openUntil, delta: -1 });
  }
  marks.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let most = 0;
  for (const mark of marks) {
    running += mark.delta;
    most = Math.max(most, running);
  }
  return most;
}

/** The first `count` key names `light-<i>` that `fits`. */
function candidates(fits: (key: string) => boolean, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) if (fits(`light-${i}`)) found.push(`light-${i}`);
  return found;
}
