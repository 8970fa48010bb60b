/**
 * Start-up beside a flood (issue 27, item 6): how long a fresh warren takes to be ready on the job-control
 * stream (its first `delayed.cancel`: read to its end, then append) and on the schedule registry (`start()`
 * with the scheduler on: read to its end before anything fires), on empty streams and with `--records`
 * foreign records appended to each; with the flood, the first start reads it all and checkpoints, and the
 * starts after it begin at the checkpoint. Target: within 2× (or +250 ms) of an empty namespace.
 *
 *   npm run bench -- control-startup [--records 1000000] [--rounds 3]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { createWarren, defineTopology, Job, type JobHandler, type Warren } from '../../src';
import { percentile, sortedCopy } from '../lib/stats';

const { values } = parseArgs({
  options: { records: { type: 'string', default: '1000000' }, rounds: { type: 'string', default: '3' } },
});
const RECORDS = Number(values.records);
const ROUNDS = Number(values.rounds);
for (const [name, value] of [
  ['--records', RECORDS],
  ['--rounds', ROUNDS],
] as const)
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`control-startup: ${name} must be a positive whole number (got ${String(value)})`);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

@Job('bench.report', { queue: 'bench', attempts: 1 })
class Report implements JobHandler<object> {
  handle() {}
}

const topology = defineTopology({ queues: { bench: {} } });

/** One fresh process's start, ms: its first cancel (job control) and its start() (the registry). */
async function startOnce(
  namespace: string,
): Promise<{ control: number; registry: number; warren: Warren<object> }> {
  const warren = await createWarren({
    url: AMQP_URL,
    namespace,
    topology,
    handlers: [new Report()],
    scheduler: { enabled: true },
  });
  let at = performance.now();
  await warren.delayed.cancel(`bench-${randomBytes(4).toString('hex')}`);
  const control = performance.now() - at;
  at = performance.now();
  await warren.start();
  const registry = performance.now() - at;
  return { control, registry, warren };
}

async function flood(connection: amqp.ChannelModel, stream: string, count: number): Promise<void> {
  const channel = await connection.createConfirmChannel();
  const body = Buffer.from('{"foreign":true,"padding":"xxxxxxxxxxxxxxxxxxxxxxxx"}');
  for (let i = 0; i < count; i++) {
    if (!channel.sendToQueue(stream, body)) await new Promise((resolve) => channel.once('drain', resolve));
    if (i % 5000 === 4999) await channel.waitForConfirms();
  }
  await channel.waitForConfirms();
  await channel.close();
}

async function rounds(namespace: string, label: string): Promise<void> {
  const control: number[] = [];
  const registry: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const run = await startOnce(namespace);
    control.push(run.control);
    registry.push(run.registry);
    // a checkpoint the start wrote is confirmed before the process goes
    await run.warren.close();
  }
  const f = (xs: number[]) =>
    `${percentile(sortedCopy(xs), 50).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`;
  console.log(`${label.padEnd(44)} job control ${f(control)}   registry ${f(registry)}`);
}

export async function run(): Promise<void> {
  const namespace = `bench-startup-${randomBytes(4).toString('hex')}`;
  const connection = await amqp.connect(AMQP_URL);
  let warren: Warren<object> | undefined;
  try {
    await rounds(namespace, 'empty streams');
    const at = performance.now();
    await flood(connection, `${namespace}.warren.job-control`, RECORDS);
    await flood(connection, `${namespace}.warren.schedules`, RECORDS);
    console.log(
      `appended ${RECORDS} foreign records to each stream in ${((performance.now() - at) / 1000).toFixed(1)} s`,
    );
    const first = await startOnce(namespace);
    warren = first.warren;
    console.log(
      `${'first start after the flood (reads it all)'.padEnd(44)} job control ${first.control.toFixed(0)} ms   registry ${first.registry.toFixed(0)} ms`,
    );
    await warren.close();
    await rounds(namespace, `later starts (${RECORDS} records behind a checkpoint)`);
  } finally {
    const cleanup = await createWarren({ url: AMQP_URL, namespace, topology, jobs: [Report] });
    await cleanup.deleteTopology().catch(() => undefined);
    await cleanup.close();
    await connection.close().catch(() => undefined);
  }
}
