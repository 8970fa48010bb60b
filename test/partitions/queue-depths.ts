/**
 * Prints the messages each named queue holds (ready, as `queue.declare` passive reports them: run it after every
 * consumer closed, so nothing is unacked), one JSON line each: `{"queue":"…","messages":N}`; a queue that does not
 * exist prints `messages: -1`. Run by the partition harness inside a client namespace after the drain:
 *
 *   node dist/test/partitions/queue-depths.js <url> <queue>...
 */
import * as amqp from 'amqplib';

async function main(): Promise<void> {
  const [url, ...queues] = process.argv.slice(2);
  const connection = await amqp.connect(url!);
  try {
    for (const queue of queues) {
      // a failed passive declare closes the channel: one channel per queue
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      const messages = await channel.checkQueue(queue).then(
        (ok) => ok.messageCount,
        () => -1,
      );
      process.stdout.write(`${JSON.stringify({ queue, messages })}\n`);
      if (messages >= 0) await channel.close();
    }
  } finally {
    await connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
