/**
 * A probe for issue 30's retry rows: does the length of a retry's TTL queue name move the broker's cost? Bare
 * amqplib's fail-once loop (see fail-once-round.ts) on one classic queue of 40 bytes, each failed first
 * attempt through a classic TTL queue of 1 s that dead-letters back to it, the TTL queue's name 60, 64 or 66
 * bytes long (a copy's routing key and its `x-death` queue are that name). The three alternate round by
 * round; prints jobs/s per round and the medians.
 *
 *   npm run build && node dist/bench/probes/queue-name-length.js [amqp-url] [rounds]
 *
 * On RabbitMQ 3.10.8 (2026-12-06, 3 rounds) 60 and 64 bytes gave 2,830 and 2,960 jobs/s, 66 bytes 2,320.
 */
import * as amqp from 'amqplib';
import { median } from '../lib/stats';
import { failOnceRound, probeArguments, runProbe } from './fail-once-round';

const QUEUE = `probe-${'q'.repeat(34)}`;
const HOLD_LENGTHS = [60, 64, 66] as const;
const TTL_MS = 1_000;

function holdName(length: number): string {
  const stem = 'probe-hold-';
  return stem + 'h'.repeat(length - stem.length);
}

async function roundThrough(connection: amqp.ChannelModel, hold: string): Promise<number> {
  const channel = await connection.createChannel();
  const durableClassic = { durable: true, arguments: { 'x-queue-type': 'classic' } };
  await channel.assertQueue(QUEUE, durableClassic);
  await channel.assertQueue(hold, {
    durable: true,
    arguments: {
      ...durableClassic.arguments,
      'x-message-ttl': TTL_MS,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': QUEUE,
    },
  });
  try {
    return await failOnceRound(connection, QUEUE, hold);
  } finally {
    await channel.deleteQueue(hold);
    await channel.deleteQueue(QUEUE);
    await channel.close();
  }
}

async function main(): Promise<void> {
  const args = probeArguments('queue-name-length');
  if (!args) return;
  const connection = await amqp.connect(args.url);
  const perLength = new Map<number, number[]>(HOLD_LENGTHS.map((length) => [length, []]));
  try {
    for (let round = 0; round < args.rounds; round++) {
      const order = round % 2 === 0 ? HOLD_LENGTHS : [...HOLD_LENGTHS].reverse();
      for (const length of order)
        perLength.get(length)!.push(await roundThrough(connection, holdName(length)));
    }
  } finally {
    await connection.close();
  }
  console.log(`fail-once jobs/s through a 1 s TTL queue on ${new URL(args.url).host}, by its name's length:`);
  for (const [length, rates] of perLength)
    console.log(`  ${length} bytes: ${rates.join(' / ')} (median ${median(rates)})`);
}

runProbe('queue-name-length probe', main);
