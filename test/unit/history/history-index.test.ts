import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseIndexState } from '../../../src/history';
import {
  decodeKeyHashes,
  encodeKeyHashes,
  historyKeyHash,
  jobIdsOf,
  MAX_HEADER_KEYS,
} from '../../../src/history/index-state';
import { decodeBlock, decodeEntries, encodeBlock, keyHash, MAX_INDEX_SHARDS } from '../../../src/streams';

describe('the history index records', () => {
  it('encodes a shard of a compacted index and reads it back: its shard, range and the entries of one key', () => {
    const h = keyHash('j:job-1');
    const other = keyHash('j:job-2');
    const content = encodeBlock({
      from: 100,
      to: 5000,
      entries: [
        [h, 150],
        [other, 151],
        [h, 4999],
      ],
      marks: [],
      shard: { count: 64, index: h % 64 },
    });
    assert.equal(content.subarray(0, 4).toString(), 'WIS1');
    const block = decodeBlock(content, h);
    assert.deepEqual(block, {
      from: 100,
      to: 5000,
      offsets: [150, 4999],
      marks: [],
      shard: { count: 64, index: h % 64 },
    });
    const all = decodeEntries(content);
    assert.deepEqual(all?.entries, [
      [h, 150],
      [other, 151],
      [h, 4999],
    ]);
    assert.deepEqual(all?.shard, { count: 64, index: h % 64 });
  });

  it('reads a plain block as before, without a shard', () => {
    const h = keyHash('j:x');
    const block = decodeBlock(encodeBlock({ from: 0, to: 10, entries: [[h, 3]], marks: [7] }), h);
    assert.deepEqual(block, { from: 0, to: 10, offsets: [3], marks: [7] });
  });

  it('refuses a shard whose header no writer makes: shard past its count, no count, a cut record', () => {
    const good = encodeBlock({
      from: 0,
      to: 10,
      entries: [[1, 2]],
      marks: [],
      shard: { count: 4, index: 1 },
    });
    const pastCount = Buffer.from(good);
    pastCount.writeUInt16BE(4, 6);
    assert.equal(decodeBlock(pastCount, 1), undefined);
    const noCount = Buffer.from(good);
    noCount.writeUInt16BE(0, 4);
    assert.equal(decodeEntries(noCount), undefined);
    const tooMany = Buffer.from(good);
    tooMany.writeUInt16BE(MAX_INDEX_SHARDS + 1, 4);
    assert.equal(decodeBlock(tooMany, 1), undefined);
    assert.equal(decodeBlock(good.subarray(0, good.length - 1), 1), undefined);
    const outside = Buffer.from(good);
    outside.writeUInt32BE(11, outside.length - 4); // entry offset past `to`
    assert.equal(decodeEntries(outside), undefined);
  });

  it('indexes each job id of a batch once, and nothing that is not an id', () => {
    assert.deepEqual(
      jobIdsOf({ e: [{ j: 'a' }, { j: 'b' }, { j: 'a' }, null, { j: 7 }, 'x', { k: 'started' }] }),
      ['a', 'b'],
    );
  });

  it('states a batch’s job-id hashes in a header and reads them back; refuses a header that is not one', () => {
    assert.equal(historyKeyHash(''), 0x811c9dc5);
    assert.equal(historyKeyHash('a'), 0xe40c292c); // FNV-1a 32 of "a"
    const header = encodeKeyHashes(['job-1', 'job-2', 'job-1']);
    assert.deepEqual(decodeKeyHashes(header), [historyKeyHash('job-1'), historyKeyHash('job-2')]);
    assert.equal(encodeKeyHashes(Array.from({ length: MAX_HEADER_KEYS + 1 }, (_, i) => `j${i}`)), undefined);
    assert.equal(decodeKeyHashes(undefined), undefined);
    assert.equal(decodeKeyHashes(7), undefined);
    assert.equal(decodeKeyHashes('AAA'), undefined); // 2 bytes
    assert.equal(decodeKeyHashes('A'.repeat(100_000)), undefined);
  });
});

describe('a checkpoint of the history index', () => {
  it('takes a base and deltas of the right shape', () => {
    const state = {
      base: {
        n: 4,
        runs: [
          [10, 3],
          [20, 1],
        ],
        from: 0,
        to: 99,
      },
      deltas: [[30, 100, 120, 17]],
    };
    assert.deepEqual(parseIndexState(state), state);
    assert.deepEqual(parseIndexState({ deltas: [] }), { deltas: [] });
  });

  it('refuses one whose runs do not name every shard, or whose numbers are not offsets', () => {
    const base = { n: 4, runs: [[10, 3]], from: 0, to: 99 };
    assert.equal(parseIndexState({ base, deltas: [] }), undefined);
    assert.equal(parseIndexState({ base: { ...base, n: 0, runs: [] }, deltas: [] }), undefined);
    assert.equal(parseIndexState({ base: { ...base, runs: [[-1, 4]] }, deltas: [] }), undefined);
    assert.equal(parseIndexState({ base: { ...base, from: 100 }, deltas: [] }), undefined);
    assert.equal(parseIndexState({ deltas: [[1, 50, 40, 0]] }), undefined);
    assert.equal(parseIndexState({ deltas: [[1.5, 0, 4, 0]] }), undefined);
    assert.equal(parseIndexState({ deltas: 'x' }), undefined);
    assert.equal(parseIndexState(null), undefined);
    assert.equal(parseIndexState({ deltas: Array.from({ length: 10_000 }, () => [1, 2, 3, 4]) }), undefined);
  });
});
