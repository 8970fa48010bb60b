import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import {
  defineJob,
  defineTopology,
  HEADERS,
  PublishError,
  TopologyError,
  type TopologyDeclaration,
} from '../../src';
import { laneOf } from '../../src/message';
import { Registry } from 'prom-client';
import { warrenMetrics } from '../../src/observability';
import { createOps } from '../../src/ops';
import { startDashboardServer } from '../../src/ui';
import { runCli } from '../support/run-cli';
import {
  BROKER_URL,
  cleanup,
  MANAGEMENT_URL,
  messageCount,
  rawConnection,
  testNamespace,
  testProfile,
  testWarren,
} from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Fair share on the broker under test, with small numbers (the load figures are the bench's: `npm run bench
 * -- fairness`): one key's flood does not hold back keys in other lanes, foreign publishers get the same
 * treatment, and the two migrations (a lane-count change, fairness turned on for a queue with a backlog)
 * lose nothing.
 */
type Row = { tenant: string; n: number };

const LANES = 4;
/** Keys that do not share the flooding key's lane, and one that does. */
const FLOOD = 'tenant-flood';
const floodLane = laneOf(FLOOD, LANES);
const others = Array.from({ length: 40 }, (_, i) => `tenant-${i}`)
  .filter((key) => laneOf(key, LANES) !== floodLane)
  .slice(0, 6);
const colliding = Array.from({ length: 80 }, (_, i) => `collide-${i}`).find(
  (key) => laneOf(key, LANES) === floodLane,
)!;

function fairTopology(fairness: boolean | { lanes: number; previousLanes?: number }): TopologyDeclaration {
  return defineTopology({
    queues: {
      imports: fairness === false ? {} : { fairness: fairness === true ? { lanes: LANES } : fairness },
    },
  });
}

/** A row job that records the order rows start in; each run takes about `ms`. */
function rowJob(started: Row[], ms = 3) {
  return defineJob(
    'import.row',
    { queue: 'imports', concurrency: 2, key: (data: Row) => data.tenant },
    async (data: Row) => {
      started.push(data);
      await new Promise((resolve) => setTimeout(resolve, ms));
    },
  );
}

const rows = (tenant: string, count: number) =>
  Array.from({ length: count }, (_, n) => ({ job: 'import.row', data: { tenant, n } }));

/** How many flood rows had started before every row of `keys` had. */
function floodBefore(started: readonly Row[], keys: readonly string[]): number {
  let last = -1;
  started.forEach((row, i) => {
    if (keys.includes(row.tenant)) last = i;
  });
  return started.slice(0, last).filter((row) => row.tenant === FLOOD).length;
}

describe('fair share', () => {
  afterEach(cleanup);

  it("starts other keys' jobs within a few rounds of a 300-job flood, and the flood still runs", async () => {
    const started: Row[] = [];
    const warren = await testWarren({ topology: fairTopology(true), handlers: [rowJob(started)] });
    await warren.publishMany(rows(FLOOD, 300));
    await warren.publishMany(others.flatMap((key) => rows(key, 2)));
    await warren.publishMany(rows(colliding, 2));
    await warren.start();
    await waitFor(() => started.length === 300 + others.length * 2 + 2, { timeoutMs: 30_000 });
    // 12 jobs of 6 keys in other lanes: with round-robin across keys, a dozen flood rows at most run first
    const before = floodBefore(started, others);
    assert.ok(before <= 20, `${before} flood rows ran before the other keys' last row`);
    // the lane-level guarantee (docs/guide/fair-share.md): a key in the flood's lane waits behind its backlog
    assert.ok(floodBefore(started, [colliding]) > 200, 'the colliding key waited behind its lane');
  });

  it('without fairness, the same flood holds every other key back (what the test above guards against)', async () => {
    const started: Row[] = [];
    const warren = await testWarren({ topology: fairTopology(false), handlers: [rowJob(started, 0)] });
    await warren.publishMany(rows(FLOOD, 100));
    await warren.publishMany(others.flatMap((key) => rows(key, 2)));
    await warren.start();
    await waitFor(() => started.length === 100 + others.length * 2, { timeoutMs: 30_000 });
    assert.equal(floodBefore(started, others), 100);
  });

  it('runs what a foreign publisher sends to a lane by the documented hash, and counts a job without a key', async () => {
    const started: Row[] = [];
    const namespace = testNamespace();
    const warren = await testWarren({ namespace, topology: fairTopology(true), handlers: [rowJob(started)] });
    await warren.start();
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      const publish = (queue: string, row: Row, headers: Record<string, unknown>) =>
        channel.sendToQueue(queue, Buffer.from(JSON.stringify(row)), {
          type: 'import.row',
          messageId: `${row.tenant}-${row.n}`,
          contentType: 'application/json',
          persistent: true,
          headers,
        });
      publish(
        `${namespace}.imports.lane-${LANES}.${laneOf('pika', LANES)}`,
        { tenant: 'pika', n: 1 },
        {
          [HEADERS.key]: 'pika',
        },
      );
      publish(`${namespace}.imports`, { tenant: 'none', n: 2 }, {});
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    await waitFor(() => started.length === 2);
    const consumer = warren.health().consumers.find((c) => c.queue === 'imports');
    assert.equal(consumer?.fairness?.unkeyed, 1);
  });

  it('refuses a key function that returns no string at publish, with PUBLISH_INVALID_KEY', async () => {
    const warren = await testWarren({ topology: fairTopology(true), handlers: [rowJob([])] });
    await assert.rejects(
      warren.publish('import.row', { tenant: 42, n: 1 } as never),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_INVALID_KEY',
    );
    await assert.rejects(
      warren.publish('import.row', { tenant: 'a', n: 1 }, { key: 'x'.repeat(256) }),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_INVALID_KEY',
    );
  });

  it('retries and delays a keyed job through its own lane', async () => {
    const attempts: number[] = [];
    const flaky = defineJob(
      'import.flaky',
      { queue: 'imports', key: (data: Row) => data.tenant, backoff: { type: 'fixed', delayMs: 200 } },
      (_data: Row, ctx) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt === 1) throw new Error('first attempt fails');
      },
    );
    const warren = await testWarren({ topology: fairTopology(true), handlers: [flaky] });
    await warren.start();
    await warren.publish('import.flaky', { tenant: 'acme', n: 1 }, { delayMs: 200 });
    await waitFor(() => attempts.length === 2, { timeoutMs: 15_000 });
    assert.deepEqual(attempts, [1, 2]);
  });
});

