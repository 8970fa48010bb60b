/**
 * The dashboard's queue view of a queue with ordered partitions, in a real browser (Debian's chromium through
 * playwright-core): a row per partition with its owner, the worker process that consumes it, as `warren
 * queues` prints it (docs/guide/ordered-partitions.md, "Operating"). The screenshot lands in docs/ when
 * WARREN_UPDATE_SCREENSHOTS is set.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import { ChildWorkers } from '../fixtures/child-workers';
import { ledgerJob, partitionTopology, type PartitionWorkerMessage } from '../fixtures/partition-worker';
import { cleanup, testNamespace, testProfile, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { launchChromium, screenshotFolder } from '../support/browser';

const DOCS = screenshotFolder();

describe('dashboard: ordered partitions', () => {
  const namespace = testNamespace('uipart');
  const workers = new ChildWorkers<PartitionWorkerMessage>('../fixtures/partition-worker');
  const owned = new Map<number, readonly number[]>();
  let ops: WarrenOps;
  let server: DashboardServer;
  let browser: Browser;

  before(async () => {
    // declares the topology (and deletes it in cleanup); never started, so it owns nothing
    await testWarren({
      namespace,
      topology: partitionTopology(4),
      handlers: [ledgerJob(1, 2, () => undefined)],
    });
    ops = createOps({ ...testProfile(namespace), topology: partitionTopology(4), replyTimeoutMs: 500 });
    server = await startDashboardServer({ ops, port: 0 });
    browser = await launchChromium();
    mkdirSync(DOCS, { recursive: true });
  });

  after(async () => {
    await workers.killAll();
    await browser?.close();
    await server?.close();
    await ops?.close();
    await cleanup();
  });

  it("shows each partition's owner, the worker process that consumes it", async () => {
    const children = [0, 1].map(() => {
      const child = workers.fork([namespace, '4', '200', '2', '2']);
      child.child.on('message', (m: PartitionWorkerMessage) => {
        if (m.kind === 'owned') owned.set(m.pid, m.owned);
      });
      return child;
    });
    const expected = () => {
      const byPartition = new Map<number, string>();
      for (const { pid } of children)
        for (const p of owned.get(pid) ?? []) byPartition.set(p, `${hostname()}:${pid}`);
      return byPartition;
    };
    await waitFor(() => expected().size === 4 && children.every((c) => owned.get(c.pid)?.length === 2), {
      timeoutMs: 20_000,
      what: () => `two workers owning two partitions each (${JSON.stringify([...owned])})`,
    });
    const context = await browser.newContext({ viewport: { width: 1100, height: 640 } });
    const page = await context.newPage();
    await page.goto(`${server.url}#/queue/ordered`);
    const owners = page.locator('[data-testid=lanes] [data-testid=owner]');
    const want = [0, 1, 2, 3].map((p) => expected().get(p)!);
    let shown: string[] = [];
    await waitFor(
      async () => {
        shown = await owners.allTextContents();
        return JSON.stringify(shown) === JSON.stringify(want);
      },
      {
        timeoutMs: 15_000,
        what: () => `the owners ${JSON.stringify(want)} (page shows ${JSON.stringify(shown)})`,
      },
    );
    assert.deepEqual(await page.locator('[data-testid=lanes] th').allTextContents(), [
      'Partition',
      'Ready',
      'Unacked',
      'Consumers',
      'Owner',
    ]);
    await page.screenshot({ path: join(DOCS, 'dashboard-partitions.png'), fullPage: true });
    await context.close();
  });
});
