/**
 * The raw amqplib control of the partition suite: the same cluster, namespaces and faults, with no warren at
 * all, to tell what the broker does from what warren does. A publisher in c1 sends a confirmed message to a
 * quorum queue every 200 ms; consumers in c2 and c3 (prefetch 2, an ack on receipt, like the cron ticks'
 * consumers) print what they receive. The nemesis makes n2 deaf to the others (one way) for 30 s, twice;
 * then everything heals, the publisher stops, and after 30 s the consumers close. The verdict: messages
 * confirmed and never received while both consumers were open (held), and what the queue holds after they
 * closed.
 *
 *   node dist/test/partitions/control.js            (as root; builds and removes a 3-node cluster)
 *   WARREN_TEST_SERVER=3.10 node dist/test/partitions/control.js
 */
import * as amqp from 'amqplib';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Cluster, cleanSync, netsplit } from './cluster';
import { exitWhenSettled, startControlClient } from './control-client';
import { withClients } from './nemesis';

const QUEUE = 'split-control';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function publish(url: string): Promise<void> {
  const connection = await amqp.connect(`${url}?heartbeat=5`);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  let n = 0;
  let stop = false;
  createInterface({ input: process.stdin }).on('line', () => (stop = true));
  while (!stop) {
    const id = `m${++n}`;
    channel.sendToQueue(QUEUE, Buffer.from(id), { messageId: id, persistent: true }, (error) =>
      console.log(JSON.stringify({ e: error ? 'nacked' : 'confirmed', id, t: Date.now() })),
    );
    await sleep(200);
  }
  // confirms still held by the broker after the heal must not keep this process (and the control) waiting
  await Promise.race([channel.waitForConfirms().catch(() => undefined), sleep(10_000)]);
  // nor must the close, which waits for the broker's close-ok
  await Promise.race([connection.close().catch(() => undefined), sleep(5_000)]);
}

async function consume(url: string): Promise<void> {
  const connection = await amqp.connect(`${url}?heartbeat=5`);
  connection.on('error', () => undefined);
  const channel = await connection.createChannel();
  await channel.prefetch(2, false);
  await channel.consume(QUEUE, (message) => {
    if (!message) return console.log(JSON.stringify({ e: 'cancelled', t: Date.now() }));
    console.log(JSON.stringify({ e: 'received', id: message.properties.messageId, t: Date.now() }));
    channel.ack(message);
  });
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).on('line', () => resolve()));
  await connection.close();
}

function start(server: string, client: string, role: string, url: string) {
  return startControlClient(server, client, __filename, [role, url]);
}

async function orchestrate(): Promise<void> {
  const server = process.env.WARREN_TEST_SERVER ?? '4.3';
  const cluster = new Cluster(server, 3);
  process.on('SIGINT', () => {
    cleanSync();
    process.exit(130);
  });
  try {
    await cluster.up();
    const publisher = start(server, 'c1', 'publish', cluster.url(1));
    await sleep(3_000);
    const consumers = ['c2', 'c3'].map((c, i) => start(server, c, 'consume', cluster.url(i + 2)));
    await sleep(10_000);
    for (let round = 0; round < 2; round++) {
      await cluster.cut(
        withClients(
          {
            n2: [
              { from: 'n1', p: 1 },
              { from: 'n3', p: 1 },
            ],
          },
          3,
        ),
      );
      console.log(`control: n2 deaf to n1 and n3 at ${new Date().toISOString()}`);
      await sleep(30_000);
      await cluster.heal();
      console.log(`control: healed at ${new Date().toISOString()}`);
      await sleep(15_000);
    }
    publisher.stop();
    await publisher.exited;
    await sleep(30_000);
    const received = new Map<string, string>();
    for (const [i, consumer] of consumers.entries())
      for (const event of consumer.events) if (event.e === 'received') received.set(event.id!, `c${i + 2}`);
    const confirmed = publisher.events.filter((e) => e.e === 'confirmed').map((e) => e.id!);
    const held = confirmed.filter((id) => !received.has(id));
    for (const [i, consumer] of consumers.entries()) {
      const last = consumer.events.filter((e) => e.e === 'received').at(-1);
      console.log(
        `control: c${i + 2} received ${consumer.events.filter((e) => e.e === 'received').length}, last at ${last ? new Date(last.t).toISOString() : '-'}, cancels ${consumer.events.filter((e) => e.e === 'cancelled').length}`,
      );
    }
    console.log(
      `control: RabbitMQ ${server}: ${confirmed.length} confirmed, ${held.length} never received while both consumers were open: ${held.join(' ')}`,
    );
    for (const consumer of consumers) consumer.stop();
    await Promise.all(consumers.map((c) => c.exited));
    const depth = await netsplit(server, [
      'exec',
      'c1',
      process.execPath,
      join(__dirname, 'queue-depths.js'),
      cluster.url(1),
      QUEUE,
    ]);
    console.log(`control: after the consumers closed the queue holds ${depth.out.trim()}`);
  } finally {
    cleanSync();
  }
}

const [role, url] = process.argv.slice(2);
const main = role === 'publish' ? publish(url!) : role === 'consume' ? consume(url!) : orchestrate();
exitWhenSettled(main);
