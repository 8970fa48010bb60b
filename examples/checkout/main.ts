/**
 * The checkout example: a routing slip reserves stock, charges the card and ships. One order ships; the
 * other cannot be shipped, so its charge is refunded and its stock released, newest step first.
 * Run with `npm run build && node dist/examples/checkout/main.js`.
 */
import { createWarren, defineTopology } from '../../src';
import { ChargeCard, journal, ReserveStock, Ship, type Order } from './activities';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const topology = defineTopology({ queues: { checkout: {} } });

async function main(): Promise<void> {
  const warren = await createWarren({
    url,
    namespace: `warren-checkout-${process.pid}`,
    topology,
    activities: [ReserveStock, ChargeCard, Ship],
    handlers: [new ReserveStock(), new ChargeCard(), new Ship()],
  });
  warren.closeOnSignals();
  const ended = new Map<string, string>();
  warren.on('slipCompleted', (slip) => ended.set(slip.slipId, 'completed'));
  warren.on('slipCompensated', (slip) => ended.set(slip.slipId, 'compensated'));
  warren.on('slipCompensationFailed', (slip) => ended.set(slip.slipId, 'parked'));
  await warren.start();

  const checkout = (order: Order) =>
    warren
      .slip()
      .step(ReserveStock, order)
      .step(ChargeCard, order)
      .step(Ship, order)
      .run({ slipId: order.orderId });
  await checkout({ orderId: 'order-1', sku: 'book', cents: 1200, address: '1 Main St' });
  await checkout({ orderId: 'order-2', sku: 'lamp', cents: 4500, address: 'nowhere' });

  const deadline = Date.now() + 30_000;
  while (ended.size < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  for (const line of journal) console.log(`  ${line}`);
  console.log(`done: order-1 ${ended.get('order-1')}, order-2 ${ended.get('order-2')}`);

  await warren.deleteTopology();
  await warren.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
