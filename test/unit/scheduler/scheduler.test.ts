import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { ConfigurationError } from '../../../src';
import {
  resolveSchedule,
  resolveSchedulerOptions,
  Scheduler,
  type LeadershipSignal,
  type SchedulerClock,
  type TickLedger,
} from '../../../src/scheduler';

/** A clock whose time moves only when the test says so; due timers run in time order. */
class FakeClock implements SchedulerClock {
  private timers: { at: number; callback: () => void; id: number }[] = [];
  private nextId = 1;
  constructor(public time: number) {}
  now = () => this.time;
  setTimeout = (callback: () => void, ms: number) => {
    const id = this.nextId++;
    this.timers.push({ at: this.time + ms, callback, id });
    return id;
  };
  clearTimeout = (handle: unknown) => {
    this.timers = this.timers.filter((t) => t.id !== handle);
  };
  /**
   * Moves time forward to `to`, running every timer that falls due on the way (and letting the promises they
   * start settle).
   */
  async advanceTo(to: number): Promise<void> {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const due = this.timers[0];
      if (!due || due.at > to) break;
      this.timers.shift();
      this.time = Math.max(this.time, due.at);
      due.callback();
      await settle();
    }
    this.time = to;
    await settle();
  }
  /** Time jumps without timers running: the event loop was blocked. */
  freezeFor(ms: number): void {
    this.time += ms;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

class FakeLeadership implements LeadershipSignal {
  isLeader = false;
  private listeners = new Set<(isLeader: boolean) => void>();
  onChange(listener: (isLeader: boolean) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  set(isLeader: boolean) {
    this.isLeader = isLeader;
    for (const listener of this.listeners) listener(isLeader);
  }
}

class FakeLedger implements TickLedger {
  writes: Map<string, number>[] = [];
  private readGate: Promise<void> = Promise.resolve();
  constructor(public stored = new Map<string, number>()) {}
  async read() {
    const stored = new Map(this.stored);
    await this.readGate;
    return stored;
  }
  /** Reads answer only once the returned function is called: a slow broker. */
  holdReads(): () => void {
    let release!: () => void;
    this.readGate = new Promise((resolve) => (release = resolve));
    return release;
  }
  async write(lastFired: ReadonlyMap<string, number>) {
    this.stored = new Map(lastFired);
    this.writes.push(new Map(lastFired));
  }
}

const T0 = Date.parse('2025-06-01T10:00:00.000Z');
const defaults = resolveSchedulerOptions({});

function setup(options: { ledger?: FakeLedger; start?: number } = {}) {
  const clock = new FakeClock(options.start ?? T0 + 500);
  const leadership = new FakeLeadership();
  const ledger = options.ledger ?? new FakeLedger();
  const published: { job: string; data: unknown; jobId: string }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const scheduler = new Scheduler({
    publish: async (job, data, jobId) => {
      published.push({ job, data, jobId });
    },
    leadership,
    ledger,
    log: pino({ level: 'silent' }),
    clock,
    yieldToIo: () => gate,
  });
  return {
    clock,
    leadership,
    ledger,
    published,
    scheduler,
    ids: () => published.map((p) => p.jobId),
    holdPublishes(): () => void {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return release;
    },
  };
}

const everySecond = (id = 'tick', missedTicks: 'skip' | 'run-once' = 'skip') =>
  resolveSchedule(
    `@Cron('${id}')`,
    { job: 'clock.tick', pattern: '* * * * * *', data: { n: 1 }, id, missedTicks, source: 'decorator' },
    defaults,
  );

describe('Scheduler', () => {
  it('fires nothing while another process leads', async () => {
    const s = setup();
    s.scheduler.add(everySecond());
    s.scheduler.start();
    await s.clock.advanceTo(T0 + 5_000);
    assert.deepEqual(s.published, []);
  });

  it('fires every tick once while it leads, with the schedule id and the tick time as job id', async () => {
    const s = setup();
    s.scheduler.add(everySecond());
    s.scheduler.start();
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 3_200);
    assert.deepEqual(s.ids(), [
      'tick@2025-06-01T10:00:01.000Z',
      'tick@2025-06-01T10:00:02.000Z',
      'tick@2025-06-01T10:00:03.000Z',
    ]);
    assert.deepEqual(s.published[0]!.data, { n: 1 });
    assert.equal(s.published[0]!.job, 'clock.tick');
  });

  it('stops the moment leadership ends: a tick already under way is not published', async () => {
    const s = setup();
    s.scheduler.add(everySecond());
    s.scheduler.start();
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 1_500);
    const release = s.holdPublishes();
    await s.clock.advanceTo(T0 + 2_000); // the 10:00:02 timer ran; its publish waits for the socket to be read
    s.leadership.set(false); // ... which reports the connection closed
    release();
    await s.clock.advanceTo(T0 + 5_000);
    assert.deepEqual(s.ids(), ['tick@2025-06-01T10:00:01.000Z']);
    assert.equal(s.scheduler.isLeading, false);
  });

  it("skips ticks that fell while no process led, under the 'skip' policy", async () => {
    const s = setup({ ledger: new FakeLedger(new Map([['tick', T0 + 1_000]])) });
    s.scheduler.add(everySecond('tick', 'skip'));
    s.scheduler.start();
    await s.clock.advanceTo(T0 + 5_500);
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 6_100);
    assert.deepEqual(s.ids(), ['tick@2025-06-01T10:00:06.000Z']);
  });

  it("fires the latest missed tick once on takeover under 'run-once', when it is later than the ledger's last firing", async () => {
    const s = setup({ ledger: new FakeLedger(new Map([['tick', T0 + 1_000]])) });
    s.scheduler.add(everySecond('tick', 'run-once'));
    s.scheduler.start();
    await s.clock.advanceTo(T0 + 5_500);
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 6_100);
    assert.deepEqual(s.ids().sort(), ['tick@2025-06-01T10:00:05.000Z', 'tick@2025-06-01T10:00:06.000Z']);
    assert.equal(s.ledger.stored.get('tick'), T0 + 6_000, 'the ledger follows the firings');
  });

  it("under 'run-once', fires the missed tick even when the ledger's read answers after the term's first tick fired", async () => {
    const s = setup({ ledger: new FakeLedger(new Map([['tick', T0 + 1_000]])) });
    s.scheduler.add(everySecond('tick', 'run-once'));
    s.scheduler.start();
    await s.clock.advanceTo(T0 + 5_500);
    const release = s.ledger.holdReads();
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 6_100); // 10:00:06 fired while the read of the ledger is still out
    release();
    await s.clock.advanceTo(T0 + 6_200);
    assert.deepEqual(s.ids().sort(), ['tick@2025-06-01T10:00:05.000Z', 'tick@2025-06-01T10:00:06.000Z']);
    assert.equal(s.ledger.stored.get('tick'), T0 + 6_000);
  });

  it("under 'run-once', fires nothing extra when the last tick was already fired, or never fired anywhere", async () => {
    const fired = setup({ ledger: new FakeLedger(new Map([['tick', T0 + 5_000]])) });
    fired.scheduler.add(everySecond('tick', 'run-once'));
    fired.scheduler.start();
    await fired.clock.advanceTo(T0 + 5_500);
    fired.leadership.set(true);
    await fired.clock.advanceTo(T0 + 5_900);
    assert.deepEqual(fired.ids(), []);

    const never = setup({ ledger: new FakeLedger() });
    never.scheduler.add(everySecond('tick', 'run-once'));
    never.scheduler.start();
    await never.clock.advanceTo(T0 + 5_500);
    never.leadership.set(true);
    await never.clock.advanceTo(T0 + 5_900);
    assert.deepEqual(never.ids(), []);
  });

  it('fires every tick made late by a blocked event loop, in order, while it still leads', async () => {
    const s = setup();
    s.scheduler.add(everySecond());
    s.scheduler.start();
    s.leadership.set(true);
    await s.clock.advanceTo(T0 + 1_200);
    s.clock.freezeFor(2_500); // 10:00:03.700, no timer ran
    await s.clock.advanceTo(s.clock.time);
    assert.deepEqual(s.ids(), [
      'tick@2025-06-01T10:00:01.000Z',
      'tick@2025-06-01T10:00:02.000Z',
      'tick@2025-06-01T10:00:03.000Z',
    ]);
  });

  it('replaces a schedule with the same id and removes one by id', async () => {
    const s = setup();
    s.scheduler.start();
    s.leadership.set(true);
    s.scheduler.add(everySecond('a'));
    const replaced = s.scheduler.add(
      resolveSchedule(
        "schedule('a')",
        { job: 'clock.tick', pattern: '*/2 * * * * *', data: {}, id: 'a', source: 'runtime' },
        defaults,
      ),
    );
    assert.equal(replaced.pattern, '*/2 * * * * *');
    assert.equal(replaced.nextFireAt.toISOString(), '2025-06-01T10:00:02.000Z');
    await s.clock.advanceTo(T0 + 4_500);
    assert.deepEqual(s.ids(), ['a@2025-06-01T10:00:02.000Z', 'a@2025-06-01T10:00:04.000Z']);
    assert.equal(s.scheduler.remove('a'), true);
    assert.equal(s.scheduler.remove('a'), false);
    await s.clock.advanceTo(T0 + 8_000);
    assert.equal(s.published.length, 2);
    assert.deepEqual(s.scheduler.list(), []);
  });

  it('lists schedules with their next tick and the last tick this process fired', async () => {
    const s = setup();
    s.scheduler.add(
      resolveSchedule(
        "@Cron('report')",
        { job: 'report.send', pattern: '0 9 * * *', data: undefined, tz: 'Asia/Tokyo', source: 'decorator' },
        defaults,
      ),
    );
    const [info] = s.scheduler.list();
    assert.equal(info!.id, 'report.send');
    assert.equal(info!.tz, 'Asia/Tokyo');
    assert.equal(info!.missedTicks, 'skip');
    assert.deepEqual(info!.data, {});
    assert.equal(info!.nextFireAt.toISOString(), '2025-06-02T00:00:00.000Z');
    assert.equal(info!.lastFiredAt, undefined);
  });
});

