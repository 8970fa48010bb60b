import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Job } from '../../../src/decorators';
import { SlipBuilder } from '../../../src/workflow';

@Job('stock.reserve', { queue: 'stock' })
class ReserveStock {
  async handle(): Promise<void> {}
}

@Job('stock.unlisted', { queue: 'stock' })
class Unlisted {
  async handle(): Promise<void> {}
}

const builder = () =>
  new SlipBuilder(() => Promise.reject(new Error('not published in this test')), new Set(['stock.reserve']));

describe('the slip builder', () => {
  it('is not a thenable: awaiting a builder gives the builder back and adds no step', async () => {
    const slip = builder().step(ReserveStock, {});
    assert.equal('then' in slip, false);
    const awaited = await slip;
    assert.equal(awaited, slip);
  });

  it('appends a step with step() and returns a new builder', () => {
    const empty = builder();
    const one = empty.step(ReserveStock, {});
    assert.notEqual(one, empty);
    assert.throws(() => empty.step(Unlisted, {}), { code: 'CONFIGURATION_INVALID' });
  });
});
