import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChildWorkers } from '../fixtures/child-workers';
import { keyLimitFleet, startsOf } from '../fixtures/key-limit-ledger';
import type { KeyLimitWorkerMessage } from '../fixtures/key-limit-worker';
import { ROOT, runCli } from '../support/run-cli';
import { BROKER_URL, cleanup } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/** A project directory whose `warren.config.js` is the per-key limits fixture's application in `namespace`. */
function limitsConfigDir(namespace: string, partitions: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'warren-cli-'));
  const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'key-limit-worker.js');
  const settings = { partitions, concurrency: 4, perKey: 2, rateMax: 2, rateMs: 1000, heartbeatMs: 500 };
  writeFileSync(
    join(dir, 'warren.config.js'),
    `const { keyLimitJobs, keyLimitTopology } = require(${JSON.stringify(fixture)});\n` +
      `module.exports = { url: ${JSON.stringify(BROKER_URL)}, namespace: ${JSON.stringify(namespace)},\n` +
      `  topology: keyLimitTopology(${partitions}),\n` +
      `  handlers: [...keyLimitJobs(${JSON.stringify(settings)}, () => undefined)] };\n`,
  );
  return dir;
}

/**
 * `warren limits` (docs/guide/per-key-limits.md#changing-limits-at-run-time), the compiled command in a process
 * of its own against the real broker, beside 3 worker processes that own the keys: an override set with it is
 * listed by it and applied by the owners.
 */
describe('the warren limits command', () => {
  const workers = new ChildWorkers<KeyLimitWorkerMessage>('../fixtures/key-limit-worker');
  afterEach(async () => {
    await workers.killAll();
    await cleanup();
  });

  it("sets a key's override that every owner applies, lists it, gets it, and sets it back", async (t) => {
    const partitions = 4;
    const { namespace, events, publish } = await keyLimitFleet(workers, {
      partitions,
      rateMax: 2,
      rateMs: 1000,
      concurrency: 4,
    });
    const cwd = limitsConfigDir(namespace, partitions);
    const key = 'cli-raised';

    const none = await runCli(['limits'], { cwd });
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /no per-key limit overrides/);
    const bad = await runCli(['limits', 'set', 'limited.rated', key, '--max', 'lots'], { cwd });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--max must be an integer or 'planned'.*\[CLI_USAGE\]/);
    const zero = await runCli(['limits', 'set', 'limited.rated', key, '--max', '0'], { cwd });
    assert.notEqual(zero.code, 0);
    assert.match(zero.stderr, /LIMIT_INVALID/);

    // at the planned 2 per second first: 20 jobs of the key
    for (let seq = 0; seq < 20; seq++) await publish('limited.rated', { key, seq, ms: 0 });
    const starts = () => startsOf(events, key);
    await waitFor(() => starts().length >= 4, { timeoutMs: 30_000, what: 'two windows at the planned rate' });
    const mostIn = (from: number) => {
      const s = starts().filter((at) => at >= from);
      return Math.max(0, ...s.map((at) => s.filter((o) => o >= at && o < at + 1000).length));
    };
    assert.ok(mostIn(0) <= 3, `at most 2 (+1 for the stamps) a second at the planned rate (${mostIn(0)})`);

    const set = await runCli(['limits', 'set', 'limited.rated', key, '--max', '10'], { cwd });
    assert.equal(set.code, 0, set.stderr);
    const setAt = Date.now();
    assert.match(set.stdout, new RegExp(`limited\\.rated +${key} +planned +10 `));

    // listed (table and JSON) and got, from new processes reading the stream
    const list = await runCli(['limits'], { cwd });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /target +key +concurrency +max +set at/);
    assert.match(list.stdout, new RegExp(`limited\\.rated +${key} +planned +10 `));
    const json = await runCli(['limits', '--json'], { cwd });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { target: string; key: string; max?: number }[]).map((r) => [
        r.target,
        r.key,
        r.max,
      ]),
      [['limited.rated', key, 10]],
    );
    const get = await runCli(['limits', 'get', 'limited.rated', key], { cwd });
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, new RegExp(`limited\\.rated +${key} +planned +10 `));

    // applied: jobs published now start more than the planned 2 in a second
    for (let seq = 100; seq < 110; seq++) await publish('limited.rated', { key, seq, ms: 0 });
    await waitFor(() => mostIn(setAt) > 3, {
      timeoutMs: 10_000,
      what: () => `more than 2 (+1) starts a second after the raise (${mostIn(setAt)})`,
    });
    t.diagnostic(`most starts in a second after the raise: ${mostIn(setAt)}`);

    // back to the planned value: the record says so and get shows it
    const back = await runCli(['limits', 'set', 'limited.rated', key, '--max', 'planned'], { cwd });
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, new RegExp(`limited\\.rated +${key} +planned +planned `));
    const after = await runCli(['limits', 'get', 'limited.rated', key, '--json'], { cwd });
    assert.equal(after.code, 0, after.stderr);
    const record = JSON.parse(after.stdout) as { max?: number } | null;
    assert.equal(record?.max, undefined);
  });
});
