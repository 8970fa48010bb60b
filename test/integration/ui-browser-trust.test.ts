/**
 * What the dashboard shows, and to whom, in a real browser (Debian's chromium through playwright-core)
 * against the real broker: a page on another name whose DNS rebinds to the dashboard gets nothing; the
 * page says so when every loopback client is an operator; a foreign job's control characters show as
 * escapes; a management password never reaches the page.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createOps, type WarrenOps } from '../../src/ops';
import { createNaming } from '../../src/topology';
import type { DashboardServerOptions } from '../../src/ui';
import { deadLogOptions } from '../fixtures/dead-log-jobs';
import { type DashboardApp, startDashboardApp } from '../support/dashboard-app';
import { rawConnection, testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { CHROMIUM } from '../support/browser';

const SHOTS = mkdtempSync(join(tmpdir(), 'warren-ui-trust-'));
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
/** A job name as hostile as AMQP's `type` allows: retitles an xterm, moves the cursor, reverses text. */
const HOSTILE_NAME = 'billing.\u001b]0;pwned\u0007\u001b[2Kfake\u202eexe.txt\u009b1m';

describe('what the dashboard shows, in a browser', () => {
  const namespace = testNamespace('uibt');
  let app: DashboardApp;
  let ops: WarrenOps;
  let browser: Browser;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: apt-get install -y chromium`);
    app = await startDashboardApp(namespace);
    ops = app.ops;
    // evil.test resolves to the dashboard's address, as a rebinding DNS server would make it.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--host-resolver-rules=MAP evil.test 127.0.0.1'],
    });
  });

  after(async () => {
    await browser?.close();
    await app?.close();
  });

  const serve = (options: Partial<DashboardServerOptions> = {}) => app.serve(options);

  async function open(_url: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 700 } });
    return context.newPage();
  }

  it('gives a page on a rebound name no session, no token and no data; the real name gets them', async () => {
    const server = await serve({ loopbackRole: 'operator' });
    const port = new URL(server.url).port;
    const page = await open(server.url);
    const refused = await page.goto(`http://evil.test:${port}/`);
    assert.equal(refused?.status(), 421);
    assert.match((await page.textContent('body')) ?? '', /does not answer to Host/);
    // The rebinding page's own script, same-origin with the dashboard now, asks for a token and acts.
    const tried = await page.evaluate(async () => {
      const session = await fetch('/api/session');
      const pause = await fetch('/api/actions/pause', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queue: 'billing' }),
      });
      return {
        session: session.status,
        body: await session.text(),
        pause: pause.status,
      };
    });
    assert.equal(tried.session, 421);
    assert.doesNotMatch(tried.body, /csrf/);
    assert.equal(tried.pause, 421);
    assert.equal((await ops.queues()).find((q) => q.key === 'billing')?.paused, false);
    await page.screenshot({ path: join(SHOTS, 'rebound-host.png') });

    await page.goto(`http://127.0.0.1:${port}/`);
    await page.locator('#live.on').waitFor({ timeout: 15_000 });
    assert.match((await page.textContent('#who')) ?? '', /^operator/);
    await page.context().close();
  });

  it('says on every view that every loopback client is an operator, and says nothing to a plain viewer', async () => {
    const operator = await serve({ loopbackRole: 'operator' });
    const page = await open(operator.url);
    await page.goto(operator.url);
    await page.locator('#live.on').waitFor({ timeout: 15_000 });
    const notice = page.locator('[data-testid=notice]');
    for (const view of ['#/', '#/dead', '#/job', '#/queue/billing']) {
      await page.goto(`${operator.url}${view}`);
      assert.equal(await notice.isVisible(), true, view);
      assert.match(
        (await notice.textContent()) ?? '',
        /Every loopback client is an operator here: anyone with an account on this machine, and any process on it, can replay, pause, resume/,
      );
    }
    await page.goto(operator.url);
    await page.locator('[data-testid=queues] tr[data-queue=billing]').waitFor();
    await page.screenshot({ path: join(SHOTS, 'loopback-operator.png') });
    await page.context().close();

    const viewer = await serve();
    const plain = await open(viewer.url);
    await plain.goto(viewer.url);
    await plain.locator('#live.on').waitFor({ timeout: 15_000 });
    assert.equal(await plain.locator('[data-testid=notice]').isVisible(), false);
    await plain.context().close();
  });

  it('shows the control characters of a foreign job’s name as escapes, in the list and on its page', async () => {
    const server = await serve();
    const raw = await rawConnection();
    const channel = await raw.createConfirmChannel();
    channel.sendToQueue(createNaming(namespace).queue('billing'), Buffer.from('{"note":"\\u001b[31mred"}'), {
      contentType: 'application/json',
      type: HOSTILE_NAME,
      messageId: 'hostile-1',
    });
    await channel.waitForConfirms();
    await raw.close();
    const letter = await waitFor(async () => (await ops.dead.search({ jobId: 'hostile-1' }))[0], {
      what: 'the foreign job’s dead letter',
      intervalMs: 100,
    });
    assert.equal(letter.name, HOSTILE_NAME, 'the log keeps the name as it came');
    const page = await open(server.url);
    await page.goto(`${server.url}#/dead?jobId=hostile-1`);
    const row = page.locator(`[data-testid=dead-letters] tr[data-offset="${letter.offset}"]`);
    await row.waitFor({ timeout: 15_000 });
    const shown = (await row.textContent()) ?? '';
    assert.match(shown, /billing\.\\u001b\]0;pwned\\u0007\\u001b\[2Kfake\\u202eexe\.txt\\u009b1m/);
    assert.doesNotMatch(shown, RAW_CONTROL);
    await page.goto(`${server.url}#/dead/${letter.offset}`);
    const facts = page.locator('[data-testid=letter]');
    await facts.waitFor();
    assert.match((await facts.textContent()) ?? '', /\\u202eexe\.txt/);
    assert.doesNotMatch((await facts.textContent()) ?? '', RAW_CONTROL);
    await page.screenshot({ path: join(SHOTS, 'hostile-name.png') });
    await page.context().close();
  });

  it('shows why the management API failed without its password; the page works without it', async () => {
    const badOps = createOps({
      ...deadLogOptions(namespace),
      replyTimeoutMs: 300,
      management: { url: 'http://warren-ops:S3cretPw@127.0.0.1:1' },
    });
    try {
      const server = await serve({ ops: badOps });
      const page = await open(server.url);
      await page.goto(server.url);
      await page.locator('#live.on').waitFor({ timeout: 15_000 });
      const errors = page.locator('main p.tag.bad').first();
      await errors.waitFor();
      const text = (await errors.textContent()) ?? '';
      assert.match(text, /cannot reach the management API at http:\/\/127\.0\.0\.1:1/);
      assert.doesNotMatch(await page.content(), /S3cretPw/);
      await page.screenshot({ path: join(SHOTS, 'management-error.png') });
      await page.context().close();
    } finally {
      await badOps.close();
    }
  });
});
