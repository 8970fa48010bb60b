import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { slipActivities, slipTopology, StepOne, StepThree, StepTwo } from '../fixtures/slip-fault-jobs';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { ForkedWorkers, type ForkedWorker } from './forked-workers';
import { privateWarren, useSingleNode } from './private-warren';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 240_000;
const SLIPS = 1000;
/** Slip i fails for good at step 3 when i % 3 === 2: a third of them. */
const fails = (i: number) => i % 3 === 2;
/** Each kill hits the busiest worker running a step of this kind; 4 kills < the delivery limit of 10. */
const KILLS = ['activity', 'activity', 'compensation', 'compensation'] as const;

describe('routing slips with worker processes SIGKILLed mid-activity and mid-compensation', () => {
  let workers: ForkedWorkers | undefined;
  after(async () => {
    await workers?.killAll();
  });
  const node = useSingleNode();

  it('ends every slip completed or fully compensated: none stuck, none half-compensated, none parked', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('slip');
    const done = new Map<string, number>();
    const forked = new ForkedWorkers((event) => {
      if (event.event === 'done') done.set(event.id, (done.get(event.id) ?? 0) + 1);
    });
    workers = forked;
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: slipTopology,
      activities: slipActivities,
    });
    const spawn = () =>
      forked.fork({ urls: [node.url], namespace, concurrency: 10, script: 'slip-worker.js' });
    const pool: ForkedWorker[] = [spawn(), spawn(), spawn()];
    await waitFor(() => pool.every((w) => w.ready), { timeoutMs: 30_000, what: 'three workers ready' });

    const started = Date.now();
    const publishing = (async () => {
      for (let lane = 0; lane < 10; lane++) {
        const batch: Promise<unknown>[] = [];
        for (let i = lane; i < SLIPS; i += 10) {
          const data = { slipId: `s${i}`, fail: fails(i) };
          batch.push(
            publisher.slip().step(StepOne, data).step(StepTwo, data).step(StepThree, data).run({
              slipId: data.slipId,
            }),
          );
        }
        await Promise.all(batch);
      }
    })();

    const kills: { kind: string; orphans: string[] }[] = [];
    for (const kind of KILLS) {
      const mark = kind === 'activity' ? '/s' : '/u';
      // The step seen running may finish between the look and the signal: such a kill is kept (its
      // worker is gone all the same) and another one is aimed until one lands mid-step.
      for (;;) {
        const victim = await waitFor(
          () =>
            pool
              .filter((w) => w.alive && w.unfinished().some((id) => id.includes(mark)))
              .sort((a, b) => b.unfinished().length - a.unfinished().length)[0],
          { timeoutMs: 60_000, intervalMs: 5, what: `a worker running a ${kind}` },
        );
        victim.child.kill('SIGKILL');
        assert.equal((await victim.exited).signal, 'SIGKILL');
        const orphans = victim.unfinished();
        pool.push(spawn());
        const landed = orphans.some((id) => id.includes(mark));
        kills.push({ kind: landed ? kind : 'missed', orphans });
        if (landed) break;
      }
    }
    await publishing;

    const ended = (i: number) => done.has(`s${i}/${fails(i) ? 'compensated' : 'completed'}`);
    await waitFor(() => Array.from({ length: SLIPS }, (_, i) => i).every(ended), {
      timeoutMs: 120_000,
      intervalMs: 100,
      what: 'every slip to end',
    });
    const elapsedMs = Date.now() - started;

    let completed = 0;
    let compensated = 0;
    for (let i = 0; i < SLIPS; i++) {
      const id = `s${i}`;
      const has = (suffix: string) => done.has(`${id}/${suffix}`);
      assert.ok(!has('parked'), `${id} was parked`);
      assert.ok(has('s0') && has('s1'), `${id} ran steps 1 and 2`);
      if (fails(i)) {
        assert.ok(!has('completed') && !has('s2'), `${id} did not complete`);
        assert.ok(has('u1') && has('u0'), `${id} is fully compensated (both undos ran)`);
        compensated++;
      } else {
        assert.ok(has('s2') && !has('compensated'), `${id} completed`);
        assert.ok(!has('u0') && !has('u1'), `${id} was not compensated`);
        completed++;
      }
    }
    const parked = await publisher.deadLetters.count('slips');
    const duplicates = [...done.values()].filter((n) => n > 1).length;
    const orphans = kills.reduce((n, k) => n + k.orphans.length, 0);
    console.log(
      `slips under SIGKILL: ${completed} completed, ${compensated} compensated, ${parked} parked, ` +
        `0 stuck; ${kills.length} kills (${kills.map((k) => `${k.kind}: ${k.orphans.length}`).join(', ')}), ` +
        `${orphans} steps orphaned, ${duplicates} runs reported twice (at least once), ${elapsedMs} ms`,
    );
    assert.equal(completed, SLIPS - Math.floor(SLIPS / 3));
    assert.equal(compensated, Math.floor(SLIPS / 3));
    assert.equal(parked, 0);
    assert.ok(
      kills.filter((k) => k.kind === 'compensation').every((k) => k.orphans.some((id) => id.includes('/u'))),
    );
  });
});
