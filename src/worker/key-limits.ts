import type { BusyKey } from '../core';
import type { PlannedKeyLimits } from '../topology';
import { StartLog } from './start-log';

/** Which per-key limit a job is over. */
export type KeyLimitKind = 'concurrency' | 'rate';

/** Whether a job of a key may start now. `freeAt`: when its key's rate allows the next start (ms since epoch). */
export type KeyLimitVerdict =
  | { readonly kind: 'run' }
  | { readonly kind: 'capped'; readonly limit: KeyLimitKind; readonly freeAt?: number };

/** A run-time override of one key's limit (ops.limits, the limits stream): the planned one otherwise. */
export interface KeyLimitOverride {
  /** Runs at once of this job type for the key. */
  readonly concurrency?: number;
  /** Starts per window for the key (the window stays the planned one). */
  readonly max?: number;
}

const RUN = { kind: 'run' } as const;
/** Sweep the idle keys' logs every this many starts: their memory stays bounded by the keys active in a window. */
const SWEEP_EVERY = 1024;
/** A job re-delayed for its key's concurrency comes back within this, whatever the backlog. */
export const MAX_CONCURRENCY_DEFER_MS = 60_000;
/** Until a job type's run time is measured, a deferred job of a key at its concurrency waits this long. */
const DEFAULT_RUN_MS = 1_000;
const MIN_DEFER_MS = 50;
/**
 * A job re-delayed for its key's rate comes back this many delay units (± half a unit; 1 s at the default
 * 100 ms) before its slot: the broker's trip through the levels ran up to 700 ms late at load 10 on the bench's
 * 2-core machine, and the key's slot must find the job waiting aside, not on its way.
 */
export const LEAD_UNITS = 10;
/** A job whose key's rate frees a slot within this many delay units may wait aside for it (isDueSoon). */
const DUE_UNITS = LEAD_UNITS + 1;

/**
 * The per-key limits of one partitioned queue's jobs (docs/guide/per-key-limits.md), counted in the one process
 * that owns the key's partition: runs at once per (job type, key) and a sliding log of starts per (limit scope,
 * key). No queue, no broker round trip, no state per key beyond a Map entry while the key is active, so 10,000
 * keys cost 10,000 entries. A new owner of a partition starts with empty counts: the old owner's running jobs
 * came back to the queue with its channel, and the rate window of the handover is not carried (stated in the
 * guide).
 */
export class KeyLimits {
  private readonly running = new Map<string, number>();
  private readonly logs = new Map<string, StartLog>();
  private readonly durationOf = new Map<string, number>();
  private readonly reservations = new Map<string, number>();
  /** Per (limit scope, key): the slot given to the last job re-delayed for the key's rate, and its place. */
  private readonly slotsGiven = new Map<string, { at: number; sameAt: number }>();
  private readonly runMs = new Map<string, number>();
  private readonly overrides = new Map<string, KeyLimitOverride>();
  private starts = 0;
  private deferredCount = 0;

  /**
   * @param delayUnitMs the delay levels' unit: a job re-delayed for its key's rate is sent to come back
   *   LEAD_UNITS (± half a unit) before its slot (the levels take whole units, and the trip adds the broker's
   *   latency), and waits aside for the slot, so that a saturated key starts on its slots, not after.
   */
  constructor(
    private readonly limits: ReadonlyMap<string, PlannedKeyLimits>,
    private readonly delayUnitMs = 100,
  ) {
    for (const limit of limits.values())
      if (limit.rate) this.durationOf.set(limit.rate.scope, limit.rate.durationMs);
  }

  /**
   * Whether a job over its key's rate gets its slot within LEAD_UNITS + 1 delay units: the window a re-delayed
   * job comes back early in, so it waits aside for its slot (within the partition's bound for them) instead of
   * going round the levels again.
   */
  isDueSoon(verdict: KeyLimitVerdict, now: number): boolean {
    return (
      verdict.kind === 'capped' &&
      verdict.freeAt !== undefined &&
      verdict.freeAt - now <= DUE_UNITS * this.delayUnitMs
    );
  }

  /** Whether the job type has per-key limits. */
  has(jobName: string | undefined): boolean {
    return jobName !== undefined && this.limits.has(jobName);
  }

  /** Jobs re-delayed for their key's limit since this process started. */
  get deferred(): number {
    return this.deferredCount;
  }