describe('fair share composes with the other job options, or refuses', () => {
  afterEach(cleanup);

  it("never runs more than the queue's concurrency at once across its lanes", async () => {
    let running = 0;
    let most = 0;
    const job = defineJob(
      'import.row',
      { queue: 'imports', concurrency: 3, key: (data: Row) => data.tenant },
      async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running -= 1;
      },
    );
    const warren = await testWarren({ topology: fairTopology(true), handlers: [job] });
    let done = 0;
    warren.on('completed', () => done++);
    await warren.publishMany(others.flatMap((key) => rows(key, 6)));
    await warren.start();
    await waitFor(() => done === others.length * 6, { timeoutMs: 20_000 });
    assert.equal(most, 3);
  });

  it("keeps a job's rate limit on a queue with fairness", async () => {
    const startedAt: number[] = [];
    const job = defineJob(
      'import.row',
      {
        queue: 'imports',
        key: (data: Row) => data.tenant,
        limiter: { max: 3, durationMs: 1000 },
      },
      () => {
        startedAt.push(Date.now());
      },
    );
    const warren = await testWarren({ topology: fairTopology(true), handlers: [job] });
    await warren.start();
    await warren.publishMany(others.flatMap((key) => rows(key, 1)));
    await waitFor(() => startedAt.length === others.length, { timeoutMs: 20_000 });
    // 6 jobs at 3 per window: at least one window boundary between the first and the last start
    const sorted = [...startedAt].sort((a, b) => a - b);
    assert.ok(Math.floor(sorted[5]! / 1000) > Math.floor(sorted[0]! / 1000), 'the jobs spanned two windows');
    const perWindow = new Map<number, number>();
    for (const t of sorted)
      perWindow.set(Math.floor(t / 1000), (perWindow.get(Math.floor(t / 1000)) ?? 0) + 1);
    for (const n of perWindow.values()) assert.ok(n <= 3 * 2, `${n} starts in one window`);
  });

  it('refuses fairness with maxPriority or singleActiveConsumer at createWarren, saying why', async () => {
    for (const extra of [{ maxPriority: 3 }, { singleActiveConsumer: true }])
      await assert.rejects(
        testWarren({
          topology: { queues: { imports: { fairness: true, ...extra } } },
          handlers: [rowJob([])],
        }),
        (error: unknown) =>
          error instanceof TopologyError && /fairness cannot be combined with/.test(error.message),
      );
  });
});

