/**
 * One query from a fresh process, for the `lookup` suite: loads warren's ops from the given build (this
 * branch's dist, or a baseline build to compare with), runs one query, and prints its time and the
 * process's peak RSS as JSON. Not a suite of its own.
 *
 * Mode `floor`: the floor of any lookup on this machine at this moment: after connecting, one cold read
 * of one record (a channel opened, its prefetch set, a consumer at the stream's last chunk, its first
 * record), with bare amqplib on a connection like warren's (Nagle off). A lookup through the index makes
 * three such reads one after another (checkpoint, shard, batch), the last two on channels opened early.
 *
 *   node dist/bench/suites/lookup-child.js <dist root> <job|search|replay|floor> <url> <namespace> <arg>
 */
import { join } from 'node:path';
import * as amqp from 'amqplib';
import { defineTopology } from '../../src';
import type { createOps as CreateOps } from '../../src/ops';

async function main(): Promise<void> {
  const [root, mode, url, namespace, arg] = process.argv.slice(2) as [string, string, string, string, string];
  if (mode === 'floor') return floor(url, arg);
  const { createOps } = require(join(root, 'src', 'ops')) as { createOps: typeof CreateOps };
  const topology = defineTopology({ queues: { bench: {} } });
  // the warren command's choice (a baseline build without the option ignores it)
  const ops = createOps({
    url,
    namespace,
    topology,
    ...({ deadLetterIndex: 'scan' } as object),
  });
  try {
    await ops.queues().catch(() => undefined); // connect first: the query is what is timed
    const started = process.hrtime.bigint();
    let found: number;
    if (mode === 'job') found = (await ops.job(arg)).events.length;
    else if (mode === 'search') found = (await ops.dead.search(JSON.parse(arg), 50)).length;
    else found = (await ops.dead.replay(JSON.parse(arg), { ratePerSecond: 0 })).replayed;
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(`${JSON.stringify({ ms, found, rssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
  } finally {
    await ops.close();
  }
}

/** One cold read of the last record of `stream`, timed after connecting. */
async function floor(url: string, stream: string): Promise<void> {
  const connection = await amqp.connect(url, { noDelay: true });
  try {
    await (await connection.createChannel()).checkQueue(stream);
    const started = process.hrtime.bigint();
    const channel = await connection.createChannel();
    await channel.prefetch(1);
    await new Promise<void>((resolve, reject) => {
      channel
        .consume(stream, (m) => (m === null ? undefined : resolve()), {
          noAck: false,
          arguments: { 'x-stream-offset': 'last' },
        })
        .catch(reject);
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(
      `${JSON.stringify({ ms, found: 1, rssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
    );
  } finally {
    await connection.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
