import { Job, UnrecoverableError, type JobContext, type SlipActivity, type SlipLogEntry } from '../../src';

/** The order a checkout slip carries to every step (variables merged under each step's args). */
export interface Order {
  readonly orderId: string;
  readonly sku: string;
  readonly cents: number;
  readonly address: string;
}

/** What the activities did, in order: the example prints it, a test reads it. */
export const journal: string[] = [];

@Job('stock.reserve', { queue: 'checkout', attempts: 3, backoff: { type: 'fixed', delayMs: 200 } })
export class ReserveStock implements SlipActivity<Order> {
  async handle(order: Order, ctx: JobContext) {
    // ctx.jobId is `<slipId>.<step>`: stable across attempts, the key a real stock service dedupes on.
    journal.push(`reserved ${order.sku} for ${order.orderId} (key ${ctx.jobId})`);
    return { reservationId: `res-${order.orderId}` };
  }

  async compensate(log: SlipLogEntry) {
    const { reservationId } = log.result as { reservationId: string };
    journal.push(`released ${reservationId}`);
  }
}

@Job('card.charge', { queue: 'checkout', attempts: 3, backoff: { type: 'fixed', delayMs: 200 } })
export class ChargeCard implements SlipActivity<Order> {
  async handle(order: Order) {
    journal.push(`charged ${order.cents} cents for ${order.orderId}`);
    return { chargeId: `ch-${order.orderId}` };
  }

  async compensate(log: SlipLogEntry) {
    const { chargeId } = log.result as { chargeId: string };
    journal.push(`refunded ${chargeId}`);
  }
}

@Job('order.ship', { queue: 'checkout', attempts: 2, backoff: { type: 'fixed', delayMs: 200 } })
export class Ship implements SlipActivity<Order> {
  async handle(order: Order, ctx: JobContext) {
    if (order.address === 'nowhere') {
      journal.push(`courier refused ${order.orderId} (attempt ${ctx.attempt})`);
      // A plain error would be retried; this one ends the step at once and compensates the others.
      if (ctx.attempt === 2) throw new UnrecoverableError('no courier delivers there');
      throw new Error('courier busy');
    }
    journal.push(`shipped ${order.orderId} to ${order.address}`);
  }
}
