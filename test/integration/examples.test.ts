import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BROKER_URL } from '../support/test-broker';

const run = promisify(execFile);

function packageRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

/** The README's examples run as a user runs them, against the test broker, and exit 0. */
describe('the examples', () => {
  const cwd = packageRoot();
  const env = { ...process.env, AMQP_URL: BROKER_URL };

  it('runs the quickstart example: three emails sent, the failing report dead-lettered', async () => {
    const { stdout } = await run(process.execPath, ['dist/examples/signup/main.js'], {
      cwd,
      env,
      timeout: 60_000,
    });
    assert.match(stdout, /done: 3 emails sent, 1 job dead-lettered/);
  });

  it('runs the plain JavaScript quickstart (defineJob, no compiler) from the built package', async () => {
    const { stdout } = await run(process.execPath, ['examples/plain-js/main.mjs'], {
      cwd,
      env,
      timeout: 60_000,
    });
    assert.match(stdout, /retry: email\.welcome attempt 1 failed/);
    assert.match(stdout, /result: \{"sentTo":"grace@example\.com","attempt":2\}/);
    assert.match(stdout, /done: 2 emails sent from plain JavaScript/);
  });

  it('runs the outbox example: receipts for the committed orders only', async () => {
    const { stdout } = await run(process.execPath, ['dist/examples/outbox/main.js'], {
      cwd,
      env: {
        ...env,
        DATABASE_URL: process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      },
      timeout: 60_000,
    });
    assert.match(stdout, /done: 2 receipts sent for 2 orders, 1 rolled back/);
  });

  it('runs the checkout example: one order shipped, the other refunded and released in reverse', async () => {
    const { stdout } = await run(process.execPath, ['dist/examples/checkout/main.js'], {
      cwd,
      env,
      timeout: 60_000,
    });
    assert.match(stdout, /done: order-1 completed, order-2 compensated/);
    const lines = stdout.split('\n');
    const refunded = lines.findIndex((line) => line.includes('refunded ch-order-2'));
    const released = lines.findIndex((line) => line.includes('released res-order-2'));
    assert.ok(refunded > 0 && released > refunded, `refund before release:\n${stdout}`);
  });

  it('runs the progress example: a long job followed over server-sent events to its end', async () => {
    const { stdout } = await run(process.execPath, ['dist/examples/progress/main.js'], {
      cwd,
      env,
      timeout: 60_000,
    });
    const match =
      /done: (\d+) progress events, then completed \(data: \{"file":"\/exports\/.+\.csv"\}\)/.exec(stdout);
    assert.ok(match, stdout);
    assert.ok(Number(match[1]) >= 2, 'several coalesced progress events');
  });

  it('runs the thumbnails example: four PNG thumbnails rendered in worker threads', async () => {
    const { stdout } = await run(process.execPath, ['dist/examples/thumbnails/main.js'], {
      cwd,
      env,
      timeout: 60_000,
    });
    assert.match(stdout, /done: 4 thumbnails rendered in worker threads/);
    assert.equal(stdout.match(/wrote .+thumbnail-\d\.png \(160×120, \d+ bytes\)/g)?.length, 4, stdout);
  });

  it('runs the NestJS example and exits cleanly', async () => {
    await run(process.execPath, ['dist/examples/nest/main.js'], { cwd, env, timeout: 60_000 });
  });
});
