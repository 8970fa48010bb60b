/** The dashboard's job page follows a job live: api/jobs/<id>/events streams the job's events over SSE. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import { BuildReport, eventsAppOptions, OtherRun } from '../fixtures/event-subscriber';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { launchChromium } from '../support/browser';

describe('dashboard job page, live', () => {
  const namespace = testNamespace('uijob');
  let warren: Warren<object>;
  let ops: WarrenOps;
  let server: DashboardServer;

  before(async () => {
    warren = await testWarren({
      ...eventsAppOptions(namespace),
      handlers: [new BuildReport(), new OtherRun()],
    });
    await warren.start();
    // the dashboard's process runs no worker: what it shows comes from the broker
    ops = createOps({ ...eventsAppOptions(namespace), jobs: [BuildReport, OtherRun], replyTimeoutMs: 300 });
    server = await startDashboardServer({ ops, port: 0, authorize: () => ({ role: 'viewer', user: 'ada' }) });
  });

  after(async () => {
    await server?.close();
    await ops?.close();
    await cleanup();
  });

  it("streams a job's progress and completion, as they happen, to the page", async () => {
    const jobId = `report-${randomBytes(4).toString('hex')}`;
    const abort = new AbortController();
    const response = await fetch(`${server.url}api/jobs/${jobId}/events`, { signal: abort.signal });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    // the headers come once the subscription is in place: a job published now is followed from its start
    await warren.publish('report.build', { steps: [25, 50] }, { jobId });
    const reader = response.body!.getReader();
    let text = '';
    const events = () =>
      [...text.matchAll(/^event: job\ndata: (.+)$/gm)].map(
        (m) => JSON.parse(m[1]!) as Record<string, unknown>,
      );
    const deadline = Date.now() + 10_000;
    while (!events().some((e) => e.kind === 'completed')) {
      assert.ok(Date.now() < deadline, `no completed event in time (got ${text})`);
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
    abort.abort();
    assert.deepEqual(
      events().map((e) => e.kind),
      ['progress', 'progress', 'completed'],
    );
    assert.deepEqual(
      events().map((e) => e.progress ?? e.result),
      [25, 50, { done: 2 }],
    );
    assert.ok(events().every((e) => e.jobId === jobId && e.process === warren.processId));
  });

  it('shows the job live in a browser: its progress, then completed, from the page it is on', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const jobId = `report-${randomBytes(4).toString('hex')}`;
      // the page opens the job's live stream first (the overview's stream is up: the page is live)
      const subscribed = page.waitForResponse((r) => r.url().endsWith(`api/jobs/${jobId}/events`));
      await page.goto(`${server.url}#/job/${jobId}`);
      await subscribed;
      await page.locator('[data-testid=job-live-state]', { hasText: 'waiting for events' }).waitFor();
      await warren.publish('report.build', { steps: [40, 80] }, { jobId });
      await page
        .locator('[data-testid=job-live-state]', { hasText: 'completed' })
        .waitFor({ timeout: 10_000 });
      const rows = await page.locator('[data-testid=job-live] tr').allTextContents();
      assert.equal(rows.length, 3, rows.join(' | '));
      assert.match(rows[0]!, /^progress.*40$/);
      assert.match(rows[1]!, /^progress.*80$/);
      assert.match(rows[2]!, /^completed.*\{"done":2\}$/);
    } finally {
      await browser.close();
    }
  });
});
