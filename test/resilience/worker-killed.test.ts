import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { ForkedWorkers, type ForkedWorker } from './forked-workers';
import { privateWarren, useSingleNode } from './private-warren';
import { PublishLoad } from './publish-load';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

const JOBS = 1000;

/** 100-300 ms of work, spread evenly and the same on every run. */
function workMs(id: string): number {
  let hash = 0;
  for (const char of id) hash = (hash * 31 + char.charCodeAt(0)) % 9973;
  return 100 + (hash % 201);
}

describe('a worker process killed mid-job (SIGKILL under load)', () => {
  let workers: ForkedWorkers | undefined;
  // registered first, so the worker processes die before the node's own cleanup runs
  after(async () => {
    await workers?.killAll();
  });
  const node = useSingleNode();

  it('redelivers every job a killed worker held to another worker, and every confirmed job completes', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('kill');
    const ledger = new FaultLedger('1. worker SIGKILL mid-job');
    const forked = new ForkedWorkers((event) => {
      if (event.event === 'done') ledger.ran(event.id);
    });
    workers = forked;
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
    });
    const spawnWorker = () => forked.fork({ urls: [node.url], namespace, concurrency: 10 });
    const pool: ForkedWorker[] = [spawnWorker(), spawnWorker(), spawnWorker()];
    await waitFor(() => pool.every((w) => w.ready), { timeoutMs: 30_000, what: 'three workers ready' });

    const load = new PublishLoad(
      ledger,
      (id) => publisher.publish(FaultWork, { id, ms: workMs(id) }, { jobId: id }),
      { lanes: 10, pauseMs: 0, prefix: 'kill', max: JOBS },
    );
    load.start();

    // Two kills, each of the busiest worker, with a replacement forked after the first.
    const kills: { victim: ForkedWorker; at: number; orphans: string[]; survivors: ForkedWorker[] }[] = [];
    for (const threshold of [200, 550]) {
      await waitFor(() => countDone(forked.all) >= threshold, {
        timeoutMs: 60_000,
        what: `${threshold} completed jobs`,
      });
      const victim = pool
        .filter((w) => w.alive)
        .sort((a, b) => b.unfinished().length - a.unfinished().length)[0]!;
      const at = Date.now();
      victim.child.kill('SIGKILL');
      const { signal } = await victim.exited;
      assert.equal(signal, 'SIGKILL');
      const orphans = victim.unfinished();
      assert.ok(orphans.length > 0, 'the killed worker was running jobs');
      kills.push({ victim, at, orphans, survivors: [] });
      if (kills.length === 1) {
        const replacement = spawnWorker();
        pool.push(replacement);
      }
    }
    for (const kill of kills) kill.survivors = forked.all.filter((w) => w !== kill.victim);

    await load.finished();
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 90_000, what: 'every confirmed job to run' });

    // Every job a killed worker held (started, never finished there) finished on another worker.
    let recoveryMs = 0;
    for (const kill of kills) {
      for (const id of kill.orphans) {
        const doneAt = kill.survivors
          .map((w) => w.done.get(id))
          .filter((t): t is number => t !== undefined && t >= kill.at);
        assert.ok(
          doneAt.length > 0,
          `job ${id}, orphaned by the kill of worker ${kill.victim.pid}, ran on another worker`,
        );
        recoveryMs = Math.max(recoveryMs, Math.min(...doneAt) - kill.at);
      }
    }
    const killedStarted = new Set(kills.flatMap((k) => [...k.victim.started]));
    const row = ledger.report(
      recoveryMs,
      'SIGKILL until the last job the dead worker held completed on another worker',
      {
        workers: forked.all.length,
        kills: kills.length,
        orphaned: kills.reduce((n, k) => n + k.orphans.length, 0),
      },
    );
    assert.equal(row.published, JOBS);
    assert.equal(row.confirmed, JOBS, 'nothing failed to publish: the broker stayed up');
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    // A duplicate is a job the dead worker finished but could not ack before it died.
    for (const id of ledger.duplicateIds())
      assert.ok(killedStarted.has(id), `duplicate ${id} was running on a killed worker`);
  });
});

function countDone(all: readonly ForkedWorker[]): number {
  return all.reduce((n, w) => n + w.done.size, 0);
}
