import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PublishError } from '../../../src';
import { checkJobKey, deliveredKey, keyHash, laneOf, resolveJobKey } from '../../../src/message';

const context = { jobName: 'import.row', queue: 'imports' };

function invalid(run: () => unknown, detail: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof PublishError);
    assert.equal(error.code, 'PUBLISH_INVALID_KEY');
    assert.equal(error.jobName, 'import.row');
    assert.match(error.message, detail);
    return true;
  });
}

describe('job keys', () => {
  it('accepts a non-empty string of up to 255 UTF-8 bytes', () => {
    assert.equal(checkJobKey('tenant-1', context), 'tenant-1');
    assert.equal(checkJobKey('é'.repeat(127), context).length, 127);
  });

  it('refuses a key that is not a string, empty or over 255 bytes with PUBLISH_INVALID_KEY', () => {
    invalid(() => checkJobKey(42, context), /must be a string \(got number\)/);
    invalid(() => checkJobKey(null, context), /got null/);
    invalid(() => checkJobKey('', context), /must not be empty/);
    invalid(() => checkJobKey('x'.repeat(256), context), /at most 255 UTF-8 bytes \(got 256\)/);
    invalid(() => checkJobKey('é'.repeat(128), context), /got 256/);
  });

  it("takes the publish's key over the key function, and wraps a key function that throws", () => {
    const keyOf = (data: { tenant: string }) => data.tenant;
    assert.equal(resolveJobKey(undefined, keyOf, { tenant: 't1' }, context), 't1');
    assert.equal(resolveJobKey('t2', keyOf, { tenant: 't1' }, context), 't2');
    assert.equal(resolveJobKey(undefined, undefined, {}, context), undefined);
    invalid(
      () =>
        resolveJobKey(
          undefined,
          () => {
            throw new Error('no tenant');
          },
          {},
          context,
        ),
      /function threw: no tenant/,
    );
    invalid(() => resolveJobKey(undefined, (data: { n: number }) => data.n, { n: 1 }, context), /string/);
  });

  it('reads a valid warren-key header, and nothing from an invalid one', () => {
    assert.equal(deliveredKey({ 'warren-key': 'a' }), 'a');
    assert.equal(deliveredKey({ 'warren-key': Buffer.from('b') }), 'b');
    assert.equal(deliveredKey({ 'warren-key': '' }), undefined);
    assert.equal(deliveredKey({ 'warren-key': 7 }), undefined);
    assert.equal(deliveredKey({}), undefined);
    assert.equal(deliveredKey(undefined), undefined);
  });

  it('hashes with 32-bit FNV-1a, as the docs spell it for foreign publishers', () => {
    // reference values of FNV-1a 32
    assert.equal(keyHash(''), 0x811c9dc5);
    assert.equal(keyHash('a'), 0xe40c292c);
    assert.equal(keyHash('foobar'), 0xbf9cf968);
    assert.equal(laneOf('foobar', 8), 0xbf9cf968 % 8);
  });

  it('spreads 10,000 keys over the lanes within 10 % of even', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 10_000; i++) counts[laneOf(`tenant-${i}`, 8)]! += 1;
    for (const n of counts) assert.ok(Math.abs(n - 1250) < 125, `lane count ${n}`);
  });
});
