import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as amqp from 'amqplib';
import {
  AggregateWriter,
  BucketCollector,
  decodeAggregate,
  resolveAggregatesOptions,
  type AggregateRecord,
} from '../../../src/aggregates';
import { createSilentLogger, type ProcessInfo } from '../../../src/core';
import { RecordTrust } from '../../../src/records';

/** What the writer appends, by stream: a channel of the writer's own, not the broker's behaviour. */
function recordingChannel(appended: { stream: string; record: AggregateRecord; headers: unknown }[]) {
  return {
    on: () => undefined,
    once: () => undefined,
    off: () => undefined,
    close: async () => undefined,
    publish: (_exchange: string, stream: string, content: Buffer, options: { headers?: unknown }) => {
      const record = decodeAggregate(content);
      assert.notEqual(typeof record, 'string');
      appended.push({ stream, record: record as AggregateRecord, headers: options.headers });
      return true;
    },
  } as unknown as amqp.Channel;
}

const info = (queue: string, attempt = 1): ProcessInfo => ({
  name: 'email.send',
  jobId: `j-${Math.random()}`,
  queue,
  queueName: `ns.${queue}`,
  exchange: '',
  routingKey: queue,
  attempt,
  enqueuedAt: Date.now() - 40,
  correlationId: undefined,
  bytes: 2,
  headers: {},
});

describe('the aggregates writer', () => {
  it('appends the open bucket and its partial hour and day on stop, each signed for its level', async () => {
    const options = resolveAggregatesOptions({ bucketMs: 60_000 });
    const collector = new BucketCollector(options.bucketMs);
    const trust = new RecordTrust('ns', undefined, createSilentLogger());
    const streams = { bucket: 'ns.b', hour: 'ns.h', day: 'ns.d' };
    const writer = new AggregateWriter(
      streams,
      options,
      { p: 'proc-1', h: 'host' },
      collector,
      createSilentLogger(),
      trust,
    );
    const appended: { stream: string; record: AggregateRecord; headers: unknown }[] = [];
    await writer.open(async () => recordingChannel(appended));
    for (let i = 0; i < 10; i++)
      collector
        .process(info('email'))
        .end(i < 8 ? { kind: 'completed' } : { kind: 'failed', error: new Error('x') });
    collector.process(info('email', 2)).end({ kind: 'aborted' });
    await writer.stop();
    assert.deepEqual(
      appended.map((a) => a.stream),
      ['ns.b', 'ns.h', 'ns.d'],
    );
    for (const { record } of appended) {
      assert.equal(record.p, 'proc-1');
      assert.equal(record.s % record.l, 0, 'aligned on its level');
      const email = record.q.email!;
      assert.deepEqual([email.c, email.f, email.r, email.d], [8, 2, 0, 0]);
      assert.equal(
        email.w.reduce((n, [, count]) => n + count, 0),
        10,
        'the wait of first attempts only',
      );
      assert.equal(
        email.x.reduce((n, [, count]) => n + count, 0),
        10,
        'the run of every attempt that ended',
      );
      assert.equal(email.n, undefined, 'no broker to ask: no depth');
    }
    assert.deepEqual(
      appended.map((a) => a.record.l),
      [60_000, 3_600_000, 86_400_000],
    );
  });
});
