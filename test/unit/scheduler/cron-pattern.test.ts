import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError } from '../../../src';
import { CronPattern } from '../../../src/scheduler';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

function ticks(pattern: string, tz: string, fromIso: string, count: number): string[] {
  const cron = CronPattern.parse('test', pattern, tz);
  const out: string[] = [];
  let t = at(fromIso);
  for (let i = 0; i < count; i++) {
    t = cron.nextAfter(t);
    out.push(iso(t)!);
  }
  return out;
}

describe('cron next-run arithmetic', () => {
  it('reads the pattern in its time zone: 09:00 in Tokyo is 00:00 UTC', () => {
    assert.deepEqual(ticks('0 9 * * *', 'Asia/Tokyo', '2025-01-01T12:00:00Z', 2), [
      '2025-01-02T00:00:00.000Z',
      '2025-01-03T00:00:00.000Z',
    ]);
  });

  it('returns the tick strictly after the given time, and supports a seconds field', () => {
    assert.deepEqual(ticks('0 * * * *', 'UTC', '2025-01-01T10:00:00Z', 1), ['2025-01-01T11:00:00.000Z']);
    assert.deepEqual(ticks('*/15 * * * * *', 'UTC', '2025-01-01T12:00:07.250Z', 3), [
      '2025-01-01T12:00:15.000Z',
      '2025-01-01T12:00:30.000Z',
      '2025-01-01T12:00:45.000Z',
    ]);
  });

  it('fires a wall-clock time skipped by the spring-forward DST change once, right after the gap', () => {
    // New York, 2025-03-09: 02:00 EST jumps to 03:00 EDT, so 02:30 does not exist that day.
    assert.deepEqual(ticks('30 2 * * *', 'America/New_York', '2025-03-08T12:00:00Z', 3), [
      '2025-03-09T07:30:00.000Z', // 03:30 EDT on the day of the change
      '2025-03-10T06:30:00.000Z', // 02:30 EDT
      '2025-03-11T06:30:00.000Z',
    ]);
  });

  it('fires a wall-clock time repeated by the fall-back DST change once, at its first occurrence', () => {
    // New York, 2025-11-02: 02:00 EDT falls back to 01:00 EST, so 01:30 happens twice.
    assert.deepEqual(ticks('30 1 * * *', 'America/New_York', '2025-11-01T12:00:00Z', 2), [
      '2025-11-02T05:30:00.000Z', // 01:30 EDT; not again at 06:30Z (01:30 EST)
      '2025-11-03T06:30:00.000Z',
    ]);
  });

  it('keeps an hourly pattern one real hour apart through both DST changes in Berlin', () => {
    assert.deepEqual(ticks('0 * * * *', 'Europe/Berlin', '2025-03-30T00:30:00Z', 3), [
      '2025-03-30T01:00:00.000Z',
      '2025-03-30T02:00:00.000Z',
      '2025-03-30T03:00:00.000Z',
    ]);
    assert.deepEqual(ticks('0 * * * *', 'Europe/Berlin', '2025-10-26T00:30:00Z', 3), [
      '2025-10-26T01:00:00.000Z',
      '2025-10-26T02:00:00.000Z',
      '2025-10-26T03:00:00.000Z',
    ]);
  });

  it("picks the same value for an 'H' field on every call and in every process, seeded by the schedule", () => {
    const a = CronPattern.parse('test', 'H H * * *', 'UTC', 'test.tz', 'report.daily');
    const b = CronPattern.parse('test', 'H H * * *', 'UTC', 'test.tz', 'report.daily');
    const from = at('2025-01-01T00:00:00Z');
    assert.equal(a.nextAfter(from), b.nextAfter(from));
    assert.equal(a.nextAfter(from + 86_400_000) - a.nextAfter(from), 86_400_000);
  });

  it('finds the latest tick at or before a time, the tick itself included', () => {
    const cron = CronPattern.parse('test', '*/5 * * * * *', 'UTC');
    assert.equal(iso(cron.latestAtOrBefore(at('2025-01-01T00:00:03Z'))), '2025-01-01T00:00:00.000Z');
    assert.equal(iso(cron.latestAtOrBefore(at('2025-01-01T00:00:05Z'))), '2025-01-01T00:00:05.000Z');
  });

  it('rejects invalid patterns and time zones with a ConfigurationError naming the path and the value', () => {
    const rejects = (pattern: string, tz: string, message: RegExp) =>
      assert.throws(
        () => CronPattern.parse("@Cron('x').pattern", pattern, tz, "@Cron('x').tz"),
        (error: unknown) => error instanceof ConfigurationError && message.test(error.message),
      );
    rejects(
      '61 * * * *',
      'UTC',
      /^@Cron\('x'\)\.pattern is not a valid cron pattern: .*\(got '61 \* \* \* \*'\)$/,
    );
    rejects('* * * * * * *', 'UTC', /^@Cron\('x'\)\.pattern must have 5 fields .*or 6 with seconds first/);
    rejects('0 0 30 2 *', 'UTC', /^@Cron\('x'\)\.pattern is not a valid cron pattern/);
    rejects('', 'UTC', /^@Cron\('x'\)\.pattern must be a cron pattern/);
    rejects(
      '0 9 * * *',
      'Mars/Olympus',
      /^@Cron\('x'\)\.tz must be an IANA time zone .*\(got 'Mars\/Olympus'\)$/,
    );
  });
});
