import * as amqp from 'amqplib';
import { median } from '../lib/stats';

/** How many jobs a probe round pre-fills and drains. */
const PROBE_JOBS = 30_000;
const ATTEMPT = 'probe-attempt';
const PROPERTIES = { persistent: true, contentType: 'application/json' };

/** What a round's messages carry: a pre-filled job's properties, and its retry copy's. */
export interface RoundMessages {
  /** The properties of pre-filled job `i`. */
  first(i: number): amqp.Options.Publish;
  /** The retry copy's properties, from the first delivery's. */
  retry(delivered: amqp.MessageProperties): amqp.Options.Publish;
  /** Whether a delivery is a retry copy. */
  isRetry(delivered: amqp.MessageProperties): boolean;
}

/** Raw amqplib's messages: two properties, and an attempt header on the copy. */
export const RAW_MESSAGES: RoundMessages = {
  first: () => PROPERTIES,
  retry: () => ({ ...PROPERTIES, headers: { [ATTEMPT]: 2 } }),
  isRetry: (delivered) => delivered.headers?.[ATTEMPT] !== undefined,
};

/**
 * One bare amqplib fail-once round on `queue` (declared by the caller): PROBE_JOBS pre-filled, prefetch 100,
 * each first attempt republished with an attempt header to `retryTo` (the queue itself, or a TTL queue that
 * dead-letters back to it) on a confirm channel and acked on its confirm. `messages`: what the jobs and their
 * copies carry (raw amqplib's two properties unless given). Returns jobs/s.
 */
export async function failOnceRound(
  connection: amqp.ChannelModel,
  queue: string,
  retryTo: string = queue,
  messages: RoundMessages = RAW_MESSAGES,
): Promise<number> {
  const setup = await connection.createConfirmChannel();
  const body = (i: number) => Buffer.from(JSON.stringify({ i, pad: 'x'.repeat(60) }));
  for (let i = 0; i < PROBE_JOBS; i++)
    if (!setup.sendToQueue(queue, body(i), messages.first(i)))
      await new Promise((resolve) => setup.once('drain', resolve));
  await setup.waitForConfirms();
  await setup.close();
  const consumer = await connection.createChannel();
  await consumer.prefetch(100);
  const republisher = await connection.createConfirmChannel();
  const started = Date.now();
  let completed = 0;
  await new Promise<void>((resolve) => {
    void consumer.consume(queue, (message) => {
      if (!message) return;
      const retried = messages.isRetry(message.properties);
      void Promise.resolve().then(() => {
        if (retried) {
          consumer.ack(message);
          if (++completed === PROBE_JOBS) resolve();
          return;
        }
        republisher.sendToQueue(retryTo, message.content, messages.retry(message.properties), (err) =>
          err ? consumer.nack(message) : consumer.ack(message),
        );
      });
    });
  });
  const perSecond = Math.round(PROBE_JOBS / ((Date.now() - started) / 1000));
  await consumer.close();
  await republisher.close();
  return perSecond;
}

/** One fail-once round on `queue`, declared a classic queue (with `args`) for the round and deleted after it. */
export async function roundOnClassicQueue(
  connection: amqp.ChannelModel,
  queue: string,
  messages: RoundMessages = RAW_MESSAGES,
  args: Readonly<Record<string, unknown>> = {},
): Promise<number> {
  const channel = await connection.createChannel();
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic', ...args } });
  try {
    return await failOnceRound(connection, queue, queue, messages);
  } finally {
    await channel.deleteQueue(queue);
    await channel.close();
  }
}

/**
 * `rounds` rounds of every shape, in an order that turns each round (no shape always runs first or after the
 * same one); the rates by shape.
 */
export async function turningRounds<S>(
  shapes: readonly S[],
  rounds: number,
  run: (shape: S) => Promise<number>,
): Promise<number[][]> {
  const rates = shapes.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++)
    for (let step = 0; step < shapes.length; step++) {
      const index = (round + step) % shapes.length;
      rates[index].push(await run(shapes[index]));
    }
  return rates;
}

/** Prints each shape's rates and median, and the median beside the first shape's (`baseline` names it). */
export function printBesideFirst(
  labels: readonly string[],
  rates: readonly number[][],
  baseline: string,
): void {
  const first = median(rates[0]);
  labels.forEach((label, index) => {
    const middle = median(rates[index]);
    console.log(
      `  ${label}: ${rates[index].join(' / ')} (median ${middle}, ${(middle / first).toFixed(2)}x ${baseline})`,
    );
  });
}

/** The probes' arguments: an AMQP URL and a number of rounds; undefined (after printing usage) when wrong. */
export function probeArguments(script: string): { url: string; rounds: number } | undefined {
  const url = process.argv[2] ?? 'amqp://guest:guest@127.0.0.1:5672';
  const rounds = Number(process.argv[3] ?? 3);
  if (Number.isInteger(rounds) && rounds >= 1) return { url, rounds };
  console.error(`rounds must be a whole number of at least 1, not '${process.argv[3]}'`);
  console.error(`usage: node dist/bench/probes/${script}.js [amqp-url] [rounds]`);
  process.exitCode = 2;
  return undefined;
}

/** Runs a probe's main, an error as one line and exit code 1 (an unreachable broker). */
export function runProbe(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
