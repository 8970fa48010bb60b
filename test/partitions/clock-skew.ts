/**
 * Faked time for one workload process: a network namespace cannot give a process a clock of its own, so the
 * partition suite's clock-skew nemesis moves this process's `Date` (`Date.now()` and `new Date()`, which
 * warren, cron-parser and pg read) by an offset it sets at run time. Timers are untouched: a skewed process
 * still waits real milliseconds, exactly as a host whose wall clock is off.
 *
 * Import this module before anything else in the process. The history is written with {@link realNow}, the
 * machine's clock, which is the checker's clock.
 */
const RealDate = Date;
const systemNow = RealDate.now.bind(RealDate);
let skewMs = 0;

/** The machine's clock (ms since the epoch), whatever skew this process was given. */
export function realNow(): number {
  return systemNow();
}

/** Moves this process's `Date` by `ms` from the machine's clock (negative: behind). 0 puts it right. */
export function setClockSkew(ms: number): void {
  skewMs = ms;
}

export function clockSkew(): number {
  return skewMs;
}

class SkewedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(systemNow() + skewMs);
    else super(...(args as [string | number | Date]));
  }

  static override now(): number {
    return systemNow() + skewMs;
  }
}

globalThis.Date = SkewedDate as DateConstructor;
