/**
 * The dashboard's graphs, in Chromium, against a known workload (600 jobs over 3 buckets of 3 s, a tenth
 * failing): the series uPlot drew, the data table beside it, pixels of the series' colour on the canvas,
 * in light and dark mode; and the endpoint's refusals.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { type Page } from 'playwright-core';
import { pixelsOf } from '../support/chart-pixels';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import {
  BUCKET_MS,
  GraphStep,
  HeldStep,
  type RanBucket,
  runWorkload,
  workloadTopology,
} from '../support/aggregate-workload';
import { cleanup, testNamespace, testProfile, testWarren } from '../support/test-broker';
import { ROOT } from '../support/run-cli';
import { waitFor } from '../support/wait-for';
import { launchChromium } from '../support/browser';

/** The docs' screenshots of the graphs: rewritten only with WARREN_UPDATE_SCREENSHOTS, as ui-dashboard's. */
const SHOTS = process.env.WARREN_UPDATE_SCREENSHOTS ? join(ROOT, 'docs') : undefined;

/** The arrays uPlot drew in a chart (x in seconds, then one array per line). */
function drawnSeries(page: Page, testid: string): Promise<(number | null)[][]> {
  return page.evaluate(`document.querySelector('[data-testid=${testid}]').chart.data`);
}

/**
 * The x-axis labels uPlot drew that overlap their neighbour on the same line, or start left of the canvas,
 * at several widths of the chart (each label measured in the axis's font); empty when none does.
 */
function axisOverlaps(page: Page, testid: string): Promise<string[]> {
  return page.evaluate(`(async () => {
    const plot = document.querySelector('[data-testid=${testid}]');
    const u = plot.chart;
    const ratio = window.devicePixelRatio || 1;
    const ctx = document.createElement('canvas').getContext('2d');
    const found = [];
    const width = u.width;
    const shown = { min: u.scales.x.min, max: u.scales.x.max };
    // ranges that start a few seconds before a minute (or an hour, or a day) begins: the first tick's label
    // then sits next to the one of the minute
    const minute = Math.ceil(shown.min / 60) * 60;
    const ranges = [180, 3600, 86400, 7 * 86400].flatMap((span) =>
      [-3, -8, -20, -45].map((before) => [minute + before * Math.max(1, span / 180), span]),
    );
    for (const [min, span] of ranges)
    for (const w of [320, 560, 1000]) {
      u.setScale('x', { min, max: min + span });
      u.setSize({ width: w, height: u.height });
      // uPlot redraws (and lays its axes out again) in a microtask after setSize
      await new Promise((resolve) => setTimeout(resolve, 0));
      const axis = u.axes[0];
      ctx.font = axis.font[0];
      const labels = axis._values.map((v, i) => ({
        lines: v === null || v === undefined ? [] : String(v).split('\\n'),
        x: u.valToPos(axis._splits[i], 'x') + u.bbox.left / ratio,
      }));
      const lineCount = Math.max(0, ...labels.map((l) => l.lines.length));
      for (let line = 0; line < lineCount; line++) {
        const row = labels
          .filter((l) => l.lines[line])
          .map((l) => ({ text: l.lines[line], x: l.x, half: ctx.measureText(l.lines[line]).width / ratio / 2 }))
          .sort((a, b) => a.x - b.x);
        const at = w + ' px, ' + span + ' s from ' + new Date(min * 1000).toISOString() + ': ';
        if (row.length && row[0].x - row[0].half < 0) found.push(at + row[0].text + ' runs off the canvas');
        for (let i = 1; i < row.length; i++)
          if (row[i - 1].x + row[i - 1].half + 2 > row[i].x - row[i].half)
            found.push(at + row[i - 1].text + ' overlaps ' + row[i].text);
      }
    }
    u.setScale('x', shown);
    u.setSize({ width, height: u.height });
    await new Promise((resolve) => setTimeout(resolve, 0));
    return found;
  })()`);
}

