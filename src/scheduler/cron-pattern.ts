import { CronExpressionParser } from 'cron-parser';
import { ConfigurationError, validationMessage } from '../core';

/**
 * A validated cron pattern in a time zone: the tick arithmetic, DST included, is cron-parser's.
 * Around DST changes (what cron-parser does, pinned by the unit tests): a wall-clock time that does
 * not exist (spring forward) fires once at the first valid instant after the gap, one that exists
 * twice (fall back) fires once, at its first occurrence; sub-hourly patterns keep their real-time
 * spacing through the repeated hour.
 */
export class CronPattern {
  private constructor(
    readonly pattern: string,
    readonly tz: string,
    private readonly hashSeed: string,
  ) {}

  /**
   * Checks the pattern and the zone; a ConfigurationError names the path (`pathOfTz` for the zone)
   * and the reason. `hashSeed` fixes what cron-parser's `H` fields pick (the schedule id, so that
   * every process picks the same minute and the pick survives restarts).
   */
  static parse(
    path: string,
    pattern: string,
    tz: string,
    pathOfTz = `${path}.tz`,
    hashSeed = pattern,
  ): CronPattern {
    if (typeof pattern !== 'string' || pattern.trim().length === 0)
      throw new ConfigurationError(
        validationMessage(path, 'must be a cron pattern like "0 9 * * *"', pattern),
      );
    checkTimeZone(pathOfTz, tz);
    const fields = pattern.trim().startsWith('@') ? 1 : pattern.trim().split(/\s+/).length;
    if (fields !== 1 && fields !== 5 && fields !== 6) {
      throw new ConfigurationError(
        validationMessage(
          path,
          'must have 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first',
          pattern,
        ),
      );
    }
    try {
      CronExpressionParser.parse(pattern, { tz, currentDate: new Date(0), hashSeed }).next();
    } catch (error) {
      throw new ConfigurationError(
        validationMessage(path, `is not a valid cron pattern: ${(error as Error).message}`, pattern),
        { cause: error },
      );
    }
    return new CronPattern(pattern, tz, hashSeed);
  }

  /** The first tick strictly after `ms` (ms since epoch). */
  nextAfter(ms: number): number {
    return CronExpressionParser.parse(this.pattern, {
      tz: this.tz,
      currentDate: new Date(ms),
      hashSeed: this.hashSeed,
    })
      .next()
      .getTime();
  }

  /** The latest tick at or before `ms`, if there is one. */
  latestAtOrBefore(ms: number): number | undefined {
    try {
      return CronExpressionParser.parse(this.pattern, {
        tz: this.tz,
        currentDate: new Date(ms + 1),
        hashSeed: this.hashSeed,
      })
        .prev()
        .getTime();
    } catch {
      return undefined;
    }
  }
}

/** An IANA zone name the runtime knows (`Asia/Tokyo`, `UTC`); returns it. */
export function checkTimeZone(path: string, tz: string): string {
  let valid = typeof tz === 'string' && tz.length > 0;
  if (valid) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
    } catch {
      valid = false;
    }
  }
  if (!valid)
    throw new ConfigurationError(
      validationMessage(path, "must be an IANA time zone like 'Europe/Berlin' or 'UTC'", tz),
    );
  return tz;
}
