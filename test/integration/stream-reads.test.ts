/**
 * Reads of a stream on a slow broker: a read decides a stream is empty when no record came within its first
 * wait, and a loaded broker (CI, load 8) once answered later than that, so a search of a dead-letter log that
 * held a letter found none. Here the broker is made slow on purpose, by a proxy that holds what it sends back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { lastOffset, readStream, readToEnd } from '../../src/streams';
import { slowProxy } from '../support/slow-proxy';
import { BROKER_URL, rawConnection, testNamespace } from '../support/test-broker';

describe('reading a stream from a slow broker', () => {
  const stream = `${testNamespace('reads')}.stream`;
  const records = 300;
  let direct: amqp.ChannelModel;

  before(async () => {
    direct = await rawConnection();
    const channel = await direct.createConfirmChannel();
    await channel.assertQueue(stream, { durable: true, arguments: { 'x-queue-type': 'stream' } });
    for (let i = 0; i < records; i += 1)
      channel.sendToQueue(stream, Buffer.from(String(i)), { persistent: true });
    await channel.waitForConfirms();
    await channel.close();
  });

  after(async () => {
    const channel = await direct.createChannel();
    await channel.deleteQueue(stream);
    await direct.close();
  });

  /** Through the proxy: the stream's last offset, and a read to the end that sees every record. */
  async function assertEndFoundThrough(proxy: { url: string; close(): Promise<void> }): Promise<void> {
    const connection = await amqp.connect(proxy.url);
    try {
      assert.equal(await lastOffset(() => connection.createChannel(), stream, 100), records - 1);
      const seen: number[] = [];
      await readToEnd(
        () => connection.createChannel(),
        stream,
        'first',
        { idleMs: 100, prefetch: 100 },
        (r) => {
          seen.push(Number(r.content.toString()));
        },
      );
      assert.equal(seen.length, records);
    } finally {
      await connection.close().catch(() => undefined);
      await proxy.close();
    }
  }

  it('finds the end of a stream whose replies come 700 ms late, past the 500 ms first wait', async () => {
    await assertEndFoundThrough(await slowProxy(BROKER_URL, 700));
  });

  it('finds the end of a stream whose last chunk the broker sends with pauses in the middle', async () => {
    // 40 ms between pieces of 400 bytes: about five records a piece, four quiets of a last-chunk read each
    await assertEndFoundThrough(await slowProxy(BROKER_URL, 0, { bytes: 400, gapMs: 40 }));
  });

  it('reads on when the end it was given says "empty" after records came', async () => {
    const seen: number[] = [];
    // an end finder that took the stream for empty once the read was under way (one record at a time); the
    // read then ends when nothing came for idleMs, so that is long enough that no stall of a loaded CI machine
    // between two records passes for the end (300 ms did once: 163 of 300 records)
    const end = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 150));
    await readStream(
      () => direct.createChannel(),
      stream,
      'first',
      { max: Number.POSITIVE_INFINITY, until: end, idleMs: 1_500, prefetch: 1 },
      (r) => {
        seen.push(Number(r.content.toString()));
      },
    );
    assert.equal(seen.length, records, 'every record, not those read before the verdict');
  });
});