describe('dashboard graphs', () => {
  const namespace = testNamespace('uigraph');
  const config = {
    ...testProfile(namespace),
    topology: workloadTopology,
    jobs: [GraphStep, HeldStep],
    aggregates: { bucketMs: BUCKET_MS },
    history: { flushMs: 50 },
  };
  let warren: Warren<object>;
  let ops: WarrenOps;
  let server: DashboardServer;
  let ran: RanBucket[];
  const held = new HeldStep();

  before(async () => {
    warren = await testWarren({ ...config, handlers: [new GraphStep(), held] });
    await warren.start();
    ops = createOps({ ...config, replyTimeoutMs: 300 });
    server = await startDashboardServer({ ops, port: 0, authorize: () => ({ role: 'viewer', user: 'ada' }) });
    ran = await runWorkload(warren);
    // a deploy on the time axis, as a deploy script's `warren mark deploy` records it
    await ops.mark({ kind: 'deploy', release: '1.4.0', note: 'after the workload' });
    const last = ran[ran.length - 1]!;
    await waitFor(
      async () => {
        const view = await ops.aggregates('hour');
        const graphs = view.series.find((s) => s.queue === 'graphs');
        return graphs?.points.some(
          (p) => p.start === last.start && p.completed + p.failed === last.completed + last.failed,
        );
      },
      { what: 'the last bucket written', timeoutMs: 4 * BUCKET_MS, intervalMs: 200 },
    );
  });

  after(async () => {
    await server?.close();
    await ops?.close();
    await cleanup();
  });

  it('draws the workload: 180 completed and 20 failed in each of its 3 buckets, in light and dark mode', async () => {
    const browser = await launchChromium();
    try {
      for (const scheme of ['light', 'dark'] as const) {
        const page = await browser.newPage({ viewport: { width: 1200, height: 1400 }, colorScheme: scheme });
        await page.goto(`${server.url}#/graphs?range=hour&queue=graphs`);
        // The canvas, or what the page said instead (an error from the endpoint).
        await page
          .locator('[data-testid=chart-throughput] canvas, [data-testid=graphs] .tag.bad')
          .first()
          .waitFor();
        assert.equal(
          await page.locator('[data-testid=graphs] .tag.bad').count(),
          0,
          (await page.locator('main').textContent()) ?? '',
        );
        // Once the overview's snapshot is in (the next refresh, ≤ 5 s), the process starts are marked (the
        // deploy mark is listed at once, from the aggregates' view).
        await page
          .locator('[data-testid=table-marks] td', { hasText: /^process start$/ })
          .first()
          .waitFor({ state: 'attached', timeout: 10_000 });
        // The series as drawn: uPlot's own data arrays (x in seconds), the points with any run.
        const drawn = await drawnSeries(page, 'chart-throughput');
        const [xs, completed, failed, dead] = drawn as number[][];
        assert.equal(xs!.length, 60, 'an hour of 60 buckets');
        const busy = xs!.flatMap((x, i) =>
          completed![i]! + failed![i]! > 0
            ? [{ start: x * 1000, completed: completed![i], failed: failed![i], dead: dead![i] }]
            : [],
        );
        assert.deepEqual(
          busy,
          ran.map((r) => ({ start: r.start, completed: r.completed, failed: r.failed, dead: r.failed })),
        );
        // The worker's start is marked on the time axis.
        const marks = (await page.evaluate(
          `document.querySelector('[data-testid=chart-throughput]').marks`,
        )) as { label: string }[];
        assert.ok(
          marks.some((m) => /:\d+$/.test(m.label)),
          JSON.stringify(marks),
        );
        assert.ok(
          marks.some((m) => m.label === 'deploy 1.4.0 after the workload'),
          JSON.stringify(marks),
        );
        assert.match((await page.locator('[data-testid=graph-marks]').textContent()) ?? '', /process starts/);
        // The data table says the same, newest first.
        const rows = await page.locator('[data-testid=table-throughput] tbody tr').allTextContents();
        assert.equal(rows.length, 60);
        const expected = ran.map((r) => `${r.completed}${r.failed}${r.failed}`);
        assert.equal(
          rows.filter((row) => expected.some((e) => row.endsWith(e))).length,
          ran.length,
          `${expected.join(', ')} in ${rows.slice(0, 8).join(' | ')}`,
        );
        // The run-time chart drew p50 from the handler's 25 ms up (a loaded machine's event loop adds its lag).
        const run = (await drawnSeries(page, 'chart-run'))[1]!.filter((v) => v !== null);
        assert.equal(run.length, ran.length);
        for (const p50 of run) assert.ok(p50! >= 22 && p50! < 500, `run p50 ${p50}`);
        // The wait chart drew p50 <= p95 <= p99 in the buckets where jobs started (those of the workload).
        const [waitXs, w50, w95, w99] = await drawnSeries(page, 'chart-wait');
        const ranAt = new Set(ran.map((r) => r.start / 1000));
        const waited = w50!.flatMap((v, i) => (v === null ? [] : [[waitXs![i]!, v, w95![i]!, w99![i]!]]));
        assert.ok(waited.length >= 1 && waited.length <= ran.length, JSON.stringify(waited));
        for (const [x, a, b, c] of waited) {
          assert.ok(ranAt.has(x!), `wait drawn at ${x}, a bucket of the workload`);
          assert.ok(a! >= 0 && a! <= b! && b! <= c!, `wait ${a}/${b}/${c}`);
        }
        // Depth and the oldest waiting job at each bucket's close: none of the 200 waits once the last
        // batch settled (a batch may outlast its bucket on a loaded machine, so only the last is known).
        const [depthXs, depth, oldest] = await drawnSeries(page, 'chart-depth');
        assert.equal(depthXs!.length, 60);
        for (const d of depth!) assert.ok(d === null || (d >= 0 && d <= 200), `depth ${d}`);
        const lastAt = depthXs!.indexOf(ran[ran.length - 1]!.start / 1000);
        assert.deepEqual([depth![lastAt], oldest![lastAt]], [0, 0]);
        assert.equal(await page.locator('[data-testid=table-depth] tbody tr').count(), 60);
        // The time axis's labels: none overlaps the next one or runs off the canvas, at any width.
        assert.deepEqual(await axisOverlaps(page, 'chart-throughput'), [], `${scheme} time axis`);
        // Not an empty plot: the completed line's colour is on the canvas.
        const pixels = await pixelsOf(page, 'chart-throughput', '--ok');
        assert.ok(pixels > 100, `${pixels} pixels of the completed line (${scheme})`);
        assert.match(
          (await page.locator('[data-testid=graphs-source]').textContent()) ?? '',
          /aggregates streams .*records read/,
        );
        if (SHOTS) {
          await page.locator('#live.on').waitFor();
          mkdirSync(SHOTS, { recursive: true });
          await page.screenshot({ path: join(SHOTS, `dashboard-graphs-${scheme}.png`) });
        }
        await page.close();
      }
    } finally {
      await browser.close();
    }
  });

  it('lists a running job on the overview with its progress reaching 100, linking to its live page', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(server.url);
      await page.locator('[data-testid=running-source]').waitFor();
      const { jobId } = await warren.publish('graphs.held', {});
      const row = page.locator(`[data-testid=running] tr[data-job="${jobId}"]`);
      await row.locator('[data-testid=running-progress]', { hasText: /^100$/ }).waitFor({ timeout: 15_000 });
      assert.match((await row.textContent()) ?? '', /graphs\.held.*graphs/);
      // its age: whole seconds since it started, as of the snapshot
      assert.match((await row.locator('[data-testid=running-age]').textContent()) ?? '', /^\d+ s$/);
      assert.match(
        (await page.locator('[data-testid=running-source]').textContent()) ?? '',
        /1 of 1 list their running jobs/,
      );
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'dashboard-running.png'), fullPage: true });
      assert.equal(await row.locator(`a[href="#/job/${jobId}"]`).count(), 1);
      // Its live page: the outcome arrives once the job is let go.
      const subscribed = page.waitForResponse((r) => r.url().endsWith(`api/jobs/${jobId}/events`));
      await page.locator(`a[href="#/job/${jobId}"]`).click();
      await subscribed;
      for (const release of held.releases.splice(0)) release();
      await page
        .locator('[data-testid=job-live-state]', { hasText: 'completed' })
        .waitFor({ timeout: 10_000 });
      await page.goto(server.url);
      await page.locator('[data-testid=running-source]').waitFor();
      await waitFor(
        async () =>
          (await page.locator(`[data-testid=running] tr[data-job="${jobId}"]`).count()) === 0 || undefined,
        {
          what: 'the job gone from the running list',
        },
      );
    } finally {
      for (const release of held.releases.splice(0)) release();
      await browser.close();
    }
  });

  it("lists a queue's delayed jobs due next and its newest completed and failed jobs, each linking to its page", async () => {
    // known to warren: a controllable delayed job (its copy is on the job-control stream); a plain one is not
    await warren.publish(
      'graphs.step',
      { i: 1 },
      { jobId: 'due-in-2h', delayMs: 7_200_000, controllable: true },
    );
    await warren.publish(
      'graphs.step',
      { i: 3 },
      { jobId: 'due-in-1h', delayMs: 3_600_000, controllable: true },
    );
    await warren.publish('graphs.step', { i: 5 }, { jobId: 'plain-in-1h', delayMs: 3_600_000 });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${server.url}#/queue/graphs`);
      await page.locator('[data-testid=delayed-source]').waitFor({ timeout: 15_000 });
      const due = page.locator('[data-testid=delayed-due] tbody tr');
      assert.deepEqual(await Promise.all((await due.all()).map((row) => row.getAttribute('data-job'))), [
        'due-in-1h',
        'due-in-2h',
      ]);
      assert.match((await due.first().textContent()) ?? '', /due-in-1h.*graphs\.step/);
      assert.equal(await due.first().locator('a[href="#/job/due-in-1h"]').count(), 1);
      assert.match(
        (await page.locator('[data-testid=delayed-source]').textContent()) ?? '',
        /controllable: true.*cannot be listed without consuming them/,
      );
      await page.locator('[data-testid=recent-source]').waitFor({ timeout: 15_000 });
      const completed = page.locator('[data-testid=recent-completed] tbody tr');
      const failed = page.locator('[data-testid=recent-failed] tbody tr');
      assert.equal(await completed.count(), 20);
      assert.equal(await failed.count(), 20);
      assert.match(
        (await failed.first().textContent()) ?? '',
        /graphs\.step.*dead.*step \d+0 fails, as every tenth does/,
      );
      assert.match((await completed.first().textContent()) ?? '', /graphs\.(step|held)/);
      // a completed step's payload (its body, as published) and result (what its handler returned), as text
      const step = completed.filter({ hasText: 'graphs.step' }).first();
      const payload = (await step.locator('[data-testid=recent-payload]').textContent()) ?? '';
      assert.match(payload, /^\{"i":\d+\}$/);
      const i = (JSON.parse(payload) as { i: number }).i;
      const completedId = await step.getAttribute('data-job');
      assert.equal(await step.locator('[data-testid=recent-result]').textContent(), `{"step":${i}}`);
      assert.equal(
        await failed.first().locator('[data-testid=recent-payload]').textContent(),
        `{"i":${/step (\d+) fails/.exec((await failed.first().textContent()) ?? '')?.[1]}}`,
      );
      // each failed job's attempt and run time (the handler's 25 ms, and the loaded machine's lag)
      for (const row of await failed.all()) {
        const [, , , attempt, runMs] = await row.locator('td').allTextContents();
        assert.equal(attempt, '1');
        assert.ok(Number(runMs) >= 20 && Number(runMs) < 5_000, `run ms ${runMs}`);
      }
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'dashboard-queue-jobs.png'), fullPage: true });
      const id = await failed.first().getAttribute('data-job');
      await failed.first().locator('a').click();
      await page.locator('[data-testid=job-state]', { hasText: 'dead' }).waitFor();
      assert.match(page.url(), new RegExp(`#/job/${id}$`));
      assert.match((await page.locator('[data-testid=job-payload]').textContent()) ?? '', /^\{"i":\d+0\}$/);
      assert.equal(await page.locator('[data-testid=job-result]').count(), 0);
      // a completed job's page: its payload and its result
      await page.goto(`${server.url}#/job/${encodeURIComponent(completedId!)}`);
      await page.locator('[data-testid=job-state]', { hasText: 'completed' }).waitFor();
      assert.equal(await page.locator('[data-testid=job-payload]').textContent(), payload);
      assert.equal(await page.locator('[data-testid=job-result]').textContent(), `{"step":${i}}`);
    } finally {
      await browser.close();
    }
  });

  it('serves the chart library from the package and refuses a bad range or a rebound Host', async () => {
    const library = await fetch(`${server.url}vendor/uplot.js`);
    assert.equal(library.status, 200);
    assert.match(library.headers.get('content-type') ?? '', /text\/javascript/);
    assert.match(await library.text(), /uPlot/);
    const bad = await fetch(`${server.url}api/aggregates?range=<script>`);
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get('content-type') ?? '', /application\/json/);
    assert.match(((await bad.json()) as { error: string }).error, /range must be one of hour, day, week/);
    const week = await fetch(`${server.url}api/aggregates?range=week`);
    assert.equal(week.status, 200);
    const view = (await week.json()) as { level: string; series: { queue: string; points: unknown[] }[] };
    assert.equal(view.level, 'hour');
    assert.equal(view.series[0]!.points.length, 168);
    const port = new URL(server.url).port;
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/api/aggregates?range=hour', headers: { host: 'evil.example' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 421);
  });
});
