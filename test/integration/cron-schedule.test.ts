import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  ConfigurationError,
  Cron,
  defineTopology,
  Job,
  UnknownJobError,
  type JobContext,
  type JobHandler,
} from '../../src';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent, passTime, waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { ticks: {} } });

/** Every run of `clock.tick`, across every warren of a test (handlers are per class). */
const runs: { jobId: string; data: unknown; at: number }[] = [];

@Cron('* * * * * *', { id: 'every-second', data: { from: 'decorator' } })
@Job('clock.tick', { queue: 'ticks', attempts: 1 })
class Tick implements JobHandler<{ from: string }> {
  async handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data, at: Date.now() });
  }
}

@Job('clock.tick', { queue: 'ticks', attempts: 1 })
class TickWithoutCron implements JobHandler<{ from: string }> {
  async handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data, at: Date.now() });
  }
}

const ticksOf = (id: string) => runs.filter((r) => r.jobId.startsWith(`${id}@`));
const fireTimeOf = (jobId: string) => Date.parse(jobId.slice(jobId.lastIndexOf('@') + 1));

describe('cron in one process', () => {
  afterEach(async () => {
    await cleanup();
    runs.length = 0;
  });
  after(cleanup);

  it('fires a @Cron job on every tick with its fixed data and a job id made of the schedule id and the tick time', async () => {
    const warren = await testWarren({ topology, handlers: [new Tick()] });
    const elected = nextEvent<{ isLeader: boolean }>(warren, 'leadershipChanged');
    await warren.start();
    assert.deepEqual(await elected, { isLeader: true });
    assert.equal(warren.cron.isLeader, true);
    await waitFor(() => ticksOf('every-second').length >= 3, { what: 'three ticks' });
    const ticks = ticksOf('every-second');
    for (const tick of ticks) {
      assert.match(tick.jobId, /^every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
      assert.deepEqual(tick.data, { from: 'decorator' });
      assert.ok(
        tick.at - fireTimeOf(tick.jobId) < 500,
        `ran ${tick.at - fireTimeOf(tick.jobId)} ms after its tick`,
      );
    }
    const times = ticks.map((t) => fireTimeOf(t.jobId));
    assert.deepEqual(
      times.slice(1).map((t, i) => t - times[i]!),
      Array(times.length - 1).fill(1000),
    );
    const [info] = warren.cron.list();
    assert.equal(info!.id, 'every-second');
    assert.equal(info!.source, 'decorator');
    assert.equal(info!.tz, 'UTC');
    assert.ok(info!.lastFiredAt instanceof Date);
  });

  it('schedules, lists and unschedules a job at run time', async () => {
    const warren = await testWarren<{ 'clock.tick': { from: string } }>({
      topology,
      handlers: [new TickWithoutCron()],
      scheduler: { enabled: true },
    });
    await warren.start();
    assert.deepEqual(warren.cron.list(), []);
    const info = await warren.cron.schedule(
      'clock.tick',
      '* * * * * *',
      { from: 'runtime' },
      { id: 'soon', tz: 'Asia/Tokyo' },
    );
    assert.equal(info.source, 'runtime');
    assert.equal(info.tz, 'Asia/Tokyo');
    assert.ok(info.nextFireAt.getTime() - Date.now() <= 1000);
    await warren.cron.schedule(TickWithoutCron, '* * * * * *', { from: 'keeps-going' }, { id: 'witness' });
    assert.deepEqual(
      warren.cron
        .list()
        .map((s) => s.id)
        .sort(),
      ['soon', 'witness'],
    );
    await waitFor(() => ticksOf('soon').length >= 1, { what: 'the run-time schedule to fire' });
    assert.deepEqual(ticksOf('soon')[0]!.data, { from: 'runtime' });

    assert.equal(warren.cron.unschedule('soon'), true);
    assert.equal(warren.cron.unschedule('soon'), false);
    const firedBefore = ticksOf('soon').length;
    const witnessBefore = ticksOf('witness').length;
    await waitFor(() => ticksOf('witness').length >= witnessBefore + 2, {
      what: 'two more ticks of the schedule that stays',
    });
    // A tick already published when unschedule ran may still arrive, nothing after it.
    assert.ok(ticksOf('soon').length <= firedBefore + 1);
    assert.deepEqual(
      warren.cron.list().map((s) => s.id),
      ['witness'],
    );
  });

  it("under 'run-once', a new leader fires the latest tick missed while no process ran; under 'skip' it does not", async () => {
    const namespace = testNamespace('cron');
    @Cron('* * * * * *', { id: 'careful', missedTicks: 'run-once' })
    @Cron('* * * * * *', { id: 'casual', missedTicks: 'skip' })
    @Job('clock.tick', { queue: 'ticks', attempts: 1 })
    class TwoPolicies extends TickWithoutCron {}

    const first = await testWarren({ namespace, topology, handlers: [new TwoPolicies()] });
    await first.start();
    await waitFor(() => ticksOf('careful').length >= 2 && ticksOf('casual').length >= 2, {
      what: 'both schedules to fire',
    });
    await first.close();
    const lastFired = Math.max(...ticksOf('careful').map((t) => fireTimeOf(t.jobId)));
    // Nobody runs for two whole ticks: the missed ticks are the thing under test, so time must pass.
    await passTime(lastFired + 3_300 - Date.now());
    const second = await testWarren({ namespace, topology, handlers: [new TwoPolicies()] });
    // The missed tick is judged at the moment of election, not when the test asked for a process: a start on
    // a loaded machine can take past the next second.
    let electedAt = 0;
    const elected = nextEvent<{ isLeader: boolean }>(second, 'leadershipChanged').then(() => {
      electedAt = Date.now();
    });
    await second.start();
    await elected;
    await waitFor(
      () =>
        ticksOf('careful').some((t) => fireTimeOf(t.jobId) > electedAt) &&
        ticksOf('casual').some((t) => fireTimeOf(t.jobId) > electedAt),
      { what: 'the new leader to fire' },
    );

    // A regular tick is always after the election; one at or before it was fired for the gap.
    const missed = (id: string) =>
      ticksOf(id)
        .map((t) => fireTimeOf(t.jobId))
        .filter((t) => t > lastFired + 1000 && t <= electedAt);
    const careful = missed('careful');
    assert.equal(
      careful.length,
      1,
      `run-once fires the latest missed tick, once (got ${careful.join(', ')})`,
    );
    assert.ok(
      careful[0]! > electedAt - 1000,
      `the tick fired is the latest before the election (${careful[0]} against ${electedAt})`,
    );
    assert.deepEqual(missed('casual'), [], 'skip fires none of the missed ticks');
  });

  it('refuses invalid @Cron declarations at createWarren, naming the path and the value', async () => {
    @Cron('61 * * * *')
    @Job('bad.minute', { queue: 'ticks' })
    class BadMinute implements JobHandler {
      async handle() {}
    }
    @Cron('0 9 * * *', { tz: 'Asia/Atlantis' })
    @Job('bad.zone', { queue: 'ticks' })
    class BadZone implements JobHandler {
      async handle() {}
    }
    @Cron('0 9 * * *', { data: { count: 'three' } })
    @Job('bad.data', { queue: 'ticks', schema: z.object({ count: z.number() }) })
    class BadData implements JobHandler {
      async handle() {}
    }
    @Cron('0 9 * * *')
    @Cron('0 10 * * *')
    @Job('two.same', { queue: 'ticks' })
    class SameId implements JobHandler {
      async handle() {}
    }
    const rejects = (jobs: object[], message: RegExp) =>
      assert.rejects(
        testWarren({ topology, jobs: jobs as never }),
        (error: unknown) => error instanceof ConfigurationError && message.test(error.message),
      );
    await rejects(
      [BadMinute],
      /^BadMinute @Cron\('61 \* \* \* \*'\)\.pattern is not a valid cron pattern: .*\(got '61 \* \* \* \*'\)$/,
    );
    await rejects(
      [BadZone],
      /^BadZone @Cron\('0 9 \* \* \*'\)\.tz must be an IANA time zone .*\(got 'Asia\/Atlantis'\)$/,
    );
    await rejects([BadData], /^@Cron\('bad\.data'\)\.data does not match the job's schema: count: /);
    await rejects([SameId], /share the schedule id 'two\.same'/);
    await assert.rejects(
      testWarren({ topology, jobs: [Tick], scheduler: { missedTicks: 'sometimes' as never } }),
      /^ConfigurationError: scheduler\.missedTicks must be one of 'skip', 'run-once' \(got 'sometimes'\)$/,
    );
  });

  it('refuses warren.cron.schedule for an unknown job, a bad pattern, and in a process whose scheduler is disabled', async () => {
    const enabled = await testWarren({ topology, jobs: [TickWithoutCron], scheduler: { enabled: true } });
    await assert.rejects(enabled.cron.schedule('clock.nope', '* * * * *'), UnknownJobError);
    await assert.rejects(
      enabled.cron.schedule('clock.tick', 'every day'),
      (error: unknown) =>
        error instanceof ConfigurationError && /^schedule\('clock\.tick'\)\.pattern /.test(error.message),
    );
    const disabled = await testWarren({ topology, jobs: [TickWithoutCron] });
    await assert.rejects(
      disabled.cron.schedule('clock.tick', '* * * * *'),
      (error: unknown) => error instanceof ConfigurationError && /scheduler is disabled/.test(error.message),
    );
  });

  it('keeps the deprecated Warren aliases working until their next minor release', async () => {
    const warren = await testWarren({ topology, jobs: [TickWithoutCron], scheduler: { enabled: true } });
    const info = await warren.schedule('clock.tick', '0 0 1 1 *', { from: 'alias' }, { id: 'alias' });
    assert.equal(info.source, 'runtime');
    assert.deepEqual(
      warren.schedules().map((s) => s.id),
      ['alias'],
    );
    assert.equal(warren.unschedule('alias'), true);
    assert.equal(warren.isLeader, false);
    await assert.rejects(
      warren.addSchedule('clock.tick', 'not a cron', {}, { id: 'bad' }),
      ConfigurationError,
    );
  });
});