describe('scheduler options', () => {
  it('defaults to UTC and the skip policy, and is enabled by default only when a job class carries @Cron', () => {
    assert.deepEqual(resolveSchedulerOptions({}), { enabled: false, tz: 'UTC', missedTicks: 'skip' });
    assert.equal(resolveSchedulerOptions({}, true).enabled, true);
    assert.equal(resolveSchedulerOptions({ enabled: false }, true).enabled, false);
  });

  it('names the path, the rule and the value of an invalid option', () => {
    const message = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        assert.ok(error instanceof ConfigurationError);
        return error.message;
      }
      assert.fail('expected a ConfigurationError');
    };
    assert.equal(
      message(() => resolveSchedulerOptions({ missedTicks: 'always' as never })),
      "scheduler.missedTicks must be one of 'skip', 'run-once' (got 'always')",
    );
    assert.match(
      message(() => resolveSchedulerOptions({ tz: 'Nowhere/Special' })),
      /^scheduler\.tz must be an IANA time zone .*\(got 'Nowhere\/Special'\)$/,
    );
    assert.match(
      message(() =>
        resolveSchedule(
          "schedule('x')",
          { job: 'a.b', pattern: '* * * * *', data: undefined, id: '', source: 'runtime' },
          defaults,
        ),
      ),
      /^schedule\('x'\)\.id must be a string of 1 to 200 characters/,
    );
    assert.match(
      message(() =>
        resolveSchedule(
          "schedule('x')",
          {
            job: 'a.b',
            pattern: '* * * * *',
            data: undefined,
            missedTicks: 'never' as never,
            source: 'runtime',
          },
          defaults,
        ),
      ),
      /^schedule\('x'\)\.missedTicks must be one of/,
    );
  });
});
