import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import { rabbitCtl } from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { privateWarren, useSingleNode } from './private-warren';
import { PublishLoad } from './publish-load';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 240_000;

/** A minute of drops, one every 5 s. */
const DROPPING_FOR_MS = 60_000;
const DROP_EVERY_MS = 5_000;

describe('connections dropped over and over (close_all_connections every few seconds)', () => {
  const node = useSingleNode();

  it('reconnects after every drop, keeps publishing and consuming, and loses no confirmed job', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('drops');
    const ledger = new FaultLedger('3. connections force-closed every 5 s for 60 s');
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
    });
    const worker = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      handlers: [new FaultWork((event) => event.event === 'done' && ledger.ran(event.id))],
    });
    await worker.start();
    const outages: number[] = [];
    for (const warren of [publisher, worker]) {
      let lostAt: number | undefined;
      warren.on('disconnected', () => (lostAt = Date.now()));
      warren.on('connected', () => {
        if (lostAt !== undefined) outages.push(Date.now() - lostAt);
        lostAt = undefined;
      });
    }
    const load = new PublishLoad(
      ledger,
      (id) => publisher.publish(FaultWork, { id, ms: 20 }, { jobId: id }),
      { lanes: 10, pauseMs: 200, prefix: 'drop' },
    );
    load.start();
    await waitFor(() => ledger.confirmed >= 100, {
      timeoutMs: 30_000,
      what: '100 confirmed publishes before the first drop',
    });

    const started = Date.now();
    let drops = 0;
    while (Date.now() - started < DROPPING_FOR_MS) {
      const tick = Date.now();
      const reconnects = outages.length;
      await rabbitCtl(node.name, 'close_all_connections', 'warren fault test: connection drop');
      drops += 1;
      await waitFor(() => outages.length >= reconnects + 2, {
        timeoutMs: 30_000,
        what: `both instances to reconnect after drop ${drops}`,
      });
      const confirmedBefore = ledger.confirmed;
      const ranBefore = Date.now();
      await waitFor(
        () => ledger.confirmed > confirmedBefore && ledger.firstRunAfter(ranBefore) !== undefined,
        { timeoutMs: 30_000, what: `publishing and consuming after drop ${drops}` },
      );
      const rest = DROP_EVERY_MS - (Date.now() - tick);
      // The fault schedule itself: one drop every DROP_EVERY_MS, not a wait for a condition.
      if (rest > 0) await passTime(rest);
    }
    await load.stop();
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every confirmed job to run' });
    assert.ok(worker.health().healthy, 'the worker consumes again');

    const row = ledger.report(
      Math.max(...outages),
      'longest gap between a forced close and the reconnected instance (publisher or worker)',
      {
        drops,
        reconnects: outages.length,
        medianReconnectMs: [...outages].sort((a, b) => a - b)[Math.floor(outages.length / 2)],
      },
    );
    assert.ok(drops >= 10, `dropped ${drops} times`);
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    assert.deepEqual(
      ledger.failedByCode,
      {},
      'a publish during a short drop waits in the buffer and is confirmed after the reconnect',
    );
  });
});
