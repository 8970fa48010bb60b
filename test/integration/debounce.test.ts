import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, MemoryDedupStore, type WarrenEvents } from '../../src';
import { warrenMetrics } from '../../src/observability';
import { planOf } from '../../src/warren';
import { ChildWorkers } from '../fixtures/child-workers';
import {
  debounceTopology,
  reindexJob,
  type PublisherMessage,
  type ReindexData,
} from '../fixtures/debounce-jobs';
import { BROKER_URL, cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

/**
 * Debounce (`publish(job, data, { debounce })`, docs/guide/batch-and-debounce.md) on the broker under
 * test alone: one run with the last payload for a burst of publishes from 3 OS processes, `maxWaitMs`,
 * a worker restart, a cancel, a record forged by a foreign publisher, and the options it refuses.
 */
const KEY = 'debounce-test-signing-key-0123456789abcdef';
const runs: ReindexData[] = [];
const job = reindexJob((data) => runs.push(data));
const publishers = new ChildWorkers<PublisherMessage>('debounce-publisher');
const runsOf = (doc: string) => runs.filter((r) => r.doc === doc);

afterEach(async () => {
  await publishers.killAll();
  await cleanup();
  runs.length = 0;
});
after(() => publishers.killAll());

async function worker(namespace: string, extra: Parameters<typeof testWarren>[0] = {}) {
  const warren = await testWarren({ namespace, topology: debounceTopology, handlers: [job], ...extra });
  await warren.start();
  return warren;
}

/**
 * A later debounced job with a short period: every earlier copy of a longer-period key came due before it
 * (the delay levels hand copies out by due time), so a second run of that key would have come by then.
 */
async function afterEveryEarlierCopy(warren: Awaited<ReturnType<typeof worker>>): Promise<void> {
  await warren.publish(
    job,
    { doc: 'marker', seq: 1, from: 'test' },
    { debounce: { key: 'marker', periodMs: 300 } },
  );
  await waitFor(() => runsOf('marker').length === 1, { timeoutMs: 10_000, what: 'the marker to run' });
}

describe('debounce on the broker', () => {
  it('runs once, with the last payload, for a burst of updates from 3 processes', {
    timeout: 90_000,
  }, async () => {
    const namespace = testNamespace('debounce');
    const warren = await worker(namespace);
    const children = [1, 2, 3].map(() => publishers.fork([BROKER_URL, namespace, 'doc-1', '300', '2000']));
    await waitFor(() => children.every((c) => c.messages.some((m) => m.kind === 'ready')), {
      timeoutMs: 30_000,
      what: 'three publisher processes',
    });
    for (const c of children) c.child.send('go');
    await waitFor(() => children.every((c) => c.messages.some((m) => m.kind === 'published')), {
      timeoutMs: 60_000,
      what: () => `900 updates (${JSON.stringify(children.map((c) => c.messages.at(-1)))})`,
    });
    // the last publish of the burst, after every other one was confirmed
    await warren.publish(
      job,
      { doc: 'doc-1', seq: 0, from: 'final' },
      { debounce: { key: 'doc-1', periodMs: 2000 } },
    );
    await waitFor(() => runsOf('doc-1').length > 0, { timeoutMs: 15_000, what: 'the debounced run' });
    await afterEveryEarlierCopy(warren);
    assert.deepEqual(runsOf('doc-1'), [{ doc: 'doc-1', seq: 0, from: 'final' }]);
  });

  it('runs a steady stream once per maxWaitMs, each run with the latest payload', {
    timeout: 30_000,
  }, async () => {
    const warren = await worker(testNamespace('debounce-wait'));
    const debounce = { key: 'doc-2', periodMs: 400, maxWaitMs: 800 };
    const started = Date.now();
    let seq = 0;
    while (Date.now() - started < 3000) {
      await warren.publish(job, { doc: 'doc-2', seq: ++seq, from: 'test' }, { debounce });
      await passTime(10);
    }
    await waitFor(() => runsOf('doc-2').at(-1)?.seq === seq, {
      timeoutMs: 10_000,
      what: 'the last update to run',
    });
    await afterEveryEarlierCopy(warren);
    const seen = runsOf('doc-2').map((r) => r.seq);
    // 3 s of updates every ~10 ms: a run about every 800 ms, then the last one 400 ms after the stream ends
    assert.ok(seen.length >= 3 && seen.length <= 6, `runs at seq ${seen}`);
    assert.deepEqual(
      [...seen].sort((a, b) => a - b),
      seen,
      'each run is a later payload than the one before',
    );
  });

  it('keeps the debounce on the broker: a worker started after the burst runs the last payload once, and counts the copies it dropped', async () => {
    const namespace = testNamespace('debounce-restart');
    const publisher = await testWarren({ namespace, topology: debounceTopology, jobs: [job] });
    for (let seq = 1; seq <= 30; seq++)
      await publisher.publish(
        job,
        { doc: 'doc-3', seq, from: 'test' },
        { debounce: { key: 'doc-3', periodMs: 300 } },
      );
    await passTime(800); // every copy came due while no worker ran
    const metrics = warrenMetrics();
    const warren = await worker(namespace, { instrumentation: metrics });
    const causes: string[] = [];
    warren.on('discarded', (e) => causes.push(e.cause));
    await waitFor(() => runsOf('doc-3').length > 0, { timeoutMs: 10_000, what: 'the debounced run' });
    await afterEveryEarlierCopy(warren);
    assert.deepEqual(
      runsOf('doc-3').map((r) => r.seq),
      [30],
    );
    // the 29 superseded copies: each a `discarded` event, counted in the metrics by cause
    await waitFor(() => causes.length === 29, { what: () => `29 copies discarded (${causes.length})` });
    assert.ok(causes.every((c) => c === 'debounce'));
    assert.match(
      await metrics.metrics(),
      /warren_jobs_discarded_total\{job="doc.reindex",queue="index",cause="debounce"\} 29\b/,
    );
  });

  it('cancels a pending debounced run by its debounce id', async () => {
    const warren = await worker(testNamespace('debounce-cancel'));
    const discarded: string[] = [];
    warren.on('discarded', (e: WarrenEvents['discarded'][0]) => discarded.push(e.jobId));
    for (let seq = 1; seq <= 3; seq++)
      await warren.publish(
        job,
        { doc: 'doc-4', seq, from: 'test' },
        { debounce: { key: 'doc-4', periodMs: 400 } },
      );
    await warren.delayed.cancel('debounce:doc.reindex:doc-4');
    await afterEveryEarlierCopy(warren);
    await waitFor(() => discarded.length === 3, { what: 'the three copies discarded' });
    assert.deepEqual(runsOf('doc-4'), []);
  });

  it('with a signing key, a debounce record a foreign publisher appends neither suppresses nor replaces the last payload', async () => {
    const namespace = testNamespace('debounce-forged');
    const warren = await worker(namespace, { signingKey: KEY });
    await warren.publish(
      job,
      { doc: 'doc-5', seq: 1, from: 'test' },
      { debounce: { key: 'doc-5', periodMs: 600 } },
    );
    // a record naming a copy of its own, after warren's: without a key it would be the latest and win
    const now = Date.now();
    const forged = {
      j: 'debounce:doc.reindex:doc-5',
      a: 'debounce',
      t: now,
      u: now + 600,
      c: `${now}:forged`,
      f: now,
    };
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(planOf(warren).naming.jobControl(), Buffer.from(JSON.stringify(forged)));
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    await waitFor(() => runsOf('doc-5').length === 1, { timeoutMs: 10_000, what: 'the genuine run' });
    assert.deepEqual(runsOf('doc-5'), [{ doc: 'doc-5', seq: 1, from: 'test' }]);
    await waitFor(() => (warren.health().records.byRole['job-control']?.unsigned ?? 0) === 1, {
      what: 'the forged record skipped as unsigned',
    });
  });

  it('refuses debounce with a delay, deduplicate, controllable, publishMany or publishWithResult, and bad options', async () => {
    const warren = await testWarren({
      namespace: testNamespace('debounce-bad'),
      topology: debounceTopology,
      jobs: [job],
      deduplication: new MemoryDedupStore(),
    });
    const data = { doc: 'x', seq: 1, from: 'test' };
    const debounce = { key: 'x', periodMs: 100 };
    const refuses = async (call: Promise<unknown>, message: RegExp) =>
      assert.rejects(call, (e: unknown) => e instanceof ConfigurationError && message.test(e.message));
    await refuses(warren.publish(job, data, { debounce, delayMs: 50 }), /debounce sets the delay itself/);
    await refuses(
      warren.publish(job, data, { debounce, jobId: 'x', deduplicate: true }),
      /deduplicate keeps the first/,
    );
    await refuses(
      warren.publish(job, data, { debounce, jobId: 'x', controllable: true }),
      /debounce and controllable do not combine/,
    );
    await refuses(
      warren.publishMany([{ job, data, options: { debounce } }]),
      /debounce works with publish only/,
    );
    await refuses(warren.publishWithResult(job, data, { debounce }), /debounce work with publish only/);
    await refuses(
      warren.publish(job, data, { debounce: { key: '', periodMs: 100 } }),
      /debounce\.key must be a string/,
    );
    await refuses(
      warren.publish(job, data, { debounce: { key: 'x', periodMs: 0 } }),
      /debounce\.periodMs must be an integer/,
    );
    await refuses(
      warren.publish(job, data, { debounce: { key: 'x', periodMs: 500, maxWaitMs: 100 } }),
      /debounce\.maxWaitMs must be an integer from periodMs \(500\)/,
    );
    await refuses(
      warren.publish(job, data, { debounce: { key: 'x', periodMs: 100, wait: 1 } as never }),
      /unknown option 'wait'/,
    );
  });
});
