import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMark, encodeMark } from '../../../src/aggregates';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('graph marks', () => {
  it('reads back what it wrote: a deploy with its note and release, a pause naming its queue', () => {
    const deploy = {
      kind: 'deploy',
      at: 1_700_000_000_000,
      host: 'web-1',
      note: 'n',
      release: '1.0',
    } as const;
    assert.deepEqual(decodeMark(encodeMark(deploy)), deploy);
    const pause = { kind: 'pause', at: 5, host: 'web-1', queue: 'email' } as const;
    assert.deepEqual(decodeMark(encodeMark(pause)), pause);
  });

  it('refuses what is not a mark: bad JSON, another kind, a deploy naming a queue, a pause without one, long text', () => {
    assert.equal(decodeMark(Buffer.from('{')), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'restart', t: 1, h: 'x' })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'deploy', t: 1, h: 'x', q: 'email' })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'pause', t: 1, h: 'x' })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'deploy', t: -1, h: 'x' })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'deploy', t: 1, h: 'x', n: 'n'.repeat(201) })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'deploy', t: 1, h: 'x', r: 'r'.repeat(101) })), 'malformed');
    assert.equal(decodeMark(body({ v: 1, k: 'deploy', t: 1, h: 'x', n: 'n'.repeat(5000) })), 'too-large');
  });
});
