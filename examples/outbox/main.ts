/**
 * The transactional outbox example: an order and its "send receipt" job are written in one
 * PostgreSQL transaction, so the job exists exactly when the order does. A failed order rolls back
 * and publishes nothing; the relay (in this same process) publishes the committed job once the broker
 * confirms it. Run with `npm run build && node dist/examples/outbox/main.js` (needs DATABASE_URL, or
 * a local PostgreSQL, and RabbitMQ).
 */
import { Pool, type PoolClient } from 'pg';
import { createWarren, defineTopology, Job, type JobContext, type JobHandler } from '../../src';

const topology = defineTopology({ queues: { receipts: {} } });

interface Receipt {
  orderId: number;
}

@Job('receipt.send', { queue: 'receipts', attempts: 5 })
class SendReceipt implements JobHandler<Receipt> {
  readonly sent: number[] = [];
  async handle(data: Receipt, ctx: JobContext) {
    this.sent.push(data.orderId);
    console.log(`  receipt for order ${data.orderId} sent (job ${ctx.jobId})`);
  }
}

/** Inserts an order and its receipt job in one transaction: both commit, or neither. */
async function placeOrder(
  client: PoolClient,
  warren: Awaited<ReturnType<typeof createWarren>>,
  total: number,
): Promise<number> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query('INSERT INTO example_orders (total) VALUES ($1) RETURNING id', [
      total,
    ]);
    const orderId = Number(rows[0].id);
    // The job id ties the job to the order: consumers with an idempotency store run it once.
    await warren.outbox.publish(client, SendReceipt, { orderId }, { jobId: `receipt-${orderId}` });
    if (total < 0) throw new Error(`order total ${total} is negative`);
    await client.query('COMMIT');
    return orderId;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

async function main(): Promise<void> {
  const pool = new Pool({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  });
  await pool.query(
    'CREATE TABLE IF NOT EXISTS example_orders (id bigserial PRIMARY KEY, total int NOT NULL)',
  );
  const receipts = new SendReceipt();
  const warren = await createWarren({
    url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    namespace: 'warren-example-outbox',
    topology,
    handlers: [receipts],
    // Creates the table if missing (or use migrations/warren_outbox.sql) and relays it from here.
    outbox: { pool, tableName: 'example_warren_outbox' },
  });
  await warren.start();
  const client = await pool.connect();
  let committed = 0;
  let rolledBack = 0;
  try {
    for (const total of [42, -1, 17]) {
      try {
        const orderId = await placeOrder(client, warren, total);
        committed++;
        console.log(`order ${orderId} committed`);
      } catch (error) {
        rolledBack++;
        console.log(`order rolled back: ${(error as Error).message}`);
      }
    }
  } finally {
    client.release();
  }
  const deadline = Date.now() + 20_000;
  while (receipts.sent.length < committed && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  // A row is deleted just after the broker's confirm, which may come a moment after the job ran.
  while ((await warren.outbox.backlog()).size > 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  console.log('outbox backlog:', await warren.outbox.backlog());
  console.log(
    `done: ${receipts.sent.length} receipts sent for ${committed} orders, ${rolledBack} rolled back`,
  );
  await warren.deleteTopology();
  await warren.close();
  await pool.query('DROP TABLE example_orders, example_warren_outbox');
  await pool.end();
  if (receipts.sent.length !== committed) process.exit(1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