describe('operating a queue with fairness', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
    await cleanup();
  });

  it('shows the lanes in topology plan, diff and verify, and their depth and busiest keys in ops, warren queues and the dashboard', async () => {
    const namespace = testNamespace();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    const blocked = defineJob(
      'import.row',
      { queue: 'imports', concurrency: 1, key: (data: Row) => data.tenant },
      (data: Row) => {
        started.push(data.tenant);
        return gate;
      },
    );
    const busyLane = laneOf('busy', LANES);
    const blocker = others.find((key) => laneOf(key, LANES) !== busyLane)!;
    const warren = await testWarren({ namespace, topology: fairTopology(true), handlers: [blocked] });
    await warren.start();
    // the one slot is taken; then 'busy' waits in the scheduler from its lane and from the intake
    await warren.publish('import.row', { tenant: blocker, n: 0 });
    await waitFor(() => started.length === 1);
    await warren.publishMany(rows('busy', 6));
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    channel.sendToQueue(`${namespace}.imports`, Buffer.from('{"tenant":"busy","n":99}'), {
      type: 'import.row',
      contentType: 'application/json',
      headers: { [HEADERS.key]: 'busy' },
    });
    await channel.waitForConfirms();
    await connection.close();

    const options = { ...testProfile(namespace), topology: fairTopology(true), jobs: [blocked] };
    const ops = createOps({ ...options, management: { url: MANAGEMENT_URL }, replyTimeoutMs: 700 });
    opened.push(ops);
    const lanes = Array.from({ length: LANES }, (_, i) => `${namespace}.imports.lane-${LANES}.${i}`);
    const planned = ops.topology.plan().map((e) => e.name);
    for (const lane of lanes) assert.ok(planned.includes(lane), `${lane} is in the plan`);
    assert.deepEqual((await ops.topology.diff()).drift, []);
    const report = await ops.topology.verify();
    assert.equal(report.ok, true, JSON.stringify(report.checks.filter((c) => !c.ok)));
    assert.ok(
      report.checks.some((c) => c.subject === `imports lane ${busyLane}` && c.check === 'exists' && c.ok),
    );
    const seen = await waitFor(
      async () => {
        const [queue] = await ops.queues();
        const { processes } = await ops.processes();
        const fairness = processes[0]?.queues.find((q) => q.key === 'imports')?.fairness;
        const lane = queue?.lanes?.[busyLane];
        // unacked comes from the management API's statistics, refreshed every 5 s
        return lane?.ready === 5 && lane.unacked === 1 && fairness?.waiting === 2
          ? { lane, fairness }
          : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    assert.deepEqual(seen.fairness.busiestKeys, [{ key: 'busy', waiting: 2 }]);

    // `warren queues` prints a row per lane under the queue, and the busiest keys
    const cwd = mkdtempSync(join(tmpdir(), 'warren-lanes-'));
    writeFileSync(
      join(cwd, 'warren.config.js'),
      `module.exports = ${JSON.stringify({ url: BROKER_URL, namespace, topology: fairTopology(true), management: { url: MANAGEMENT_URL }, replyTimeoutMs: 700 })};\n`,
    );
    const cli = await runCli(['queues'], { cwd });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`^  lane ${busyLane} +5 +1 +1 *$`, 'm'), cli.stdout);
    assert.match(cli.stdout, /^busiest keys of imports: busy \(2 waiting\)$/m, cli.stdout);

    // the dashboard's queue page shows the same lane table and busiest keys
    const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
    assert.ok(existsSync(chromiumPath), `no browser at ${chromiumPath}: apt-get install -y chromium`);
    const server = await startDashboardServer({ ops, port: 0 });
    const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}#/queue/imports`);
      const row = page.locator(`[data-testid=lanes] tr[data-lane="${busyLane}"]`);
      await row.waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('[data-testid=lanes] tbody tr').count(), LANES);
      assert.deepEqual(await row.locator('td').allTextContents(), [String(busyLane), '5', '1', '1']);
      await page
        .locator('[data-testid=busiest-keys]', { hasText: 'Busiest keys: busy (2 waiting)' })
        .waitFor({ timeout: 15_000 });
    } finally {
      await browser.close();
      await server.close();
    }
    release();
  });

  it('measures the wait per lane, labelled by lane index, never by key', async () => {
    const registry = new Registry();
    const started: Row[] = [];
    const warren = await testWarren({
      topology: fairTopology(true),
      handlers: [rowJob(started)],
      instrumentation: [warrenMetrics({ registry })],
    });
    await warren.start();
    await warren.publishMany([...rows('acme', 3), ...rows('zeta', 2)]);
    await warren.publish('import.row', { tenant: 'acme', n: 9 }, { key: undefined });
    await waitFor(() => started.length === 6);
    const { values } = await registry.getSingleMetric('warren_job_lane_wait_seconds')!.get();
    const counts = new Map<string, number>();
    for (const v of values)
      if ((v as { metricName?: string }).metricName === 'warren_job_lane_wait_seconds_count')
        counts.set(`${v.labels.queue}/${v.labels.lane}`, v.value);
    const expected = new Map<string, number>();
    for (const tenant of ['acme', 'acme', 'acme', 'zeta', 'zeta', 'acme']) {
      const label = `imports/${laneOf(tenant, LANES)}`;
      expected.set(label, (expected.get(label) ?? 0) + 1);
    }
    assert.deepEqual(Object.fromEntries(counts), Object.fromEntries(expected));
  });
});

