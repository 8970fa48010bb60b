import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, IsolateError, type WarrenEvents } from '../../src';
import { isolatedJobsOf } from '../fixtures/isolate-jobs';
import { cleanup, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Isolates that end badly, mixed with good jobs (issue 34), for both kinds: loops past a 100 ms hard
 * timeout, leaks past the memory cap, isolates killed from outside mid-job (a child process SIGKILLed by
 * this test; a thread cannot be killed alone from outside, so its isolate dies of an error thrown outside
 * the handler). Every good job completes once, every bad one is dead-lettered with its reason, the
 * worker's RSS stays bounded, and nothing is left running or queued. It kills isolates, never a broker:
 * it runs on the shared test broker.
 */
const topology = defineTopology({ queues: { 'iso-thread': {}, 'iso-process': {} } });
const TEST_TIMEOUT_MS = 60_000;
const MIB = 1024 * 1024;

const GOOD = 60;
const LOOPS = 8;
const LEAKS = 4;
const VICTIMS = 4;

for (const kind of ['thread', 'process'] as const) {
  describe(`isolate faults: '${kind}'`, () => {
    after(cleanup);

    it('completes every good job once and dead-letters every bad one with its reason, RSS bounded, nothing stuck', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const jobs = isolatedJobsOf(kind);
      const warren = await testWarren({ topology, handlers: [jobs.good, jobs.loop, jobs.leak, jobs.victim] });
      await warren.start();
      const completed = new Map<string, number>();
      const dead = new Map<string, WarrenEvents['deadLettered'][0]>();
      warren.on('completed', (e) => completed.set(e.jobId, (completed.get(e.jobId) ?? 0) + 1));
      warren.on('deadLettered', (e) => dead.set(e.jobId, e));
      const killed = new Set<number>();
      warren.on('progress', (e) => {
        const pid = (e.progress as { pid?: number }).pid;
        if (pid === undefined || killed.has(pid)) return;
        killed.add(pid);
        process.kill(pid, 'SIGKILL'); // from outside, mid-job
      });
      const baseRss = process.memoryUsage.rss();
      let maxRss = baseRss;
      const sampler = setInterval(() => {
        maxRss = Math.max(maxRss, process.memoryUsage.rss());
      }, 20);
      sampler.unref();

      const expected = new Map<string, IsolateError['reason']>();
      const good: string[] = [];
      const publishes: Promise<unknown>[] = [];
      const bad = [
        ...Array.from({ length: LOOPS }, () => [jobs.loop, 'hard-timeout'] as const),
        ...Array.from({ length: LEAKS }, () => [jobs.leak, 'memory-limit'] as const),
        ...Array.from({ length: VICTIMS }, () => [jobs.victim, 'isolate-crashed'] as const),
      ];
      for (let i = 0; i < GOOD; i++) {
        const id = `good-${i}`;
        good.push(id);
        publishes.push(warren.publish(jobs.good, { id }, { jobId: id }));
        const next = bad[i % 3 === 0 ? i / 3 : bad.length];
        if (next === undefined) continue;
        const [job, reason] = next;
        const jobId = `bad-${i}`;
        expected.set(jobId, reason);
        publishes.push(warren.publish(job, {}, { jobId }));
      }
      try {
        await Promise.all(publishes);
        assert.equal(expected.size, LOOPS + LEAKS + VICTIMS);
        await waitFor(() => good.every((id) => completed.has(id)) && dead.size === expected.size, {
          timeoutMs: 45_000,
          what: () =>
            `${completed.size}/${GOOD} good completed, ${dead.size}/${expected.size} bad dead-lettered`,
        });
      } finally {
        clearInterval(sampler);
      }
      for (const id of good) assert.equal(completed.get(id), 1, `${id} completed once`);
      for (const [jobId, reason] of expected) {
        const letter = dead.get(jobId)!;
        assert.equal(letter.reason, 'attempts-exhausted', `${jobId}: its one attempt spent`);
        assert.ok(
          letter.error instanceof IsolateError,
          `${jobId}: an IsolateError, got ${String(letter.error)}`,
        );
        assert.equal(letter.error.reason, reason, `${jobId} ended with its reason`);
        assert.equal(completed.has(jobId), false, `${jobId} never completed`);
      }
      assert.ok(
        maxRss - baseRss < 400 * MIB,
        `the worker's RSS stayed bounded: +${Math.round((maxRss - baseRss) / MIB)} MiB`,
      );
      await waitFor(() => warren.health().consumers.every((c) => c.activeJobs === 0), {
        what: 'no delivery still in flight',
      });
      if (kind === 'process') assert.equal(killed.size, VICTIMS, 'each victim was killed from outside');
    });
  });
}
