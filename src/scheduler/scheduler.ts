import type { Logger } from '../core';
import { firingJobId, type ScheduleInfo, type ScheduleSpec } from './schedule';
import { TermLedger, type TickLedger } from './term-ledger';

/** Whether this process is the cron leader, and word when that changes (the AMQP election implements it). */
export interface LeadershipSignal {
  readonly isLeader: boolean;
  /** Called synchronously on every change; returns a function that removes the listener. */
  onChange(listener: (isLeader: boolean) => void): () => void;
}

/** Time as the scheduler sees it; tests pass a fake one. */
export interface SchedulerClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface SchedulerDeps {
  /** Publishes one firing with its deterministic job id; resolves on the broker's confirm. */
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  readonly leadership: LeadershipSignal;
  readonly ledger: TickLedger;
  readonly log: Logger;
  readonly clock?: SchedulerClock;
  /**
   * Awaited between a tick's timer and its publish. The default lets pending socket events run
   * first: a process that was frozen (SIGSTOP, a long GC) and whose connection the broker closed
   * meanwhile learns that it lost leadership before it publishes anything.
   */
  readonly yieldToIo?: () => Promise<void>;
}

const SYSTEM_CLOCK: SchedulerClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** setTimeout's ceiling (about 24.8 days); longer waits are armed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Entry {
  readonly spec: ScheduleSpec;
  next: number;
  timer: unknown;
  lastFiredAt: number | undefined;
  /** A paused schedule keeps its place but is not armed and never fires. */
  paused: boolean;
}

/**
 * Fires schedules while this process leads, and only then. Every tick that falls while it leads is
 * published once, in order (a tick made late by a busy event loop is still fired), with a job id
 * derived from the schedule id and the tick's time. Losing leadership stops everything at once,
 * synchronously: timers are cleared and firings already under way are dropped before they publish
 * (each leadership term has a number; a firing of an older term never publishes).
 *
 * On taking over, ticks that fell while no one led follow each schedule's policy: 'skip' starts
 * with the next tick; 'run-once' reads the ledger and fires the latest missed tick once if it is
 * later than the last tick any leader fired (a schedule never fired anywhere has missed nothing).
 */
