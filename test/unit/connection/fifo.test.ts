import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Fifo } from '../../../src/connection/fifo';

describe('Fifo', () => {
  it('keeps order across pushes, shifts, put-backs and compaction', () => {
    const fifo = new Fifo<number>();
    const expected: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      fifo.push(i);
      expected.push(i);
    }
    for (let i = 0; i < 3_000; i++) assert.equal(fifo.shift(), expected.shift());
    fifo.unshift(-1);
    expected.unshift(-1);
    fifo.push(9_999);
    expected.push(9_999);
    assert.equal(fifo.length, expected.length);
    assert.deepEqual([...fifo], expected);
    while (fifo.length > 0) assert.equal(fifo.shift(), expected.shift());
    assert.equal(fifo.shift(), undefined);
    fifo.unshift(7);
    assert.deepEqual([...fifo], [7]);
  });

  it('retains in order and clears', () => {
    const fifo = new Fifo<number>();
    for (let i = 0; i < 10; i++) fifo.push(i);
    fifo.shift();
    fifo.retain((n) => n % 2 === 0);
    assert.deepEqual([...fifo], [2, 4, 6, 8]);
    fifo.clear();
    assert.equal(fifo.length, 0);
  });

  it('drains a large backlog in linear time', () => {
    const drainMs = (size: number) => {
      const fifo = new Fifo<number>();
      for (let i = 0; i < size; i++) fifo.push(i);
      const started = process.hrtime.bigint();
      let sum = 0;
      while (fifo.length > 0) sum += fifo.shift()!;
      assert.equal(sum, ((size - 1) * size) / 2);
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    const best = (size: number) => Math.min(drainMs(size), drainMs(size), drainMs(size));
    best(100_000); // warm-up
    const small = best(100_000);
    const large = best(800_000);
    // 8 times the backlog: about 8 times the time when linear, 64 when every shift copies the rest. On a
    // loaded machine a sub-millisecond drain is mostly noise, so a drain of 800k that stays far below
    // what copying would cost (seconds) passes too.
    assert.ok(
      large / small < 30 || large < 250,
      `100k drained in ${small.toFixed(2)} ms, 800k in ${large.toFixed(2)} ms`,
    );
  });
});
