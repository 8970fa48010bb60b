import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as amqp from 'amqplib';
import type { OutgoingMessage } from '../../../src/connection';
import { newPending } from '../../../src/connection/pending-publish';
import { HEADERS, republishProperties } from '../../../src/message';
import type { DecodedJob } from '../../../src/message';
import type { DelayPlan, PlannedJobQueue } from '../../../src/topology';
import { Delivery, type JobDelivery, type Settlement } from '../../../src/worker/delivery';
import { Republisher } from '../../../src/worker/republisher';

/**
 * Every object a retry's copy keeps alive until the broker confirms it is an instance of a class. V8
 * tracks where object literals are made, and once a burst of them outlived a young-generation collection
 * (a confirm channel still opening, a bulk publish before), it allocates every later one from that place in
 * the old generation for good, together with everything they hold: the worker then spent a quarter more CPU
 * a retried job (docs/performance.md, "Why warren's retries cost more on one machine"). Class instances are
 * never pretenured that way, so a literal creeping back in here is a regression this test names.
 */
function isLiteral(value: object): boolean {
  return Object.getPrototypeOf(value) === Object.prototype;
}

const settlement: Settlement = {
  ack: () => undefined,
  flush: () => undefined,
  requeue: () => undefined,
  reject: () => undefined,
  retryInPlace: () => undefined,
};
const message = {
  content: Buffer.from('{}'),
  properties: { headers: { [HEADERS.attempt]: 1 }, messageId: 'j1', type: 'mail.send' },
  fields: { redelivered: false, deliveryTag: 1 },
} as unknown as amqp.ConsumeMessage;
const queue = { key: 'mail', name: 'app.mail' } as PlannedJobQueue;
const job = { jobId: 'j1', name: 'mail.send', attempt: 1 } as DecodedJob;
const log = { info: () => undefined, warn: () => undefined, error: () => undefined } as never;

describe("a retry's copy", () => {
  it('is made of class instances: message, error context, properties and pending entry', async () => {
    const sent: OutgoingMessage[] = [];
    const republisher = new Republisher({
      delay: {
        maxDelayMs: 60_000,
        holds: [],
        levels: [],
        levelCount: 0,
        unitMs: 100,
      } as unknown as DelayPlan,
      confirms: {
        send: async (outgoing) => {
          sent.push(outgoing);
        },
      },
      republishTimeoutMs: 10_000,
      emit: () => undefined,
      log,
    });
    const delivery: Delivery = new Delivery(message, queue, settlement);
    delivery.assignJob(job);
    assert.equal(
      await republisher.delayed(delivery satisfies JobDelivery, 0, { [HEADERS.attempt]: 2 }),
      true,
    );
    const [outgoing] = sent;
    assert.ok(outgoing);
    assert.equal(outgoing.routingKey, 'app.mail');
    assert.equal(outgoing.properties.headers?.[HEADERS.attempt], 2);
    for (const made of [outgoing, outgoing.context, outgoing.properties])
      assert.equal(isLiteral(made), false, `${JSON.stringify(made).slice(0, 60)} is an object literal`);
    assert.equal(
      isLiteral(
        newPending(
          outgoing,
          () => undefined,
          () => undefined,
          undefined,
          0,
        ),
      ),
      false,
    );
    assert.equal(isLiteral(republishProperties(message.properties, {})), false);
  });
});
