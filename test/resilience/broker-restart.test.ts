import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import { restartSingleNode } from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { privateWarren, useSingleNode } from './private-warren';
import { PublishLoad } from './publish-load';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

const PUBLISH_TIMEOUT_MS = 3_000;
const MAX_BUFFERED = 100;
const BURST = 150;

describe('a broker restart while publishing and consuming', () => {
  const node = useSingleNode();

  it('fails publishes with typed errors within their bound, resumes consumers by itself and loses no confirmed job', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('restart');
    const ledger = new FaultLedger('2. broker restart (stop + start)');
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
      publisher: { timeoutMs: PUBLISH_TIMEOUT_MS, maxBuffered: MAX_BUFFERED },
    });
    const worker = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      handlers: [new FaultWork((event) => event.event === 'done' && ledger.ran(event.id))],
    });
    await worker.start();
    const publish = (id: string) => publisher.publish(FaultWork, { id, ms: 5 }, { jobId: id });
    const load = new PublishLoad(ledger, publish, { lanes: 10, pauseMs: 50, prefix: 'restart' });
    load.start();
    await waitFor(() => ledger.confirmed >= 300, {
      timeoutMs: 30_000,
      what: '300 confirmed publishes before the restart',
    });

    const disconnected = nextEvent(publisher, 'disconnected', () => true, 60_000);
    const restarting = restartSingleNode();
    await disconnected;
    const downAt = Date.now();
    // While the broker is away, more publishes than the buffer holds: the surplus fails at once.
    const burst = Array.from({ length: BURST }, (_, i) => {
      const id = `burst-${i}`;
      return ledger.track(id, publish(id));
    });
    const burstFailedFast = await Promise.race([
      waitFor(() => (ledger.failedByCode.PUBLISH_BUFFER_FULL ?? 0) > 0, {
        timeoutMs: 1_000,
        what: 'PUBLISH_BUFFER_FULL',
      }).then(() => true),
      restarting.then(() => false),
    ]);
    assert.ok(burstFailedFast, 'publishes beyond the buffer fail at once with PUBLISH_BUFFER_FULL');
    await restarting;
    const upAt = Date.now();

    await waitFor(
      () => ledger.firstConfirmAfter(upAt) !== undefined && ledger.firstRunAfter(upAt) !== undefined,
      {
        timeoutMs: 60_000,
        what: 'a confirmed publish and a completed job after the restart',
      },
    );
    const recoveredAt = Math.max(ledger.firstConfirmAfter(upAt)!, ledger.firstRunAfter(upAt)!);
    await waitFor(() => worker.health().healthy && publisher.health().connected, {
      what: 'both instances healthy again',
    });
    const confirmedAfterRecovery = ledger.confirmed;
    await waitFor(() => ledger.confirmed >= confirmedAfterRecovery + 300, {
      timeoutMs: 30_000,
      what: '300 more confirmed publishes',
    });
    await load.stop();
    await Promise.all(burst);
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every confirmed job to run' });

    const failures = ledger.failedByCode;
    const row = ledger.report(
      recoveredAt - upAt,
      'node accepting AMQP again until the first confirmed publish and the first completed job',
      {
        outageMs: upAt - downAt,
      },
    );
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    const codes = Object.keys(failures).sort();
    assert.deepEqual(
      codes.filter((code) => code !== 'PUBLISH_BUFFER_FULL' && code !== 'PUBLISH_TIMEOUT'),
      [],
      'every failed publish failed with a typed, bounded error',
    );
    // A buffered publish fails once it waited its timeout: when the outage outlasts it (RabbitMQ 3.10
    // restarts in about 7 s); a 4.3 node is back within it (about 2.5 s) and the buffer drains instead.
    if (upAt - downAt > PUBLISH_TIMEOUT_MS + 1_000)
      assert.ok(
        codes.includes('PUBLISH_TIMEOUT'),
        `no publish timed out in an outage of ${upAt - downAt} ms`,
      );
    assert.ok(
      failures.PUBLISH_BUFFER_FULL! >= BURST - MAX_BUFFERED,
      'the buffer held at most maxBuffered publishes',
    );
  });
});
