import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileFilter } from '../../../src/dead-letter-log/letter-filter';
import { decodeRecord, letterProperties, markerMessage } from '../../../src/dead-letter-log/log-record';
import { resolveDeadLetterLogOptions } from '../../../src/dead-letter-log';
import type { LoggedLetter } from '../../../src/dead-letter-log';
import { ConfigurationError, createSilentLogger } from '../../../src/core';
import { RecordTrust } from '../../../src/records';

const letter: LoggedLetter = {
  offset: 7,
  jobId: 'j-1',
  name: 'billing.charge',
  queue: 'billing',
  reason: 'attempts-exhausted',
  error: 'TypeError: card of cu1 declined',
  errorClass: 'TypeError',
  attempt: 3,
  deadAt: 1_000,
  replayOf: undefined,
  data: { customer: { id: 42 }, tags: ['a'] },
};

describe('dead-letter filters', () => {
  it('matches every given field and ignores the absent ones', () => {
    assert.ok(compileFilter({})(letter, 'dead'));
    assert.ok(compileFilter({ jobId: 'j-1', name: 'billing.charge', queue: 'billing' })(letter, 'dead'));
    assert.ok(!compileFilter({ jobId: 'j-1', name: 'other' })(letter, 'dead'));
    assert.ok(compileFilter({ reason: 'attempts-exhausted', errorClass: 'TypeError' })(letter, 'dead'));
    assert.ok(!compileFilter({ errorClass: 'RangeError' })(letter, 'dead'));
  });

  it('finds error text in any case, a time range half-open, a state, offsets', () => {
    assert.ok(compileFilter({ error: 'CARD OF CU1' })(letter, 'dead'));
    assert.ok(compileFilter({ since: new Date(1_000), until: new Date(1_001) })(letter, 'dead'));
    assert.ok(!compileFilter({ until: new Date(1_000) })(letter, 'dead'));
    assert.ok(!compileFilter({ state: 'dead' })(letter, 'replayed'));
    assert.ok(compileFilter({ offsets: [3, 7] })(letter, 'dead'));
    assert.ok(!compileFilter({ offsets: [3] })(letter, 'dead'));
  });

  it('compares a payload field by dotted path as text, never an object', () => {
    assert.ok(compileFilter({ field: { path: 'customer.id', equals: '42' } })(letter, 'dead'));
    assert.ok(compileFilter({ field: { path: 'customer.id', equals: 42 } })(letter, 'dead'));
    assert.ok(!compileFilter({ field: { path: 'customer', equals: '[object Object]' } })(letter, 'dead'));
    assert.ok(!compileFilter({ field: { path: 'customer.id.x', equals: '42' } })(letter, 'dead'));
  });
});

describe('dead-letter log records', () => {
  it('fills warren headers from the broker death record and drops x-death', () => {
    const props = letterProperties(
      {
        content: Buffer.from('{}'),
        fields: {} as never,
        properties: {
          messageId: 'm',
          type: 'stale.ping',
          headers: { 'x-first-death-reason': 'delivery_limit', 'x-death': [{}] },
        } as never,
      },
      'stale',
      5,
    );
    assert.equal(props.headers!['warren-dead-reason'], 'delivery-limit');
    assert.equal(props.headers!['warren-queue'], 'stale');
    assert.equal(props.headers!['warren-dead-at'], 5);
    assert.equal(props.headers!['warren-log-kind'], 'letter');
    assert.equal(props.headers!['x-death'], undefined);
    const record = decodeRecord(9, Buffer.from('{"a":1}'), props as never);
    assert.equal(record?.kind, 'letter');
    if (record?.kind === 'letter')
      assert.deepEqual([record.letter.reason, record.letter.data], ['delivery-limit', { a: 1 }]);
  });

  it('reads a marker back and ignores records warren did not write', () => {
    const trust = new RecordTrust('ns', undefined, createSilentLogger());
    const m = markerMessage({ action: 'replayed', offsets: [1, 2], at: 3, to: 'q' }, trust);
    assert.deepEqual(decodeRecord(4, m.content, m.properties as never), {
      kind: 'marker',
      offset: 4,
      marker: { action: 'replayed', offsets: [1, 2], at: 3, to: 'q' },
    });
    assert.equal(decodeRecord(5, Buffer.from('x'), { headers: {} } as never), undefined);
  });

  it('ignores a marker whose offsets are not a list of offsets, or that names too many', () => {
    const marker = (body: unknown) =>
      decodeRecord(6, Buffer.from(JSON.stringify(body)), {
        headers: { 'warren-log-kind': 'marker' },
      } as never);
    assert.equal(marker({ offsets: 7 }), undefined);
    assert.equal(marker({ action: 'purged', offsets: 7, at: 1 }), undefined);
    assert.equal(marker({ action: 'purged', offsets: [-1], at: 1 }), undefined);
    assert.equal(marker({ action: 'purged', offsets: ['1'], at: 1 }), undefined);
    assert.equal(marker({ action: 'deleted', offsets: [1], at: 1 }), undefined);
    assert.equal(
      marker({ action: 'purged', offsets: Array.from({ length: 5001 }, (_, i) => i), at: 1 }),
      undefined,
    );
    assert.equal(marker({ action: 'purged', offsets: [1], at: 1 })?.kind, 'marker');
  });

  it('resolves retention with defaults and refuses a segment above the size cap', () => {
    const d = resolveDeadLetterLogOptions();
    assert.deepEqual(
      [d.maxAgeMs, d.maxBytes, d.segmentBytes],
      [14 * 24 * 3600_000, 1024 ** 3, 16 * 1024 ** 2],
    );
    assert.equal(resolveDeadLetterLogOptions({ maxBytes: 1000 }).segmentBytes, 1000);
    assert.throws(
      () => resolveDeadLetterLogOptions({ maxBytes: 10, segmentBytes: 20 }),
      (e: unknown) =>
        e instanceof ConfigurationError && /deadLetterLog.segmentBytes must be <= maxBytes/.test(e.message),
    );
    assert.throws(() => resolveDeadLetterLogOptions({ maxAgeMs: 5 }), ConfigurationError);
  });
});
