import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import {
  branch,
  defineTopology,
  Job,
  MemoryJoinStore,
  PostgresJoinStore,
  UnrecoverableError,
  type JobContext,
  type JoinStore,
  type SlipActivity,
  type SlipLogEntry,
} from '../../src';
import { cleanup, testWarren } from '../support/test-broker';
import { nextEvent, passTime } from '../support/wait-for';

const PG_URL = process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const topology = defineTopology({ queues: { fan: {} } });
const fast = { type: 'fixed', delayMs: 100 } as const;
type Run = { id: string; fail?: string[] };

let journal: string[] = [];

function activity(name: string, workMs: number) {
  @Job(name, { queue: 'fan', attempts: 2, backoff: fast })
  class Activity implements SlipActivity<Run> {
    async handle(data: Run) {
      // Simulated work: the slow branch finishes after its sibling, so the fan-in waits for it.
      await passTime(workMs);
      if (data.fail?.includes(name)) {
        journal.push(`fail:${name}`);
        throw new UnrecoverableError(`${name} refused`);
      }
      journal.push(`run:${name}`);
      return { by: name };
    }
    async compensate(log: SlipLogEntry, ctx: JobContext) {
      assert.equal((log.result as { by: string }).by, name, 'the entry of its own branch');
      journal.push(`undo:${name}:${ctx.jobId}`);
    }
  }
  return Activity;
}

const First = activity('fan.first', 0);
const Quick = activity('fan.quick', 0);
const Slow = activity('fan.slow', 150);
const Last = activity('fan.last', 0);
const activities = [First, Quick, Slow, Last];

for (const backend of ['memory', 'postgres'] as const) {
  describe(`a slip's parallel step (fan-in counted in the ${backend} join store)`, () => {
    let pool: Pool | undefined;
    const table = `warren_joins_t_${randomBytes(4).toString('hex')}`;
    before(() => {
      if (backend === 'postgres') pool = new Pool({ connectionString: PG_URL, max: 5 });
    });
    afterEach(async () => {
      journal = [];
      await cleanup();
    });
    after(async () => {
      await pool?.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool?.end();
    });
    const joins = (): JoinStore =>
      backend === 'memory' ? new MemoryJoinStore() : new PostgresJoinStore({ pool: pool!, tableName: table });

    async function start() {
      const warren = await testWarren({
        topology,
        activities,
        joins: joins(),
        handlers: [new First(), new Quick(), new Slow(), new Last()],
      });
      await warren.start();
      const slip = (data: Run) =>
        warren
          .slip()
          .step(First, data)
          .parallel(branch(Quick, data), branch(Slow, data))
          .step(Last, data)
          .run({ slipId: data.id });
      return { warren, slip };
    }

    it('runs every branch and goes on once, after the last of them', async () => {
      const { warren, slip } = await start();
      const completed = nextEvent(warren, 'slipCompleted');
      await slip({ id: 'ok' });
      await completed;
      assert.deepEqual(journal, ['run:fan.first', 'run:fan.quick', 'run:fan.slow', 'run:fan.last']);
    });

    it('undoes the completed branch, then the step before, when a branch fails for good', async () => {
      const { warren, slip } = await start();
      const compensated = nextEvent(warren, 'slipCompensated');
      await slip({ id: 'bad', fail: ['fan.slow'] });
      await compensated;
      assert.deepEqual(journal, [
        'run:fan.first',
        'run:fan.quick',
        'fail:fan.slow',
        'undo:fan.quick:bad.1.undo.0',
        'undo:fan.first:bad.0.undo',
      ]);
      assert.equal(await warren.deadLetters.count('fan'), 0);
    });

    it('undoes every branch of a completed parallel step before the step before it', async () => {
      const { warren, slip } = await start();
      const compensated = nextEvent(warren, 'slipCompensated');
      await slip({ id: 'late', fail: ['fan.last'] });
      await compensated;
      assert.deepEqual(journal.slice(0, 4), [
        'run:fan.first',
        'run:fan.quick',
        'run:fan.slow',
        'fail:fan.last',
      ]);
      assert.deepEqual(
        new Set(journal.slice(4, 6)),
        new Set(['undo:fan.quick:late.1.undo.0', 'undo:fan.slow:late.1.undo.1']),
      );
      assert.deepEqual(journal.slice(6), ['undo:fan.first:late.0.undo']);
    });

    it('counts a branch reported twice (a redelivery) once', async () => {
      const store = joins();
      await store.prepare?.();
      const id = `twice-${randomBytes(3).toString('hex')}`;
      assert.equal((await store.arrive(id, 2, 0, { n: 1 })).status, 'open');
      assert.equal((await store.arrive(id, 2, 0, { n: 2 })).status, 'open', 'a second report of branch 0');
      const joined = await store.arrive(id, 2, 1, { n: 3 });
      assert.deepEqual(joined, { status: 'complete', results: [{ n: 1 }, { n: 3 }] });
      const failed = `fail-${id}`;
      await store.arrive(failed, 3, 0, 'a');
      assert.deepEqual(await store.fail(failed, 3, 1), {
        done: [{ branch: 0, result: 'a' }],
        settled: false,
      });
      assert.equal((await store.arrive(failed, 3, 2, 'c')).status, 'faulted', 'a late branch sees the fault');
      assert.equal((await store.undone(failed, 3, 0)).settled, false);
      assert.equal((await store.undone(failed, 3, 2)).settled, true);
      assert.equal((await store.undone(failed, 3, 2)).settled, true, 'again: still settled, counted once');
    });

    it('gives each duty to exactly one branch however their reports race, and again to its redelivery', async () => {
      const store = joins();
      await store.prepare?.();
      const run = randomBytes(3).toString('hex');
      const ids = Array.from({ length: 30 }, (_, n) => `race-${run}-${n}`);
      const count = <T>(items: T[], keep: (item: T) => boolean) => items.filter(keep).length;

      // Three branches completing at once: one report goes on with the slip.
      for (const id of ids) {
        const arrivals = await Promise.all([0, 1, 2].map((branch) => store.arrive(id, 3, branch, branch)));
        assert.equal(
          count(arrivals, (a) => a.status === 'complete'),
          1,
          `${id}: one report completes the join`,
        );
        const winner = arrivals.findIndex((a) => a.status === 'complete');
        assert.equal(
          (await store.arrive(id, 3, winner, 'again')).status,
          'complete',
          'its redelivery, again',
        );
        assert.equal(
          (await store.arrive(id, 3, (winner + 1) % 3, 'again')).status,
          'open',
          'not another branch',
        );
      }

      // A branch failing while another completes: each completed branch is undone by one report only.
      for (const id of ids.map((id) => `${id}.f`)) {
        await store.arrive(id, 3, 0, 'a');
        const [failure, late] = await Promise.all([store.fail(id, 3, 1), store.arrive(id, 3, 2, 'c')]);
        const undoes = [...failure.done.map((d) => d.branch), ...(late.status === 'faulted' ? [2] : [])];
        assert.deepEqual(undoes.sort(), [0, 2], `${id}: branches 0 and 2 undone once each`);
        const settled = await Promise.all([store.undone(id, 3, 0), store.undone(id, 3, 2)]);
        assert.equal(
          count(settled, (s) => s.settled),
          1,
          `${id}: one report goes on compensating`,
        );
      }
    });
  });
}
