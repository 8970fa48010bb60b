/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core through its executable
 * path: no browser download) against the real broker with real jobs. Screenshots land in docs/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type AuditEntry, type DashboardServer, startDashboardServer } from '../../src/ui';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { launchChromium, screenshotFolder } from '../support/browser';
import { reportLingering, trackTimers } from '../support/lingering';

trackTimers();

// The README's screenshots: rewritten only when asked, so a test run leaves the tree clean.
const DOCS = screenshotFolder();

describe('dashboard in a browser', () => {
  const namespace = testNamespace('ui');
  const state = new ChargeSwitch();
  const audit: AuditEntry[] = [];
  let warren: Warren<object>;
  let ops: WarrenOps;
  let server: DashboardServer;
  let browser: Browser;

  before(async () => {
    warren = await testWarren({
      ...deadLogOptions(namespace),
      history: { flushMs: 20 },
      handlers: [new Charge(state), new Refund(), new StalePing()],
    });
    await warren.start();
    // An ask waits its whole timeout without the management API: 1.5 s (ops' default), since at 300 ms a
    // loaded CI machine's worker answered too late and the pause read "confirmed by 0". (With the management
    // API the ask ends early, but this file once did not exit in CI with it; not reproduced, not kept.)
    ops = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 1500 });
    server = await startDashboardServer({
      ops,
      port: 0,
      // The test's stand-in for a login: a header names the role (a real app reads its session).
      authorize: (request) => {
        const role = request.headers['x-test-role'];
        const known = role === 'operator' || role === 'admin' ? role : 'viewer';
        return { role: known, user: `tester-${known}` };
      },
      audit: (entry) => audit.push(entry),
    });
    browser = await launchChromium();
    mkdirSync(DOCS, { recursive: true });
  });

  after(async () => {
    // this file twice passed its tests in CI and then did not exit (120 s): say where, and what was still open
    let step = 'browser.close';
    reportLingering(() => `ui-dashboard.test, teardown at ${step}`);
    await browser?.close();
    step = 'server.close';
    await server?.close();
    step = 'ops.close';
    await ops?.close();
    step = 'cleanup';
    await cleanup();
    step = 'done';
  });

  async function open(role: 'admin' | 'operator' | 'viewer'): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 760 },
      ...(role === 'viewer' ? {} : { extraHTTPHeaders: { 'x-test-role': role } }),
    });
    const page = await context.newPage();
    await page.goto(server.url);
    await page.locator('#live.on').waitFor({ timeout: 15_000 });
    return page;
  }

  async function deadLetterOf(jobId: string) {
    return waitFor(async () => (await ops.dead.search({ jobId, state: 'dead' }))[0], {
      what: `dead letter of ${jobId}`,
      intervalMs: 100,
    });
  }

  it('finds a dead letter by its job id, replays it, the job runs, and its page says completed', async () => {
    const { jobId } = await warren.publish('billing.charge', { id: 'c1', customer: { id: 'cu7' } });
    await warren.publish('billing.charge', { id: 'c2', customer: { id: 'cu8' } });
    const letter = await deadLetterOf(jobId);
    await deadLetterOf((await warren.publish('billing.charge', { id: 'c3', customer: { id: 'cu9' } })).jobId);
    const page = await open('operator');
    await page.locator('[data-testid=queues] tr[data-queue=billing]').waitFor();
    // Each count says where it comes from: the parking queue is not the dead-letter log.
    assert.match((await page.locator('[data-testid=queues] thead').textContent()) ?? '', /Parked/);
    assert.match(
      (await page.locator('[data-testid=queue-sources]').textContent()) ?? '',
      /Parked counts the dead letters not yet moved to the dead-letter log.*management API/,
    );
    await page.screenshot({ path: join(DOCS, 'dashboard-overview.png') });

    await page.goto(`${server.url}#/dead?jobId=${encodeURIComponent(jobId)}`);
    const row = page.locator(`[data-testid=dead-letters] tr[data-offset="${letter.offset}"]`);
    await row.waitFor();
    assert.equal(await page.locator('[data-testid=dead-letters] tbody tr').count(), 1);
    await page.goto(`${server.url}#/dead?queue=billing`);
    await page.locator('[data-testid=dead-letters] tbody tr').nth(2).waitFor();
    await page.screenshot({ path: join(DOCS, 'dashboard-dead-letters.png') });

    await page.goto(`${server.url}#/dead/${letter.offset}`);
    await page.locator('[data-testid=payload]').waitFor();
    assert.match((await page.locator('[data-testid=payload]').textContent()) ?? '', /"cu7"/);
    assert.match((await page.locator('[data-testid=letter]').textContent()) ?? '', /declined/);
    // The whole last error, stack frames included (the index keeps only its first line), and the headers.
    const stack = (await page.locator('[data-testid=error-stack]').textContent()) ?? '';
    assert.match(stack, /^TypeError: card of cu7 declined\n\s+at Charge\.handle /);
    const reason = page.locator('[data-testid=headers] tr', { hasText: 'warren-dead-reason' });
    assert.match((await reason.textContent()) ?? '', /warren-dead-reason/);
    assert.equal(await page.locator('[data-testid=headers] td', { hasText: /^warren-queue$/ }).count(), 1);
    await page.screenshot({ path: join(DOCS, 'dashboard-letter.png') });

    state.fixed = true;
    await page.locator('button[data-action=replay]').click();
    await page.locator('#flash.ok', { hasText: 'replayed 1 letter' }).waitFor();
    await waitFor(() => state.ran.find((r) => r.id === 'c1'), { what: 'the replayed job ran' });

    // Job lookup by id: the history tells the replayed job completed.
    await page.goto(`${server.url}#/job/${encodeURIComponent(jobId)}`);
    await waitFor(
      async () => {
        await page.reload();
        const shown = page.locator('[data-testid=job-state]');
        await shown.waitFor();
        return (await shown.textContent()) === 'completed' || undefined;
      },
      { what: 'the job page says completed', intervalMs: 200 },
    );
    await page.screenshot({ path: join(DOCS, 'dashboard-job.png') });
    assert.deepEqual(
      audit.filter((a) => a.action === 'replay').map((a) => [a.who, a.outcome]),
      [['tester-operator', 'done']],
    );
    await page.context().close();
  });

  it('pauses a queue from the page: jobs wait until it is resumed', async () => {
    const page = await open('operator');
    const row = page.locator('[data-testid=queues] tr[data-queue=billing]');
    await row.locator('button[data-action=pause]').click();
    await page.locator('#flash.ok', { hasText: 'paused billing: confirmed by 1' }).waitFor();
    await warren.publish('billing.charge', { id: 'p1', customer: { id: 'cu1' } });
    // A snapshot after the pause shows the job waiting: nobody consumed it.
    await page
      .locator('[data-testid=queues] tr[data-queue=billing][data-ready="1"][data-paused=true]')
      .waitFor({ timeout: 10_000 });
    assert.equal(
      state.ran.find((r) => r.id === 'p1'),
      undefined,
    );
    await page.screenshot({ path: join(DOCS, 'dashboard-paused.png') });
    await row.locator('button[data-action=resume]').click();
    await waitFor(() => state.ran.find((r) => r.id === 'p1'), { what: 'the job ran after resume' });
    await page.context().close();
  });

  it('refuses a viewer’s replay, in the page and at the API', async () => {
    state.fixed = false;
    const dead = await deadLetterOf(
      (await warren.publish('billing.charge', { id: 'v2', customer: { id: 'cu3' } })).jobId,
    );
    const page = await open('viewer');
    await page.goto(`${server.url}#/dead/${dead.offset}`);
    const replay = page.locator('button[data-action=replay]');
    await replay.waitFor();
    assert.equal(await replay.isDisabled(), true);
    const answer = await page.evaluate(async (offset) => {
      const session = (await (await fetch('api/session')).json()) as { csrf: string; csrfHeader: string };
      const response = await fetch('api/actions/replay', {
        method: 'POST',
        headers: { 'content-type': 'application/json', [session.csrfHeader]: session.csrf },
        body: JSON.stringify({ filter: { offsets: [offset] } }),
      });
      return { status: response.status, body: await response.json() };
    }, dead.offset);
    assert.equal(answer.status, 403);
    assert.match((answer.body as { error: string }).error, /needs the operator role/);
    assert.equal((await ops.dead.show(dead.offset))?.state, 'dead');
    assert.ok(audit.some((a) => a.who === 'tester-viewer' && a.outcome === 'refused'));
    await page.context().close();
  });

  it('purges a queue’s dead letters only with its name typed; the typing survives live updates', async () => {
    state.fixed = false;
    await deadLetterOf((await warren.publish('billing.charge', { id: 'z1', customer: { id: 'cu5' } })).jobId);
    const page = await open('admin');
    await page.goto(`${server.url}#/queue/billing`);
    const confirm = page.locator('[data-testid=purge-confirm]');
    await confirm.fill('bill');
    await page.locator('button[data-action=purge]').click();
    await page.locator('#flash.bad', { hasText: "type the queue's name (billing)" }).waitFor();
    await confirm.fill('billing');
    const before = await page.locator('[data-testid=as-of]').getAttribute('data-at');
    await page.locator(`[data-testid=as-of]:not([data-at="${before}"])`).waitFor({ timeout: 10_000 });
    assert.equal(await confirm.inputValue(), 'billing');
    // the whole page: the refusal above, the typed name below the queue's lists
    await page.screenshot({ path: join(DOCS, 'dashboard-queue.png'), fullPage: true });
    await page.locator('button[data-action=purge]').click();
    await page.locator('#flash.ok', { hasText: /purged [1-9]\d* dead letter/ }).waitFor();
    assert.equal(await ops.dead.count({ queue: 'billing', state: 'dead' }), 0);
    assert.deepEqual(
      audit.filter((a) => a.action === 'purge').map((a) => [a.who, a.outcome]),
      [
        ['tester-admin', 'refused'],
        ['tester-admin', 'done'],
      ],
    );
    await page.context().close();
  });
});
