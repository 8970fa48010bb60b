/**
 * A probe for issue 30's retry rows on RabbitMQ 3.10 to 3.12: does classic queue version 2 (`x-queue-version`,
 * an opt-in there, the only version on 4.x) lower what warren's messages cost the broker on the retry path?
 * Bare amqplib's fail-once loop (fail-once-round.ts) at backoff 0 on one classic queue, with raw amqplib's
 * messages and with warren's (src/message), each on a queue of version 1 and of version 2. The four alternate
 * round by round, in an order that turns each round; prints jobs/s per round, the medians, and each median
 * beside raw amqplib's on version 1 (what raw amqplib declares on 3.10 without asking).
 *
 *   npm run build && node dist/bench/probes/queue-version.js [amqp-url] [rounds]
 */
import * as amqp from 'amqplib';
import {
  printBesideFirst,
  probeArguments,
  RAW_MESSAGES,
  type RoundMessages,
  roundOnClassicQueue,
  runProbe,
  turningRounds,
} from './fail-once-round';
import { WARREN_MESSAGES } from './warren-messages';

const QUEUE = 'probe-queue-version';

const SHAPES: ReadonlyArray<readonly [string, RoundMessages, 1 | 2]> = [
  ['raw amqplib, version 1', RAW_MESSAGES, 1],
  ["warren's contract, version 1", WARREN_MESSAGES, 1],
  ['raw amqplib, version 2', RAW_MESSAGES, 2],
  ["warren's contract, version 2", WARREN_MESSAGES, 2],
];

/** A round on a queue of `version`; a broker that refuses the version says so in the probe's words. */
function roundOf(connection: amqp.ChannelModel, messages: RoundMessages, version: 1 | 2): Promise<number> {
  return roundOnClassicQueue(connection, QUEUE, messages, { 'x-queue-version': version }).catch(
    (error: Error) => {
      if (!/x-queue-version/.test(error.message)) throw error;
      throw new Error(
        `the broker refuses a classic queue of version ${version} (RabbitMQ 4.x has only version 2; the probe compares the two on 3.10 to 3.12): ${error.message}`,
      );
    },
  );
}

async function main(): Promise<void> {
  const args = probeArguments('queue-version');
  if (!args) return;
  const connection = await amqp.connect(args.url);
  connection.on('error', () => undefined); // a refused declaration closes its channel only
  try {
    const rates = await turningRounds(SHAPES, args.rounds, ([, messages, version]) =>
      roundOf(connection, messages, version),
    );
    console.log(
      `fail-once jobs/s at backoff 0 on a classic queue of ${new URL(args.url).host}, by message shape and queue version:`,
    );
    printBesideFirst(
      SHAPES.map(([label]) => label),
      rates,
      'raw amqplib on version 1',
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

runProbe('queue-version probe', main);