  /** Sets (or, with undefined, removes) a key's override: `target` is the job name or the rate limit's scope. */
  setOverride(target: string, key: string, override: KeyLimitOverride | undefined): void {
    const id = slot(target, key);
    if (override === undefined) this.overrides.delete(id);
    else this.overrides.set(id, override);
  }

  check(jobName: string | undefined, key: string, now: number): KeyLimitVerdict {
    const limit = jobName === undefined ? undefined : this.limits.get(jobName);
    if (limit === undefined) return RUN;
    if (limit.concurrency !== undefined) {
      const cap = this.overrides.get(slot(jobName!, key))?.concurrency ?? limit.concurrency;
      if ((this.running.get(slot(jobName!, key)) ?? 0) >= cap)
        return { kind: 'capped', limit: 'concurrency' };
    }
    const rate = limit.rate;
    if (rate !== undefined) {
      const id = slot(rate.scope, key);
      const log = this.logs.get(id);
      const max = this.overrides.get(id)?.max ?? rate.max;
      if (log !== undefined && log.count(now, rate.durationMs) >= max)
        return { kind: 'capped', limit: 'rate', freeAt: log.oldestExpiry(rate.durationMs) };
    }
    return RUN;
  }

  /**
   * When the key's `n`th next start under its job type's per-key rate may be (0: the next), ms since epoch; now
   * for a key with no start in its window, undefined for a job type without a per-key rate.
   */
  nextSlot(jobName: string, key: string, n: number, now: number): number | undefined {
    const rate = this.limits.get(jobName)?.rate;
    if (rate === undefined) return undefined;
    const id = slot(rate.scope, key);
    const log = this.logs.get(id);
    if (log === undefined) return now;
    return log.slot(n, this.overrides.get(id)?.max ?? rate.max, now, rate.durationMs);
  }

  /** A job of the key started (after `check` said run). */
  started(jobName: string | undefined, key: string, now: number): void {
    const limit = jobName === undefined ? undefined : this.limits.get(jobName);
    if (limit === undefined) return;
    if (limit.concurrency !== undefined) {
      const id = slot(jobName!, key);
      this.running.set(id, (this.running.get(id) ?? 0) + 1);
    }
    if (limit.rate !== undefined) {
      const id = slot(limit.rate.scope, key);
      let log = this.logs.get(id);
      if (log === undefined) {
        log = new StartLog();
        this.logs.set(id, log);
      }
      log.add(now);
    }
    if (++this.starts % SWEEP_EVERY === 0) this.sweep(now);
  }

  /** A job of the key ended (settled, or handed back); `ranMs` feeds the deferral estimate. */
  ended(jobName: string | undefined, key: string, ranMs: number): void {
    const limit = jobName === undefined ? undefined : this.limits.get(jobName);
    if (limit?.concurrency === undefined) return;
    const id = slot(jobName!, key);
    const left = (this.running.get(id) ?? 1) - 1;
    if (left <= 0) this.running.delete(id);
    else this.running.set(id, left);
    const average = this.runMs.get(jobName!);
    this.runMs.set(jobName!, average === undefined ? ranMs : average * 0.9 + ranMs * 0.1);
  }

  /**
   * How long to re-delay a job that is over its key's limit and cannot wait aside: its key's jobs re-delayed
   * before it get successive slots (the key's next rate slots, or a run time shared by the key's concurrency),
   * so a backlog comes back about when the key can take it instead of all at once; behind the `waitingAside`
   * jobs of the key that wait in the process already, which the key takes first. A rate's re-delay ends
   * LEAD_UNITS (± half a unit) before the slot (see the constructor); a concurrency's at the estimate. A job
   * back from a rate re-delay (`slotted`: it was given a slot) whose slot is due soon but finds no room aside is
   * sent round once more by the least delay and keeps its claim, instead of a slot at the end of the key's
   * backlog: the slot it came for is then taken by it late, not lost to the key; one not due soon yet (the
   * key's slots moved on, after a stall) is given the key's next slot behind the jobs waiting aside.
   */
  deferDelayMs(
    of: {
      readonly jobName: string;
      readonly key: string;
      readonly waitingAside?: number;
      readonly slotted?: boolean;
    },
    verdict: KeyLimitVerdict,
    now: number,
  ): number {
    const { jobName, key, waitingAside = 0 } = of;
    this.deferredCount += 1;
    const limit = this.limits.get(jobName);
    if (verdict.kind !== 'capped' || limit === undefined) return MIN_DEFER_MS;
    if (verdict.limit === 'rate' && limit.rate !== undefined) {
      if (of.slotted === true && this.isDueSoon(verdict, now)) return MIN_DEFER_MS;
      // a job given a slot before keeps its claim: the key's next slot behind the jobs waiting aside, not one
      // at the end of the key's backlog (a stall that moved the key's slots on must not make it a straggler)
      const at = this.rateSlot(limit.rate, key, { waitingAside, claimed: of.slotted === true }, now);
      // whole units that end LEAD_UNITS (± half a unit) before the slot: the levels take a delay in
      // whole units, so it comes back early by that (less the broker's latency) and waits aside for the slot
      const unit = this.delayUnitMs;
      return Math.max(MIN_DEFER_MS, Math.floor((at - now - (LEAD_UNITS - 0.5) * unit) / unit) * unit);
    }
    const cap = this.overrides.get(slot(jobName, key))?.concurrency ?? limit.concurrency ?? 1;
    const runMs = this.runMs.get(jobName) ?? DEFAULT_RUN_MS;
    const id = `concurrency\u0000${slot(jobName, key)}`;
    const at = Math.max(
      now + runMs * (1 + waitingAside / cap),
      (this.reservations.get(id) ?? 0) + runMs / cap,
    );
    this.reservations.set(id, at);
    return Math.min(MAX_CONCURRENCY_DEFER_MS, Math.max(MIN_DEFER_MS, Math.ceil(at - now)));
  }

