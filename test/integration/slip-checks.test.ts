import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { z } from 'zod';
import {
  defineTopology,
  Job,
  PayloadValidationError,
  type JobContext,
  type SlipActivity,
  type SlipLogEntry,
} from '../../src';
import { createBrokerUser, deleteBrokerUser, writeOnly, type BrokerUser } from '../support/broker-user';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { pay: { bind: { exchange: 'jobs', pattern: 'pay.#' } } },
});
const charges: number[] = [];

@Job('pay.charge', { queue: 'pay', attempts: 1, schema: z.object({ amount: z.number().max(1000) }) })
class Charge implements SlipActivity<{ amount: number }> {
  handle(data: { amount: number }, _ctx: JobContext) {
    charges.push(data.amount);
  }
}

@Job('pay.limited', { queue: 'pay', attempts: 1, limiter: { max: 2, durationMs: 3_600_000 } })
class Limited implements SlipActivity<{ amount: number }> {
  handle(data: { amount: number }, _ctx: JobContext) {
    charges.push(data.amount);
  }
}

const undone: string[] = [];

@Job('pay.reserve', { queue: 'pay', attempts: 1 })
class Reserve implements SlipActivity<{ order: string }> {
  handle(data: { order: string }) {
    return { reserved: data.order };
  }
  compensate(log: SlipLogEntry) {
    undone.push((log.args as { order: string }).order);
  }
}

@Job('pay.fail', { queue: 'pay', attempts: 1 })
class Fail implements SlipActivity<{ order: string }> {
  handle(): never {
    throw new Error('card declined');
  }
}

const KEY = 'slip-checks-test-signing-key-0123456789';
const users: BrokerUser[] = [];

/** Publishes slip messages as a user who may write on the jobs exchange only. */
async function publishAs(
  exchange: string,
  messages: readonly { readonly name: string; readonly id: string; readonly envelope: unknown }[],
): Promise<void> {
  const user = await createBrokerUser('slipper', writeOnly(exchange));
  users.push(user);
  const connection = await amqp.connect(user.url);
  try {
    const channel = await connection.createConfirmChannel();
    for (const { name, id, envelope } of messages)
      channel.publish(exchange, name, Buffer.from(JSON.stringify(envelope)), {
        type: name,
        messageId: id,
        contentType: 'application/json',
      });
    await channel.waitForConfirms();
  } finally {
    await connection.close().catch(() => undefined);
  }
}

afterEach(async () => {
  await cleanup();
  for (const user of users.splice(0)) await deleteBrokerUser(user);
  charges.length = 0;
  undone.length = 0;
});

describe('slip steps are checked like their activity’s jobs', () => {
  it('refuses at run() a step whose arguments the activity’s schema refuses, and runs a valid one', async () => {
    const warren = await testWarren({ topology, handlers: [new Charge()], activities: [Charge] });
    await warren.start();
    await assert.rejects(warren.slip().step(Charge, { amount: 1e9 }).run(), PayloadValidationError);
    await warren.slip().step(Charge, { amount: 5 }).run();
    await waitFor(() => charges.includes(5), { what: 'the valid step to run' });
  });

  it('never runs a step another user published on the jobs exchange with arguments the schema refuses', async () => {
    const namespace = testNamespace('slipcheck');
    const warren = await testWarren({ namespace, topology, handlers: [new Charge()], activities: [Charge] });
    await warren.start();
    const exchange = planOf(warren).naming.exchange('jobs');
    const completed = nextEvent<{ slipId: string }>(
      warren,
      'slipCompleted',
      (e) => e.slipId === 'fine',
      15_000,
    );
    const faulted = nextEvent<{ slipId: string }>(
      warren,
      'slipFaulted',
      (e) => e.slipId === 'forged',
      15_000,
    );
    const envelope = (amount: number, slipId: string) => ({
      slip: 1,
      slipId,
      itinerary: [{ activity: 'pay.charge', args: { amount } }],
      cursor: 0,
      mode: 'forward',
      log: [],
      variables: {},
    });
    await publishAs(exchange, [
      { name: 'pay.charge.slip', id: 'forged.0', envelope: envelope(1e9, 'forged') },
      { name: 'pay.charge.slip', id: 'fine.0', envelope: envelope(7, 'fine') },
    ]);
    await Promise.all([completed, faulted]);
    assert.deepEqual(charges, [7]);
  });

  it('runs a slip step under its activity’s limiter, as the plain job', async () => {
    const warren = await testWarren({ topology, handlers: [new Limited()], activities: [Limited] });
    await warren.start();
    const limited: { name: string; delayMs: number }[] = [];
    warren.on('rateLimited', (e) => limited.push(e));
    for (const amount of [1, 2, 3]) await warren.slip().step(Limited, { amount }).run();
    // 2 permits an hour: at least one of the three steps waits out its limiter's waitMs and is re-delayed
    // (the permits themselves may come late on a loaded machine: the refiller elects a leader first)
    await waitFor(() => limited.length > 0, {
      what: 'a slip step re-delayed for a permit',
      timeoutMs: 45_000,
    });
    assert.ok(limited.every((e) => e.name === 'pay.limited.slip'));
    assert.ok(charges.length <= 2, `ran ${charges.length} steps with 2 permits`);
  });

  it('with a key, a forged compensate-mode slip undoes nothing, while a genuine slip that fails is compensated', async () => {
    const namespace = testNamespace('slipcheck');
    const warren = await testWarren({
      namespace,
      topology,
      handlers: [new Reserve(), new Fail()],
      activities: [Reserve, Fail],
      signingKey: KEY,
    });
    await warren.start();
    const exchange = planOf(warren).naming.exchange('jobs');
    const refused = nextEvent<{ jobId: string; reason: string }>(
      warren,
      'deadLettered',
      (e) => e.jobId === 'forged.0.undo',
      15_000,
    );
    const forged = {
      slip: 1,
      slipId: 'forged',
      itinerary: [
        { activity: 'pay.reserve', args: { order: 'victim' } },
        { activity: 'pay.fail', args: { order: 'victim' } },
      ],
      cursor: 0,
      mode: 'compensate',
      log: [{ activity: 'pay.reserve', step: 0, args: { order: 'victim' }, result: null, completedAt: 1 }],
      variables: {},
      fault: { step: 1, activity: 'pay.fail', error: 'forged' },
    };
    await publishAs(exchange, [{ name: 'pay.reserve.slip', id: 'forged.0.undo', envelope: forged }]);
    assert.equal((await refused).reason, 'invalid-payload');
    const compensated = nextEvent<{ slipId: string }>(
      warren,
      'slipCompensated',
      (e) => e.slipId === 'real',
      15_000,
    );
    await warren
      .slip()
      .step(Reserve, { order: 'real' })
      .step(Fail, { order: 'real' })
      .run({ slipId: 'real' });
    await compensated;
    assert.deepEqual(undone, ['real']);
  });
});
