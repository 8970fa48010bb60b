import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import { cleanSingleNode, rabbitCtl, startSingleNode, type PrivateNode } from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { nextEvent, passTime, waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { closePrivateWarrens, privateWarren } from './private-warren';
import { PublishLoad } from './publish-load';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

/**
 * How long the alarm stays on once the publisher is blocked: the fault's duration, not a wait for a
 * condition.
 */
const ALARM_HOLD_MS = 4_000;
const LANES = 10;

describe('a memory alarm on the broker (set_vm_memory_high_watermark 0.0001)', () => {
  let node: PrivateNode;

  before(async () => {
    // A run killed before its after hook (a file timeout) may have left the node up, alarm and all.
    await cleanSingleNode();
    node = await startSingleNode();
  });

  after(async () => {
    await rabbitCtl(node.name, 'set_vm_memory_high_watermark', '0.4').catch(() => undefined);
    await closePrivateWarrens();
    await cleanSingleNode();
  });

  it('blocks publishers, who wait within their bound and resume when the alarm clears, losing nothing', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('alarm');
    const ledger = new FaultLedger('5. memory alarm (publishers blocked)');
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
      publisher: { timeoutMs: 30_000 },
    });
    const worker = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      handlers: [new FaultWork((event) => event.event === 'done' && ledger.ran(event.id))],
    });
    await worker.start();
    const events: string[] = [];
    let unblockedAt = 0;
    publisher.on('blocked', ({ reason }) => events.push(`blocked: ${reason}`));
    publisher.on('unblocked', () => {
      unblockedAt = Date.now();
      events.push('unblocked');
    });
    const publish = (id: string, timeoutMs?: number) =>
      publisher.publish(FaultWork, { id, ms: 5 }, { jobId: id, ...(timeoutMs ? { timeoutMs } : {}) });
    const load = new PublishLoad(ledger, (id) => publish(id), { lanes: LANES, pauseMs: 50, prefix: 'alarm' });
    load.start();
    await waitFor(() => ledger.confirmed >= 200, {
      timeoutMs: 30_000,
      what: '200 confirmed publishes before the alarm',
    });

    const blocked = nextEvent(publisher, 'blocked', () => true, 30_000);
    await rabbitCtl(node.name, 'set_vm_memory_high_watermark', '0.0001');
    await blocked;
    const blockedAt = Date.now();
    assert.equal(publisher.health().blocked, true);
    const confirmedAtBlock = ledger.confirmed;
    // A publish with a short bound fails with a typed timeout instead of waiting forever.
    const probe = ledger.track('probe', publish('probe', 1_000));
    // The fault lasts a set time; what matters is how little got through during it.
    await passTime(ALARM_HOLD_MS);
    const confirmedWhileBlocked = ledger.confirmed - confirmedAtBlock;
    assert.equal(await probe, false);
    assert.equal(ledger.failedByCode.PUBLISH_TIMEOUT, 1, 'the probe timed out while blocked');

    const unblocked = nextEvent(publisher, 'unblocked', () => true, 30_000);
    await rabbitCtl(node.name, 'set_vm_memory_high_watermark', '0.4');
    await unblocked;
    await waitFor(() => ledger.firstConfirmAfter(unblockedAt) !== undefined, {
      timeoutMs: 30_000,
      what: 'a confirm after the alarm cleared',
    });
    const recoveredAt = ledger.firstConfirmAfter(unblockedAt)!;
    const confirmedAtRestore = ledger.confirmed;
    await waitFor(() => ledger.confirmed >= confirmedAtRestore + 200, {
      timeoutMs: 30_000,
      what: '200 more confirmed publishes',
    });
    await load.stop();
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every confirmed job to run' });

    const row = ledger.report(
      recoveredAt - unblockedAt,
      "the broker's unblock until the first confirmed publish",
      {
        blockedForMs: unblockedAt - blockedAt,
        confirmedWhileBlocked,
        events,
      },
    );
    assert.deepEqual(events, ['blocked: low on memory', 'unblocked']);
    assert.ok(
      confirmedWhileBlocked <= LANES,
      `publishes wait while blocked (${confirmedWhileBlocked} confirmed after the block)`,
    );
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    assert.deepEqual(
      ledger.failedByCode,
      { PUBLISH_TIMEOUT: 1 },
      'the steady publishers waited within their 30 s bound; only the 1 s probe timed out',
    );
  });
});