  /**
   * The slot a job re-delayed for its key's rate is given: the key's next slot after the `waitingAside` jobs
   * waiting in the process and after the slots given to the key's jobs re-delayed before it (the index of the
   * last one given is kept per key while it lies ahead). A `claimed` job (given a slot before) gets the key's
   * next slot after the jobs waiting aside, and moves the chain of the slots given on by nothing.
   */
  private rateSlot(
    rate: { readonly scope: string; readonly max: number; readonly durationMs: number },
    key: string,
    place: { readonly waitingAside: number; readonly claimed: boolean },
    now: number,
  ): number {
    const { waitingAside } = place;
    const id = slot(rate.scope, key);
    const max = this.overrides.get(id)?.max ?? rate.max;
    const log = this.logs.get(id);
    if (log === undefined) return now;
    if (place.claimed) return log.slot(waitingAside, max, now, rate.durationMs);
    const given = this.slotsGiven.get(id);
    let n = waitingAside;
    // the log moves on as the key starts jobs: the slot given last is found again by its time, and the next
    // one is past it and past the slots of the same time given before it (a burst's)
    if (given !== undefined && given.at >= now) {
      let after = log.firstSlotAtOrAfter(given.at, max, now, rate.durationMs);
      for (
        let same = 0;
        same < given.sameAt && log.slot(after, max, now, rate.durationMs) === given.at;
        same++
      )
        after++;
      n = Math.max(n, after);
    }
    const at = log.slot(n, max, now, rate.durationMs);
    this.slotsGiven.set(id, { at, sameAt: log.sameBefore(n, max, now, rate.durationMs) });
    return at;
  }

  /** The `top` keys with the most jobs running, then the most recent starts. */
  busiest(top: number, now: number): BusyKey[] {
    const byKey = new Map<string, { running: number; recentStarts: number }>();
    const entry = (key: string) => {
      let found = byKey.get(key);
      if (found === undefined) {
        found = { running: 0, recentStarts: 0 };
        byKey.set(key, found);
      }
      return found;
    };
    for (const [id, count] of this.running) entry(keyOf(id)).running += count;
    for (const [id, log] of this.logs) {
      const count = log.count(now, this.durationOf.get(scopeOf(id)) ?? 0);
      if (count > 0) entry(keyOf(id)).recentStarts += count;
    }
    return [...byKey]
      .map(([key, counts]) => ({ key, ...counts }))
      .sort((a, b) => b.running - a.running || b.recentStarts - a.recentStarts)
      .slice(0, top);
  }

  private sweep(now: number): void {
    for (const [id, log] of this.logs)
      if (log.isIdle(now, this.durationOf.get(scopeOf(id)) ?? 0)) this.logs.delete(id);
    for (const [id, at] of this.reservations) if (at < now) this.reservations.delete(id);
    for (const [id, given] of this.slotsGiven) if (given.at < now) this.slotsGiven.delete(id);
  }
}

function slot(target: string, key: string): string {
  return `${target}\u0000${key}`;
}

function keyOf(id: string): string {
  return id.slice(id.indexOf('\u0000') + 1);
}

function scopeOf(id: string): string {
  return id.slice(0, id.indexOf('\u0000'));
}
