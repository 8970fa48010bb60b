import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineTopology,
  Job,
  type JobContext,
  type SlipActivity,
  type SlipLogEntry,
  type Warren,
} from '../../src';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { orders: {} } });
const fast = { type: 'fixed', delayMs: 100 } as const;

type Order = { order: string; failShip?: 'always' | 'once'; failRefund?: boolean };

/** Everything the activities did, in order: `reserve:o1`, `undo-charge:o1`, ... */
let journal: string[] = [];
/** Set once the refund service is "fixed", for the replay of a parked slip. */
let refundsBack = false;

@Job('stock.reserve', { queue: 'orders', attempts: 2, backoff: fast })
class ReserveStock implements SlipActivity<Order> {
  keys: string[] = [];
  async handle(data: Order, ctx: JobContext) {
    this.keys.push(ctx.jobId);
    journal.push(`reserve:${data.order}`);
    return { reservation: `r-${data.order}` };
  }
  async compensate(log: SlipLogEntry) {
    journal.push(`undo-reserve:${(log.result as { reservation: string }).reservation}`);
  }
}

@Job('card.charge', { queue: 'orders', attempts: 2, backoff: fast })
class ChargeCard implements SlipActivity<Order> {
  async handle(data: Order) {
    journal.push(`charge:${data.order}`);
  }
  async compensate(log: SlipLogEntry, ctx: JobContext) {
    const { order, failRefund } = log.args as Order;
    journal.push(`undo-charge:${order}:${ctx.attempt}`);
    if (failRefund && !refundsBack) throw new Error('refund refused');
  }
}

@Job('order.ship', { queue: 'orders', attempts: 3, backoff: fast })
class Ship implements SlipActivity<Order> {
  async handle(data: Order, ctx: JobContext) {
    journal.push(`ship:${data.order}:${ctx.attempt}`);
    if (data.failShip === 'always' || (data.failShip === 'once' && ctx.attempt === 1))
      throw new Error('no courier');
  }
}

@Job('order.slow', { queue: 'orders', attempts: 2, timeoutMs: 200, backoff: fast })
class SlowShip implements SlipActivity<Order> {
  async handle(data: Order, ctx: JobContext) {
    journal.push(`slow:${data.order}:${ctx.attempt}`);
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
  }
}

const activities = [ReserveStock, ChargeCard, Ship, SlowShip];

async function checkout(options: { start?: boolean } = {}) {
  const reserve = new ReserveStock();
  const warren = await testWarren({
    topology,
    handlers: [reserve, new ChargeCard(), new Ship(), new SlowShip()],
    activities,
  });
  if (options.start !== false) await warren.start();
  return { warren, reserve };
}

function runSlip(warren: Warren<object>, data: Order) {
  return warren.slip().step(ReserveStock, data).step(ChargeCard, data).step(Ship, data).run();
}

