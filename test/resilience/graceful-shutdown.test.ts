import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { ForkedWorkers } from './forked-workers';
import { privateWarren, useSingleNode } from './private-warren';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

const IN_FLIGHT = 100;
const JOBS = 200;
const GRACE_MS = 1_500;

/** 300-3000 ms of work: at the SIGTERM, some jobs finish within the grace period and some do not. */
function workMs(n: number): number {
  return 300 + ((n * 137) % 2_701);
}

describe('a worker process stopped with SIGTERM under load (closeOnSignals)', () => {
  let workers: ForkedWorkers | undefined;
  // registered first, so the worker processes die before the node's own cleanup runs
  after(async () => {
    await workers?.killAll();
  });
  const node = useSingleNode();

  it('finishes or returns every one of its 100 running jobs: none lost, none run twice', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('sigterm');
    const ledger = new FaultLedger('7. graceful shutdown (SIGTERM, 100 in flight)');
    const forked = new ForkedWorkers((event) => {
      if (event.event === 'done') ledger.ran(event.id);
    });
    workers = forked;
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
    });
    await Promise.all(
      Array.from({ length: JOBS }, (_, n) => {
        const id = `term-${n}`;
        return ledger.track(id, publisher.publish(FaultWork, { id, ms: workMs(n) }, { jobId: id }));
      }),
    );
    assert.equal(ledger.confirmed, JOBS);

    const stopping = forked.fork({ urls: [node.url], namespace, concurrency: IN_FLIGHT, graceMs: GRACE_MS });
    await waitFor(() => stopping.started.size >= IN_FLIGHT, {
      timeoutMs: 30_000,
      what: `${IN_FLIGHT} jobs running in the first worker`,
    });
    const inFlight = stopping.unfinished();
    assert.equal(inFlight.length, IN_FLIGHT);
    const signalledAt = Date.now();
    stopping.child.kill('SIGTERM');
    const { code, signal } = await stopping.exited;
    const stoppedAt = Date.now();
    assert.equal(signal, null);
    assert.equal(code, 0, 'the worker closed gracefully and exited 0');
    assert.ok(
      stoppedAt - signalledAt < GRACE_MS + 5_000,
      `the worker stopped within its grace period (${stoppedAt - signalledAt} ms)`,
    );
    const finishedInGrace = inFlight.filter((id) => stopping.done.has(id));
    const returned = inFlight.filter((id) => !stopping.done.has(id));
    assert.ok(
      finishedInGrace.length > 0 && returned.length > 0,
      `some jobs finished in the grace period (${finishedInGrace.length}), some were returned (${returned.length})`,
    );
    assert.equal(stopping.started.size, IN_FLIGHT, 'the stopping worker took no new job after the signal');

    const successor = forked.fork({ urls: [node.url], namespace, concurrency: 50 });
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every job to run' });
    for (const id of returned) assert.ok(successor.done.has(id), `returned job ${id} ran on the next worker`);
    const lastReturnedDone = Math.max(...returned.map((id) => successor.done.get(id)!));

    const row = ledger.report(
      lastReturnedDone - stoppedAt,
      'worker exit until the last returned job completed on the next worker',
      {
        inFlightAtSignal: inFlight.length,
        finishedInGrace: finishedInGrace.length,
        returnedToQueue: returned.length,
        shutdownMs: stoppedAt - signalledAt,
      },
    );
    assert.equal(row.lost, 0);
    assert.equal(row.duplicates, 0, 'a graceful shutdown runs nothing twice');
    assert.deepEqual(ledger.strangers(), []);
  });
});
