import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BatchDirectory } from '../../../src/history/batch-directory';
import {
  encodeLookupReply,
  encodeLookupRequest,
  parseLookupReply,
  parseLookupRequest,
} from '../../../src/history/lookup-protocol';
import type { StreamRecord } from '../../../src/streams';

const record = (offset: number, text: string, headers: Record<string, unknown> = {}): StreamRecord => ({
  offset,
  content: Buffer.from(text),
  properties: { headers } as StreamRecord['properties'],
});

describe("a lookup server's directory of the history", () => {
  it('names every batch that holds a hash, oldest first', () => {
    const d = new BatchDirectory({ maxAgeMs: 60_000, maxBytes: 1e9 });
    d.add(3, Uint32Array.of(7, 8), 100, 0);
    d.add(4, Uint32Array.of(9), 100, 0);
    d.add(9, Uint32Array.of(8), 100, 0);
    assert.deepEqual(d.offsetsOf(8), [3, 9]);
    assert.deepEqual(d.offsetsOf(1), []);
    assert.equal(d.size, 3);
  });

  it('lets batches go as the stream would: past its age, or once the newer ones fill its size', () => {
    const byAge = new BatchDirectory({ maxAgeMs: 1000, maxBytes: 1e9 });
    byAge.add(0, Uint32Array.of(1), 10, 0);
    byAge.add(1, Uint32Array.of(1), 10, 700);
    byAge.add(2, Uint32Array.of(1), 10, 1600);
    assert.deepEqual(byAge.offsetsOf(1), [1, 2]);
    const bySize = new BatchDirectory({ maxAgeMs: 1e9, maxBytes: 250 });
    for (let i = 0; i < 10; i += 1) bySize.add(i, Uint32Array.of(5), 100, 0);
    assert.deepEqual(bySize.offsetsOf(5), [8, 9]);
    // the newest batch stays, however large
    bySize.add(10, Uint32Array.of(5), 1000, 0);
    assert.deepEqual(bySize.offsetsOf(5), [10]);
  });

  it('keeps a long run bounded (the dropped entries are compacted away)', () => {
    const d = new BatchDirectory({ maxAgeMs: 1e9, maxBytes: 1000 });
    for (let i = 0; i < 20_000; i += 1) d.add(i, Uint32Array.of(i), 100, 0);
    assert.equal(d.size, 10);
    assert.deepEqual(d.offsetsOf(19_999), [19_999]);
    assert.deepEqual(d.offsetsOf(5), []);
  });
});

describe('the lookup protocol', () => {
  it('carries a request, and refuses one without a job id, of another version, or signed and stale', () => {
    const request = parseLookupRequest(encodeLookupRequest('job-1'), true);
    assert.ok(!('refused' in request) && request.jobId === 'job-1');
    const refused = (o: unknown, signed = false) =>
      'refused' in parseLookupRequest(Buffer.from(JSON.stringify(o)), signed);
    assert.ok(refused({ v: 1, t: Date.now() }));
    assert.ok(refused({ v: 1, j: '', t: Date.now() }));
    assert.ok(refused({ v: 1, j: 'x'.repeat(513), t: Date.now() }));
    assert.ok(refused({ v: 2, j: 'job-1', t: Date.now() }));
    assert.ok(refused({ v: 1, j: 'job-1', t: Date.now() - 120_000 }, true));
    assert.ok(!refused({ v: 1, j: 'job-1', t: Date.now() - 120_000 }, false));
    assert.ok('refused' in parseLookupRequest(Buffer.from('not json'), false));
  });

  it('carries the records of a reply byte for byte, with their headers', () => {
    const records = [record(5, '{"e":[1]}', { 'warren-proof': 'p' }), record(9, '')];
    const reply = parseLookupReply(encodeLookupReply('ok', records));
    assert.equal(reply?.status, 'ok');
    assert.deepEqual(
      reply?.records.map((r) => [r.offset, r.content.toString(), r.properties.headers]),
      [
        [5, '{"e":[1]}', { 'warren-proof': 'p' }],
        [9, '', {}],
      ],
    );
    assert.deepEqual(parseLookupReply(encodeLookupReply('warming')), { status: 'warming', records: [] });
  });

  it('takes no reply that is cut, padded, of an unknown status or with lengths that do not add up', () => {
    const whole = encodeLookupReply('ok', [record(1, 'abcdef')]);
    assert.equal(parseLookupReply(whole.subarray(0, whole.length - 1)), undefined);
    assert.equal(parseLookupReply(Buffer.concat([whole, Buffer.from('x')])), undefined);
    assert.equal(parseLookupReply(Buffer.from([0, 0, 0, 200, 1])), undefined);
    const meta = (o: object) => {
      const json = Buffer.from(JSON.stringify(o));
      const length = Buffer.alloc(4);
      length.writeUInt32BE(json.length);
      return Buffer.concat([length, json]);
    };
    assert.equal(parseLookupReply(meta({ v: 1, s: 'maybe' })), undefined);
    assert.equal(parseLookupReply(meta({ v: 1, s: 'ok', r: [{ o: 1, n: -1, h: {} }] })), undefined);
    assert.equal(parseLookupReply(meta({ v: 1, s: 'ok', r: [{ o: 'x', n: 0, h: {} }] })), undefined);
    assert.equal(parseLookupReply(meta({ v: 1, s: 'ok', r: [{ o: 1, n: 0, h: null }] })), undefined);
  });
});
