/**
 * The dashboard's queue view of a queue with per-key limits, in a real browser (Debian's chromium through
 * playwright-core): the jobs waiting on a key's limit and the busiest keys, as the worker processes report them
 * (docs/guide/per-key-limits.md, "Operating"), beside each partition's owner. The screenshot lands in docs/ when
 * WARREN_UPDATE_SCREENSHOTS is set.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { defineJob, defineTopology, type Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import { cleanup, testNamespace, testProfile, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { launchChromium, screenshotFolder } from '../support/browser';

const DOCS = screenshotFolder();

const topology = defineTopology({ queues: { exports: { partitions: { count: 2, order: 'none' } } } });

describe('dashboard: per-key limits', () => {
  const namespace = testNamespace('uilimits');
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let running = 0;
  let warren: Warren;
  let ops: WarrenOps;
  let server: DashboardServer;
  let browser: Browser;

  before(async () => {
    // one export per customer at once: the others of that customer wait aside in the worker
    const exportJob = defineJob(
      'exports.csv',
      {
        queue: 'exports',
        concurrency: 8,
        key: (job: { customer: string }) => job.customer,
        perKeyConcurrency: 1,
      },
      async () => {
        running += 1;
        await released;
      },
    );
    warren = await testWarren({ namespace, topology, handlers: [exportJob] });
    ops = createOps({ ...testProfile(namespace), topology, replyTimeoutMs: 500 });
    server = await startDashboardServer({ ops, port: 0 });
    browser = await launchChromium();
    mkdirSync(DOCS, { recursive: true });
  });

  after(async () => {
    release();
    await browser?.close();
    await server?.close();
    await ops?.close();
    await cleanup();
  });

  it('shows the jobs waiting on a key’s limit and the busiest keys, beside the owners', async () => {
    await warren.start();
    for (let i = 0; i < 5; i += 1) await warren.publish('exports.csv', { customer: 'acme' });
    await warren.publish('exports.csv', { customer: 'zeta' });
    await waitFor(() => running === 2, {
      timeoutMs: 20_000,
      what: () => `acme and zeta running (${running})`,
    });

    const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    const page = await context.newPage();
    await page.goto(`${server.url}#/queue/exports`);
    const waiting = page.locator('[data-testid=key-limits-waiting]');
    const busiest = page.locator('[data-testid=key-limits-busiest]');
    let shown = '';
    await waitFor(
      async () => {
        shown = `${await waiting.textContent().catch(() => '')} | ${await busiest.textContent().catch(() => '')}`;
        return shown.startsWith("4 jobs waiting on a key's limit");
      },
      { timeoutMs: 15_000, what: () => `4 acme jobs waiting on their key's limit (page shows '${shown}')` },
    );
    const busiestText = (await busiest.textContent()) ?? '';
    assert.match(busiestText, /acme \(1 running\)/);
    assert.match(busiestText, /zeta \(1 running\)/);
    // both partitions of an unordered queue have their owner: this process
    assert.deepEqual(await page.locator('[data-testid=lanes] [data-testid=owner]').allTextContents(), [
      `${hostname()}:${process.pid}`,
      `${hostname()}:${process.pid}`,
    ]);
    await page.screenshot({ path: join(DOCS, 'dashboard-key-limits.png'), fullPage: true });
    await context.close();
  });
});