export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: SchedulerClock;
  private readonly yieldToIo: () => Promise<void>;
  private term = 0;
  private leading = false;
  private removeListener: (() => void) | undefined;
  private readonly ledger: TermLedger;

  constructor(private readonly deps: SchedulerDeps) {
    this.clock = deps.clock ?? SYSTEM_CLOCK;
    this.yieldToIo = deps.yieldToIo ?? (() => new Promise((resolve) => setImmediate(resolve)));
    this.ledger = new TermLedger({
      ledger: deps.ledger,
      log: deps.log,
      isCurrent: (term) => term === this.term,
      isLeader: () => deps.leadership.isLeader,
      lastFiredHere: () => this.lastFiredHere(),
    });
  }

  get isLeading(): boolean {
    return this.leading;
  }

  /** Follows the leadership signal from now on; fires while this process leads. */
  start(): void {
    if (this.removeListener) return;
    this.removeListener = this.deps.leadership.onChange((isLeader) => this.leadershipChanged(isLeader));
    if (this.deps.leadership.isLeader) this.leadershipChanged(true);
  }

  /** Stops firing (synchronously) and stops following the leadership signal. */
  stop(): void {
    this.removeListener?.();
    this.removeListener = undefined;
    this.leadershipChanged(false);
  }

  /**
   * Adds a schedule, or replaces the one with the same id. Fires from the next tick on if this process leads.
   */
  add(spec: ScheduleSpec, paused = false): ScheduleInfo {
    const previous = this.entries.get(spec.id);
    if (previous) this.disarm(previous);
    const entry: Entry = {
      spec,
      next: spec.cron.nextAfter(this.clock.now()),
      timer: undefined,
      lastFiredAt: previous?.lastFiredAt,
      paused,
    };
    this.entries.set(spec.id, entry);
    if (this.leading && !paused) this.arm(entry, this.term);
    return this.describe(entry);
  }

  /** Removes a schedule; false when there was none with that id. */
  remove(id: string): boolean {
    const entry = this.entries.get(id);
    if (!entry) return false;
    this.disarm(entry);
    this.entries.delete(id);
    return true;
  }

  /** Pauses or resumes a schedule (a resumed one starts with its next tick); false when there is none. */
  setPaused(id: string, paused: boolean): boolean {
    const entry = this.entries.get(id);
    if (!entry) return false;
    if (entry.paused === paused) return true;
    entry.paused = paused;
    this.disarm(entry);
    if (!paused && this.leading) {
      entry.next = entry.spec.cron.nextAfter(this.clock.now());
      this.arm(entry, this.term);
    }
    return true;
  }

  list(): ScheduleInfo[] {
    return [...this.entries.values()].map((entry) => this.describe(entry));
  }

  private describe(entry: Entry): ScheduleInfo {
    const { spec } = entry;
    return Object.freeze({
      id: spec.id,
      job: spec.job,
      pattern: spec.cron.pattern,
      tz: spec.cron.tz,
      data: spec.data,
      missedTicks: spec.missedTicks,
      source: spec.source,
      paused: entry.paused,
      nextFireAt: new Date(spec.cron.nextAfter(this.clock.now())),
      lastFiredAt: entry.lastFiredAt === undefined ? undefined : new Date(entry.lastFiredAt),
    });
  }

  private leadershipChanged(isLeader: boolean): void {
    if (isLeader === this.leading) return;
    this.term += 1;
    this.leading = isLeader;
    if (!isLeader) {
      for (const entry of this.entries.values()) this.disarm(entry);
      this.ledger.forget();
      this.deps.log.info('no longer the cron leader; schedules stopped');
      return;
    }
    const term = this.term;
    const now = this.clock.now();
    this.deps.log.info({ schedules: this.entries.size }, 'cron leader; firing schedules');
    for (const entry of this.entries.values()) {
      entry.next = entry.spec.cron.nextAfter(now);
      if (!entry.paused) this.arm(entry, term);
    }
    if ([...this.entries.values()].some((entry) => entry.spec.missedTicks === 'run-once'))
      void this.catchUp(term, now);
  }

  /** 'run-once' schedules: fire the latest tick at or before the takeover if no leader fired it. */
  private async catchUp(term: number, now: number): Promise<void> {
    const ledger = await this.ledger.of(term);
    if (term !== this.term) return;
    for (const entry of this.entries.values()) {
      if (entry.spec.missedTicks !== 'run-once' || entry.paused) continue;
      const last = ledger.get(entry.spec.id);
      const latest = entry.spec.cron.latestAtOrBefore(now);
      if (last === undefined || latest === undefined || latest <= last) continue;
      this.deps.log.info(
        { schedule: entry.spec.id, tick: new Date(latest).toISOString() },
        'firing a tick missed while no process led (run-once policy)',
      );
      void this.fire(entry, latest, term);
    }
  }

  private *lastFiredHere(): Iterable<readonly [string, number]> {
    for (const entry of this.entries.values())
      if (entry.lastFiredAt !== undefined) yield [entry.spec.id, entry.lastFiredAt];
  }

  private arm(entry: Entry, term: number): void {
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, entry.next - this.clock.now()));
    entry.timer = this.clock.setTimeout(() => this.onTimer(entry, term), delay);
  }

  private disarm(entry: Entry): void {
    if (entry.timer !== undefined) this.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  private onTimer(entry: Entry, term: number): void {
    entry.timer = undefined;
    if (term !== this.term || this.entries.get(entry.spec.id) !== entry || entry.paused) return;
    // The wall clock may trail the timer clock by a little; a capped long wait just re-arms.
    if (this.clock.now() < entry.next) {
      this.arm(entry, term);
      return;
    }
    const fireAt = entry.next;
    entry.next = entry.spec.cron.nextAfter(fireAt);
    this.arm(entry, term);
    void this.fire(entry, fireAt, term);
  }

  private async fire(entry: Entry, fireAt: number, term: number): Promise<void> {
    await this.yieldToIo();
    const jobId = firingJobId(entry.spec.id, fireAt);
    const isCurrent = this.entries.get(entry.spec.id) === entry && !entry.paused;
    if (term !== this.term || !this.deps.leadership.isLeader || !isCurrent) {
      this.deps.log.debug(
        { schedule: entry.spec.id, jobId },
        'leadership lost before the tick was published; not fired',
      );
      return;
    }
    try {
      await this.deps.publish(entry.spec.job, entry.spec.data, jobId);
    } catch (error) {
      this.deps.log.error(
        { err: error, schedule: entry.spec.id, jobId },
        'cron firing was not confirmed by the broker; this tick did not fire',
      );
      return;
    }
    if (entry.lastFiredAt === undefined || fireAt > entry.lastFiredAt) entry.lastFiredAt = fireAt;
    this.deps.log.debug({ schedule: entry.spec.id, jobId }, 'cron tick fired');
    if (entry.spec.missedTicks === 'run-once') void this.ledger.record(entry.spec.id, fireAt, term);
  }
}