describe('routing slips', () => {
  afterEach(async () => {
    journal = [];
    refundsBack = false;
    await cleanup();
  });

  it('runs the steps in order and reports the slip completed', async () => {
    const { warren, reserve } = await checkout();
    const steps: number[] = [];
    warren.on('activityCompleted', (e) => steps.push(e.step));
    const completed = nextEvent<{ slipId: string }>(warren, 'slipCompleted');
    const { slipId } = await runSlip(warren, { order: 'o1', failShip: 'once' });
    assert.equal((await completed).slipId, slipId);
    assert.deepEqual(journal, ['reserve:o1', 'charge:o1', 'ship:o1:1', 'ship:o1:2']);
    assert.deepEqual(steps, [0, 1, 2]);
    assert.deepEqual(reserve.keys, [`${slipId}.0`], 'the idempotency key is slip id + step');
  });

  it('compensates steps 2 then 1 when step 3 fails for good, after its own attempts', async () => {
    const { warren } = await checkout();
    const faulted = nextEvent<{ step: number }>(warren, 'slipFaulted');
    const compensated = nextEvent<{ faultedStep: number }>(warren, 'slipCompensated');
    await runSlip(warren, { order: 'o2', failShip: 'always' });
    assert.equal((await faulted).step, 2);
    assert.equal((await compensated).faultedStep, 2);
    assert.deepEqual(journal, [
      'reserve:o2',
      'charge:o2',
      'ship:o2:1',
      'ship:o2:2',
      'ship:o2:3',
      'undo-charge:o2:1',
      'undo-reserve:r-o2',
    ]);
    assert.equal(await warren.deadLetters.count('orders'), 0, 'nothing parked');
  });

  it('compensates when the last attempt of a step times out (its signal aborted)', async () => {
    const { warren } = await checkout();
    const compensated = nextEvent<{ faultedStep: number }>(warren, 'slipCompensated');
    await warren.slip().step(ReserveStock, { order: 'o5' }).step(SlowShip, { order: 'o5' }).run();
    assert.equal((await compensated).faultedStep, 1);
    assert.deepEqual(journal, ['reserve:o5', 'slow:o5:1', 'slow:o5:2', 'undo-reserve:r-o5']);
    assert.equal(await warren.deadLetters.count('orders'), 0);
  });

  it('parks the slip with reason compensation-failed when a compensation keeps failing', async () => {
    const { warren } = await checkout();
    const failed = nextEvent<{ step: number }>(warren, 'slipCompensationFailed');
    const { slipId } = await runSlip(warren, { order: 'o3', failShip: 'always', failRefund: true });
    assert.equal((await failed).step, 1);
    await waitFor(() => warren.deadLetters.count('orders'), { what: 'the parked slip' });
    const [letter] = await warren.deadLetters.list('orders');
    assert.equal(letter.reason, 'compensation-failed');
    assert.equal(letter.jobId, `${slipId}.1.undo`);
    assert.equal(letter.name, 'card.charge.slip');
    assert.ok(journal.includes('undo-charge:o3:2'), 'the compensation had its own two attempts');
    assert.ok(!journal.some((line) => line.startsWith('undo-reserve')), 'nothing continued silently');
  });

  it('goes on compensating from where it was parked when the dead letter is replayed', async () => {
    const { warren } = await checkout();
    const failed = nextEvent(warren, 'slipCompensationFailed');
    await runSlip(warren, { order: 'o6', failShip: 'always', failRefund: true });
    await failed;
    await waitFor(() => warren.deadLetters.count('orders'), { what: 'the parked slip' });
    refundsBack = true;
    const compensated = nextEvent<{ faultedStep: number }>(warren, 'slipCompensated');
    assert.equal(await warren.deadLetters.replay('orders'), 1);
    assert.equal((await compensated).faultedStep, 2);
    assert.deepEqual(journal.slice(-2), ['undo-charge:o6:1', 'undo-reserve:r-o6']);
    assert.equal(await warren.deadLetters.count('orders'), 0);
  });

  it('refuses a forged slip that skips to step 3 with an empty log', async () => {
    const { warren } = await checkout();
    const forged = {
      slip: 1,
      slipId: 'forged',
      itinerary: ['stock.reserve', 'card.charge', 'order.ship'].map((activity) => ({
        activity,
        args: { order: 'f' },
      })),
      cursor: 2,
      mode: 'forward',
      log: [],
      variables: {},
    };
    const raw = await rawConnection();
    const channel = await raw.createConfirmChannel();
    const queue = planOf(warren).queues.find((q) => q.role === 'job' && q.key === 'orders')!.name;
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(forged)), {
      contentType: 'application/json',
      type: 'order.ship.slip',
      messageId: 'forged.2',
    });
    await channel.waitForConfirms();
    await raw.close();
    await waitFor(() => warren.deadLetters.count('orders'), { what: 'the refused slip' });
    const [letter] = await warren.deadLetters.list('orders');
    assert.equal(letter.reason, 'invalid-payload');
    assert.deepEqual(journal, [], 'no activity ran');
  });

  it('refuses to build a slip over a class not listed in activities', async () => {
    @Job('other.job', { queue: 'orders' })
    class Other {
      handle() {}
    }
    const { warren } = await checkout({ start: false });
    assert.throws(() => warren.slip().step(Other, {}), { code: 'CONFIGURATION_INVALID' });
  });
});
