import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as amqp from 'amqplib';
import { publishBatchOnChannel } from '../../src/connection/channel-publish';
import { publishFramesSize, writePublishFrames } from '../../src/connection/publish-frames';
import { BROKER_URL, testNamespace } from '../support/test-broker';

interface ChannelEntry {
  buffer: { write(chunk: Buffer): boolean };
}
interface Internals {
  ch: number;
  connection: { channels: ChannelEntry[]; frameMax: number };
}

const ENQUEUED_AT = 1_760_000_000_123;
const VARIANTS: amqp.Options.Publish[] = [
  // warren's own properties (message/envelope.ts)
  {
    contentType: 'application/json',
    type: 'email.welcome',
    messageId: '6f1c2f0e-6a47-4a43-9f65-1f2d1c3b4a5e',
    persistent: true,
    mandatory: true,
    timestamp: 1_760_000_000,
    headers: { 'warren-attempt': 1, 'warren-enqueued-at': ENQUEUED_AT },
  },
  {
    contentType: 'application/json',
    contentEncoding: 'utf-8',
    persistent: false,
    priority: 7,
    correlationId: 'corr-ü',
    replyTo: 'reply.here',
    expiration: 60_000,
    messageId: 'job-1',
    userId: 'guest',
    appId: 'warren',
    headers: {
      small: -5,
      byteEdge: 127,
      byteOver: 128,
      negShort: -129,
      short: 30_000,
      shortOver: 40_000,
      int: 2_000_000_000,
      negInt: -40_000,
      long: 2 ** 31,
      bigLong: Number.MAX_SAFE_INTEGER,
      negLong: -(2 ** 40),
      negBigLong: -Number.MAX_SAFE_INTEGER,
      oddLong: 2 ** 40 + 12_345,
      negOddLong: -(2 ** 33) - 1,
      float: 1.5,
      text: 'é ✓ 🐇',
      asciiThenNot: 'plain-ascii-then-✓',
      longText: 'x'.repeat(100),
      empty: '',
      yes: true,
      no: false,
      nothing: null,
      skipped: undefined,
    },
  },
  {},
  { mandatory: false, headers: {} },
];

/** The bytes amqplib's own ConfirmChannel.publish writes for a message. */
function amqplibBytes(channel: amqp.ConfirmChannel, content: Buffer, options: amqp.Options.Publish): Buffer {
  const internals = channel as unknown as Internals;
  const entry = internals.connection.channels[internals.ch]!;
  const real = entry.buffer;
  const chunks: Buffer[] = [];
  entry.buffer = { write: (chunk) => chunks.push(chunk) > 0 };
  try {
    channel.publish('bench.exchange', 'route.key', content, options, () => undefined);
  } finally {
    entry.buffer = real;
  }
  return Buffer.concat(chunks);
}

describe('publish frames encoded by warren', () => {
  let connection: amqp.ChannelModel;
  let channel: amqp.ConfirmChannel;
  const queue = testNamespace('publish-frames');

  before(async () => {
    connection = await amqp.connect(BROKER_URL);
    channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: false, arguments: { 'x-expires': 600_000 } });
  });

  after(async () => {
    await channel.deleteQueue(queue).catch(() => undefined);
    await connection.close();
  });

  it('are the bytes amqplib sends, for every property and header type warren encodes', async () => {
    // a channel of its own: the amqplib calls below register confirms for bytes never sent
    const scratch = await connection.createConfirmChannel();
    const internals = scratch as unknown as Internals;
    for (const [i, options] of VARIANTS.entries()) {
      for (const content of [Buffer.from('{"userId":"u-1"}'), Buffer.alloc(0)]) {
        const message = { exchange: 'bench.exchange', routingKey: 'route.key', content, properties: options };
        const size = publishFramesSize(message, internals.connection.frameMax);
        assert.ok(size !== undefined, `variant ${i} is encoded by warren`);
        const out = Buffer.alloc(size);
        const end = writePublishFrames(out, 0, internals.ch, message);
        assert.equal(end, size, `variant ${i}: size`);
        assert.deepEqual(out, amqplibBytes(scratch, content, options), `variant ${i}: bytes`);
      }
    }
    await scratch.close();
  });

  it('leaves to amqplib what it does not cover', () => {
    const frameMax = (channel as unknown as Internals).connection.frameMax;
    const message = (properties: amqp.Options.Publish, content = Buffer.from('{}')) => ({
      exchange: '',
      routingKey: queue,
      content,
      properties,
    });
    for (const properties of [
      { headers: { nested: { a: 1 } } },
      { headers: { list: [1] } },
      { headers: { bytes: Buffer.from([1]) } },
      { headers: { nan: Number.NaN } },
      { CC: ['x'] },
      { deliveryMode: 2 },
      { messageId: 'x'.repeat(256) },
      { priority: 300 },
      { timestamp: 1.5 },
    ] as amqp.Options.Publish[]) {
      assert.equal(publishFramesSize(message(properties), frameMax), undefined, JSON.stringify(properties));
    }
    assert.equal(publishFramesSize(message({}, Buffer.alloc(frameMax)), frameMax), undefined);
  });

  it('deliver a batch mixing both paths in order, each confirmed', async () => {
    const batch = Array.from({ length: 300 }, (_, i) => ({
      exchange: '',
      routingKey: queue,
      content: Buffer.from(JSON.stringify({ i })),
      // every 7th message needs amqplib's encoder (a nested header)
      properties: i % 7 === 0 ? { messageId: `m${i}`, headers: { nested: { i } } } : { messageId: `m${i}` },
    }));
    const confirmed: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const result = publishBatchOnChannel(channel, batch, (index, error) => {
        if (error) reject(error as Error);
        confirmed.push(index);
        if (confirmed.length === batch.length) resolve();
      });
      assert.equal(result.stoppedAt, undefined);
      assert.equal(result.unencodable.size, 0);
    });
    const seen: string[] = [];
    for (let i = 0; i < batch.length; i++) {
      const message = await channel.get(queue, { noAck: true });
      assert.ok(message, `message ${i} arrived`);
      seen.push(String(message.properties.messageId));
      if (i % 7 === 0) assert.deepEqual(message.properties.headers?.nested, { i });
    }
    assert.deepEqual(
      seen,
      batch.map((m) => m.properties.messageId),
    );
  });
});
