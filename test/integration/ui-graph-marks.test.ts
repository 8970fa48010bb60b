/**
 * Marks on the graphs' time axis, in Chromium: a deploy marked through ops and one through the CLI, a
 * pause and a resume through ops, drawn as lines on the charts and listed in the marks table; records
 * published by hand to the marks stream without a valid proof (a signing key is set) are skipped, counted,
 * and not shown.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pixelsOf } from '../support/chart-pixels';
import type * as amqp from 'amqplib';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import {
  BROKER_URL,
  cleanup,
  rawConnection,
  testNamespace,
  testProfile,
  testWarren,
} from '../support/test-broker';
import { runCli } from '../support/run-cli';
import { launchChromium } from '../support/browser';

const KEY = 'graph-marks-signing-key-0123456789abcdef';

interface DrawnMark {
  readonly kind: string;
  readonly label: string;
}

describe('dashboard graph marks', () => {
  const namespace = testNamespace('uimark');
  const topology = { queues: { graphs: {} } };
  const config = {
    ...testProfile(namespace),
    topology,
    aggregates: { bucketMs: 3000 },
    signingKey: KEY,
  };
  let warren: Warren<object>;
  let ops: WarrenOps;
  let server: DashboardServer;
  let connection: amqp.ChannelModel;

  before(async () => {
    warren = await testWarren(config);
    await warren.start();
    ops = createOps({ ...config, replyTimeoutMs: 300 });
    server = await startDashboardServer({ ops, port: 0, authorize: () => ({ role: 'viewer', user: 'ada' }) });
    connection = await rawConnection();
  });

  after(async () => {
    await server?.close();
    await ops?.close();
    await connection?.close().catch(() => undefined);
    await cleanup();
  });

  it('refuses a mark it cannot record, with a typed error', async () => {
    await assert.rejects(ops.mark({ kind: 'pause' } as never), {
      code: 'MARK_INVALID',
      message: /kind must be 'deploy'/,
    });
    await assert.rejects(ops.mark({ kind: 'deploy', note: 'x'.repeat(201) }), {
      code: 'MARK_INVALID',
      message: /note must be a non-empty string of at most 200/,
    });
    await assert.rejects(ops.mark({ kind: 'deploy', colour: 'red' } as never), { code: 'MARK_INVALID' });
  });

  it('draws deploys (ops and CLI), a pause and a resume, and hides forged marks', async () => {
    const made = await ops.mark({ kind: 'deploy', note: 'ops deploy', release: '1.2.3' });
    assert.equal(made.kind, 'deploy');
    await ops.pause('graphs');
    await ops.resume('graphs');
    const cwd = mkdtempSync(join(tmpdir(), 'warren-marks-'));
    writeFileSync(
      join(cwd, 'warren.config.js'),
      `module.exports = ${JSON.stringify({ url: BROKER_URL, namespace, topology, signingKey: KEY, aggregates: { bucketMs: 3000 } })};\n`,
    );
    const cli = await runCli(['mark', 'deploy', '--note', 'cli deploy', '--release', '2.0.0', '--json'], {
      cwd,
    });
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(JSON.parse(cli.stdout).release, '2.0.0');
    // Forged: no proof, a made-up proof, and a record that is not a mark at all.
    const channel = await connection.createConfirmChannel();
    const stream = ops.plan.naming.marks();
    const forged = (note: string) =>
      Buffer.from(JSON.stringify({ v: 1, k: 'deploy', t: Date.now(), h: 'evil', n: note }));
    channel.sendToQueue(stream, forged('forged unsigned'));
    channel.sendToQueue(stream, forged('forged proof'), {
      headers: { 'warren-proof': '1.deadbeef.0123456789abcdef.1.AAAA' },
    });
    await channel.waitForConfirms();
    await channel.close();

    const view = await ops.aggregates('hour');
    assert.deepEqual(
      view.marks.map((m) => [m.kind, m.queue ?? m.release, m.note ?? '']),
      [
        ['deploy', '1.2.3', 'ops deploy'],
        ['pause', 'graphs', ''],
        ['resume', 'graphs', ''],
        ['deploy', '2.0.0', 'cli deploy'],
      ],
    );
    assert.equal(view.marksSkipped, 2);
    assert.equal(ops.skippedRecords().byRole.marks?.unsigned, 1);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
      await page.goto(`${server.url}#/graphs?range=hour&queue=graphs`);
      await page.locator('[data-testid=chart-throughput] canvas').waitFor();
      const drawn = (await page.evaluate(
        `document.querySelector('[data-testid=chart-throughput]').marks`,
      )) as DrawnMark[];
      const recorded = drawn.filter((m) => m.kind !== 'start').map((m) => `${m.kind}: ${m.label}`);
      assert.deepEqual(recorded, [
        'deploy: deploy 1.2.3 ops deploy',
        'pause: pause graphs',
        'resume: resume graphs',
        'deploy: deploy 2.0.0 cli deploy',
      ]);
      const rows = await page.locator('[data-testid=table-marks] tbody tr').allTextContents();
      for (const text of [
        'deploy 1.2.3 ops deploy',
        'deploy 2.0.0 cli deploy',
        'pause graphs',
        'resume graphs',
      ])
        assert.ok(
          rows.some((r) => r.includes(text)),
          `${text} in ${rows.join(' | ')}`,
        );
      assert.ok(!rows.some((r) => /forged/.test(r)), rows.join(' | '));
      assert.match(
        (await page.locator('[data-testid=graph-marks] summary').textContent()) ?? '',
        /2 mark record\(s\) skipped/,
      );
      // The deploy lines are on the canvas, in the accent colour (no series of this chart uses it).
      const pixels = await pixelsOf(page, 'chart-throughput', '--accent');
      assert.ok(pixels > 100, `${pixels} pixels of the deploy lines`);
    } finally {
      await browser.close();
    }
  });
});
