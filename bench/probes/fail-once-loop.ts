/**
 * A probe for issue 30's retry rows, outside the bench's runner: bare amqplib's fail-once loop (30,000 jobs
 * pre-filled, prefetch 100, each first attempt republished with an attempt header on a confirm channel and
 * acked on its confirm) on a plain classic queue, round after round beside the same loop on warren's job
 * queue of a namespace declared either once for all rounds or afresh right before each round (and deleted
 * after it), as the bench's contenders do. Prints jobs/s per round.
 *
 *   npm run build && node dist/bench/probes/fail-once-loop.js [amqp-url] [rounds]
 */
import * as amqp from 'amqplib';
import { createWarren } from '../../src';
import { createNaming } from '../../src/topology';
import { benchTopology } from '../adapters/warren';

const JOBS = 30_000;
const ATTEMPT = 'probe-attempt';
const PLAIN_QUEUE = 'probe-plain';

/** One round on `queue`: the plain queue is declared here and deleted after, warren's is its warren's. */
async function failOnceRound(connection: amqp.ChannelModel, queue: string): Promise<number> {
  const setup = await connection.createConfirmChannel();
  if (queue === PLAIN_QUEUE)
    await setup.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic' } });
  const body = (i: number) => Buffer.from(JSON.stringify({ i, pad: 'x'.repeat(60) }));
  for (let i = 0; i < JOBS; i++)
    if (!setup.sendToQueue(queue, body(i), { persistent: true, contentType: 'application/json' }))
      await new Promise((resolve) => setup.once('drain', resolve));
  await setup.waitForConfirms();
  const consumer = await connection.createChannel();
  await consumer.prefetch(100);
  const republisher = await connection.createConfirmChannel();
  const started = Date.now();
  let completed = 0;
  await new Promise<void>((resolve) => {
    void consumer.consume(queue, (message) => {
      if (!message) return;
      const retried = message.properties.headers?.[ATTEMPT] !== undefined;
      void Promise.resolve().then(() => {
        if (retried) {
          consumer.ack(message);
          if (++completed === JOBS) resolve();
          return;
        }
        const properties = { persistent: true, contentType: 'application/json', headers: { [ATTEMPT]: 2 } };
        republisher.sendToQueue(queue, message.content, properties, (err) =>
          err ? consumer.nack(message) : consumer.ack(message),
        );
      });
    });
  });
  const perSecond = Math.round(JOBS / ((Date.now() - started) / 1000));
  await consumer.close();
  await republisher.close();
  if (queue === PLAIN_QUEUE) await setup.deleteQueue(queue);
  await setup.close();
  return perSecond;
}

/** warren's namespace as the bench declares it for a classic retry row without a backoff. */
function namespaceWarren(url: string, namespace: string) {
  return createWarren({
    url,
    namespace,
    topology: benchTopology({ queueType: 'classic', jobsExchange: true }),
    delay: { queueType: 'classic', levels: 4 },
    jobs: [],
  });
}

async function main(): Promise<void> {
  const url = process.argv[2] ?? 'amqp://guest:guest@127.0.0.1:5672';
  const rounds = Number(process.argv[3] ?? 3);
  if (!Number.isInteger(rounds) || rounds < 1) {
    console.error(`rounds must be a whole number of at least 1, not '${process.argv[3]}'`);
    console.error('usage: node dist/bench/probes/fail-once-loop.js [amqp-url] [rounds]');
    process.exitCode = 2;
    return;
  }
  const connection = await amqp.connect(url);
  const kept = await namespaceWarren(url, 'probe-kept');
  const results = { plain: [] as number[], keptNamespace: [] as number[], freshNamespace: [] as number[] };
  try {
    for (let round = 0; round < rounds; round++) {
      results.plain.push(await failOnceRound(connection, PLAIN_QUEUE));
      results.keptNamespace.push(await failOnceRound(connection, createNaming('probe-kept').queue('jobs')));
      const namespace = `probe-fresh-${round}`;
      const fresh = await namespaceWarren(url, namespace);
      try {
        results.freshNamespace.push(await failOnceRound(connection, createNaming(namespace).queue('jobs')));
      } finally {
        await fresh.deleteTopology();
        await fresh.close();
      }
    }
  } finally {
    await kept.deleteTopology();
    await kept.close();
    await connection.close();
  }
  console.log(`fail-once jobs/s per round on ${new URL(url).host}: ${JSON.stringify(results)}`);
}

main().catch((error: unknown) => {
  console.error(`fail-once probe: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