describe('fair-share migrations', () => {
  afterEach(cleanup);

  it('changes the lane count without losing the jobs waiting in the old lanes', async () => {
    const namespace = testNamespace();
    const before = await testWarren({ namespace, topology: fairTopology({ lanes: 2 }), jobs: [rowJob([])] });
    await before.publishMany(Array.from({ length: 10 }, (_, i) => rows(`t${i}`, 3)).flat());
    await before.close();
    const started: Row[] = [];
    const after = await testWarren({
      namespace,
      topology: fairTopology({ lanes: 4, previousLanes: 2 }),
      handlers: [rowJob(started)],
    });
    await after.publishMany(rows('fresh', 5));
    await after.start();
    await waitFor(() => started.length === 35, { timeoutMs: 20_000, what: () => `${started.length} of 35` });
    assert.equal(new Set(started.map((r) => `${r.tenant}/${r.n}`)).size, 35);
    // drained: the old lanes are empty, so the next release can drop previousLanes
    for (let i = 0; i < 2; i++) assert.equal(await messageCount(`${namespace}.imports.lane-2.${i}`), 0);
  });

  it('turns fairness on for a queue with a backlog: the backlog runs from the queue itself', async () => {
    const namespace = testNamespace();
    const before = await testWarren({ namespace, topology: fairTopology(false), jobs: [rowJob([])] });
    await before.publishMany(rows('old', 20));
    await before.close();
    const started: Row[] = [];
    const after = await testWarren({ namespace, topology: fairTopology(true), handlers: [rowJob(started)] });
    await after.publishMany(rows('new', 5));
    await after.start();
    await waitFor(() => started.length === 25, { timeoutMs: 20_000, what: () => `${started.length} of 25` });
    assert.equal(started.filter((r) => r.tenant === 'old').length, 20);
    assert.equal(await messageCount(`${namespace}.imports`), 0);
  });
});
