import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DeficitRoundRobin } from '../../../src/worker/deficit-round-robin';

function takeAll<T>(drr: DeficitRoundRobin<T>): string[] {
  const keys: string[] = [];
  for (let next = drr.next(); next !== undefined; next = drr.next()) keys.push(next.key);
  return keys;
}

describe('DeficitRoundRobin', () => {
  it('alternates between keys whatever their backlogs', () => {
    const drr = new DeficitRoundRobin<number>(() => 1);
    for (let i = 0; i < 6; i++) drr.push('a', i);
    drr.push('b', 0);
    drr.push('b', 1);
    assert.deepEqual(takeAll(drr), ['a', 'b', 'a', 'b', 'a', 'a', 'a', 'a']);
    assert.equal(drr.size, 0);
  });

  it('keeps each key in its own FIFO order', () => {
    const drr = new DeficitRoundRobin<number>(() => 1);
    for (let i = 0; i < 3; i++) drr.push('a', i);
    const items: number[] = [];
    for (let next = drr.next(); next !== undefined; next = drr.next()) items.push(next.item);
    assert.deepEqual(items, [0, 1, 2]);
  });

  it('starts a key that begins waiting within one round of the keys already waiting', () => {
    const drr = new DeficitRoundRobin<number>(() => 1);
    for (const key of ['a', 'b', 'c']) for (let i = 0; i < 100; i++) drr.push(key, i);
    drr.next();
    drr.push('late', 0);
    const order = takeAll(drr);
    assert.ok(order.indexOf('late') <= 3, `late started after ${order.indexOf('late')} others`);
  });

  it('shares in proportion to the weights', () => {
    const drr = new DeficitRoundRobin<number>((key) => (key === 'gold' ? 3 : 1));
    for (let i = 0; i < 400; i++) {
      drr.push('gold', i);
      drr.push('plain', i);
    }
    const first = takeAll(drr).slice(0, 200);
    const gold = first.filter((k) => k === 'gold').length;
    assert.equal(gold, 150);
  });

  it('gives fractional weights their share over several rounds', () => {
    const drr = new DeficitRoundRobin<number>((key) => (key === 'slow' ? 0.5 : 1));
    for (let i = 0; i < 100; i++) {
      drr.push('slow', i);
      drr.push('fast', i);
    }
    const first = takeAll(drr).slice(0, 90);
    assert.equal(first.filter((k) => k === 'slow').length, 30);
  });

  it('keeps no credit for a key that stopped waiting (an idle key saves nothing up)', () => {
    const drr = new DeficitRoundRobin<number>((key) => (key === 'a' ? 10 : 1));
    drr.push('a', 0);
    assert.equal(drr.next()?.key, 'a');
    for (let i = 0; i < 5; i++) drr.push('b', i);
    drr.push('a', 1);
    drr.push('a', 2);
    assert.deepEqual(takeAll(drr).slice(0, 3).sort(), ['a', 'a', 'b']);
  });

  it('reports the busiest keys, drains and discards', () => {
    const drr = new DeficitRoundRobin<number>(() => 1);
    for (let i = 0; i < 5; i++) drr.push('a', i);
    drr.push('b', 0);
    drr.push('c', 1);
    assert.deepEqual(drr.busiest(2), [
      { key: 'a', waiting: 5 },
      { key: 'b', waiting: 1 },
    ]);
    assert.deepEqual(drr.discard((item) => item === 1).length, 2);
    assert.equal(drr.size, 5);
    assert.deepEqual(
      drr.busiest(5).map((k) => k.key),
      ['a', 'b'],
    );
    assert.equal(drr.drain().length, 5);
    assert.equal(drr.next(), undefined);
  });
});
