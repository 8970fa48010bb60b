import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  AggregateMerger,
  align,
  binOf,
  binValue,
  decodeAggregate,
  DenseHistogram,
  encodeAggregate,
  MAX_BIN,
  MergedHistogram,
  resolveAggregatesOptions,
  type AggregateRecord,
} from '../../../src/aggregates';
import { ConfigurationError } from '../../../src/core';

function record(p: string, s: number, counts: Partial<AggregateRecord['q'][string]> = {}): AggregateRecord {
  return {
    v: 1,
    p,
    h: 'host',
    s,
    l: 1000,
    q: { email: { c: 9, f: 1, r: 0, d: 1, w: [], x: [], ...counts } },
  };
}

describe('latency histogram', () => {
  it('reads a percentile within 4.5 % of the value, from bins shared by every process', () => {
    for (const ms of [1, 3, 25, 250, 4000, 90_000]) {
      const value = binValue(binOf(ms));
      assert.ok(Math.abs(value - ms) / ms < 0.045, `${ms} ms reads as ${value}`);
    }
    assert.equal(binOf(-5), 0);
    assert.equal(binOf(Number.NaN), 0);
    assert.equal(binOf(1e30), MAX_BIN);
  });

  it('merges processes bin by bin, so the p95 of the whole is right where averaging p95s is not', () => {
    const fast = new DenseHistogram();
    const slow = new DenseHistogram();
    for (let i = 0; i < 95; i++) fast.add(10);
    for (let i = 0; i < 5; i++) slow.add(1000);
    const merged = new MergedHistogram();
    merged.add(fast.sparse());
    merged.add(slow.sparse());
    assert.ok(Math.abs(merged.quantile(0.5)! - 10) < 0.5);
    assert.ok(Math.abs(merged.quantile(0.95)! - 10) < 0.5);
    assert.ok(Math.abs(merged.quantile(0.99)! - 1000) < 45);
    assert.equal(new MergedHistogram().quantile(0.5), null);
  });
});

describe('aggregate records', () => {
  it('round-trips a record and refuses each malformed shape', () => {
    const r = record('p1', 5000, { w: [[3, 2]], x: [[10, 1]], n: 4, o: 1200 });
    assert.deepEqual(JSON.parse(JSON.stringify(decodeAggregate(encodeAggregate(r)))), r);
    const bad = [
      'not json',
      '{"v":2}',
      JSON.stringify({ ...r, s: 5500 }), // not a multiple of its length
      JSON.stringify({ ...r, l: 0 }),
      JSON.stringify({ ...r, q: { email: { ...r.q.email, c: -1 } } }),
      JSON.stringify({ ...r, q: { email: { ...r.q.email, w: [[MAX_BIN + 1, 1]] } } }),
      JSON.stringify({
        ...r,
        q: {
          email: {
            ...r.q.email,
            w: [
              [3, 1],
              [2, 1],
            ],
          },
        },
      }), // bins not ascending
      JSON.stringify({ ...r, q: { email: { ...r.q.email, x: [[3, 0]] } } }),
      JSON.stringify({ ...r, q: { email: { ...r.q.email, n: 1.5 } } }),
      JSON.stringify({ ...r, p: 'x'.repeat(201) }),
    ];
    for (const body of bad) assert.equal(decodeAggregate(Buffer.from(body)), 'malformed', body.slice(0, 80));
    assert.equal(decodeAggregate(Buffer.alloc(5 * 1024 ** 2, 32)), 'too-large');
  });

  it('adds processes per bucket, ignores a copy, keeps the largest depth, and fills empty buckets', () => {
    const merger = new AggregateMerger();
    assert.equal(merger.add(record('p1', 1000, { n: 3 })), true);
    assert.equal(merger.add(record('p2', 1000, { n: 7 })), true);
    assert.equal(merger.add(record('p1', 1000, { n: 99 })), false, 'a copy appended again');
    merger.add(record('p1', 3000));
    const [all, email] = merger.series(0, 4000, 1000);
    assert.equal(all!.queue, '*');
    assert.deepEqual(
      email!.points.map((p) => [p.start, p.completed, p.failed, p.deadLettered, p.depth, p.processes]),
      [
        [0, 0, 0, 0, null, 0],
        [1000, 18, 2, 2, 7, 2],
        [2000, 0, 0, 0, null, 0],
        [3000, 9, 1, 1, null, 1],
      ],
    );
  });

  it('aligns buckets on the epoch, whatever the clock of the process', () => {
    assert.equal(align(61_999, 60_000), 60_000);
    assert.equal(align(60_000, 60_000), 60_000);
    assert.equal(align(59_999, 60_000), 0);
  });

  it('validates its options by path', () => {
    assert.equal(resolveAggregatesOptions().bucketMs, 60_000);
    assert.throws(() => resolveAggregatesOptions({ bucketMs: 10 }), ConfigurationError);
    assert.throws(
      () => resolveAggregatesOptions({ bucket: 1000 } as never),
      /aggregates\.bucket is not an option/,
    );
  });
});
