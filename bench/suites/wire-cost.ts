// Suite `wire-cost`: npm run bench -- wire-cost [--broker=3.10|4.3] [--queue=classic|quorum] [--jobs=N] [--rounds=N]
//                                               [--window=N] [--variants=bare,padded,wire]
// What each part of warren's wire contract costs the broker (issue 30): raw amqplib publishes the bench's job
// in windows of 1,000 (each window's confirms awaited; `--window` sets it, as large as `--jobs` for all at
// once), bare and with one part of the contract added at a time, then with all of it, and bare with its body
// padded by as many bytes as the contract adds (`padded`: is the cost the parts, or only the bytes?), in
// interleaved rounds; per variant the median jobs/s and the broker's CPU per message (its beam.smp, from
// /proc: anything else using that broker counts too, so read medians).
import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type * as amqp from 'amqplib';
import { publishFramesSize } from '../../src/connection/publish-frames';
import { jobProperties } from '../../src/message';
import { connectAmqp } from '../adapters/amqplib';
import { findBrokerPids } from '../lib/broker-processes';
import { processCpuMs } from '../lib/cpu';
import { makeJob } from '../lib/job';
import { median } from '../lib/stats';

const WINDOW = 1_000;
const BARE: amqp.Options.Publish = { persistent: true, contentType: 'application/json' };

/** Where a variant publishes and with which properties. */
interface Variant {
  readonly what: string;
  readonly viaExchange: boolean;
  properties(): amqp.Options.Publish;
  /** Spaces appended to the JSON body (still valid JSON). */
  readonly paddingBytes?: number;
}

/** warren's properties of a first attempt (message/envelope.ts), as its publisher sends them. */
function wireProperties(): amqp.Options.Publish {
  return jobProperties({
    name: 'bench.job',
    jobId: randomUUID(),
    body: Buffer.alloc(0),
    attempt: 1,
    enqueuedAt: Date.now(),
  });
}

const VARIANTS: Record<string, Variant> = {
  bare: {
    what: 'persistent JSON to the queue (raw amqplib as the throughput suite sends it)',
    viaExchange: false,
    properties: () => BARE,
  },
  exchange: { what: '+ routed through a direct exchange', viaExchange: true, properties: () => BARE },
  mandatory: { what: '+ mandatory', viaExchange: false, properties: () => ({ ...BARE, mandatory: true }) },
  properties: {
    what: '+ type, message_id, timestamp',
    viaExchange: false,
    properties: () => ({
      ...BARE,
      type: 'bench.job',
      messageId: randomUUID(),
      timestamp: Math.floor(Date.now() / 1000),
    }),
  },
  headers: {
    what: '+ warren-attempt, warren-enqueued-at headers',
    viaExchange: false,
    properties: () => ({ ...BARE, headers: { 'warren-attempt': 1, 'warren-enqueued-at': Date.now() } }),
  },
  'wire-to-queue': {
    what: "warren's properties and headers, to the queue",
    viaExchange: false,
    properties: wireProperties,
  },
  wire: {
    what: "warren's exact messages, through the exchange (the contract)",
    viaExchange: true,
    properties: wireProperties,
  },
  padded: {
    what: 'bare, its body longer by the bytes the contract adds to the properties',
    viaExchange: false,
    properties: () => BARE,
    paddingBytes: contractBytes(),
  },
};

/** How many bytes warren's properties take on the wire beyond the bare ones (the same body and route). */
function contractBytes(): number {
  const message = { exchange: '', routingKey: 'q', content: Buffer.alloc(10) };
  const size = (properties: amqp.Options.Publish) => publishFramesSize({ ...message, properties }, 131_072)!;
  return size(wireProperties()) - size(BARE);
}

interface Round {
  jobsPerSec: number;
  brokerUsPerJob: number | undefined;
  load: number;
}

async function main(argv: string[]): Promise<void> {
  const flags = new Map(argv.map((arg) => arg.replace(/^--/, '').split('=', 2) as [string, string]));
  const broker = flags.get('broker') ?? '3.10';
  const port = broker === '4.3' ? 5673 : 5672;
  const url =
    broker === '4.3'
      ? (process.env.BENCH_AMQP_URL_43 ?? `amqp://guest:guest@127.0.0.1:${port}`)
      : (process.env.BENCH_AMQP_URL ?? `amqp://guest:guest@127.0.0.1:${port}`);
  const queueType = flags.get('queue') ?? 'classic';
  const jobs = Number(flags.get('jobs') ?? 20_000);
  const rounds = Number(flags.get('rounds') ?? 5);
  const window = Math.min(jobs, Number(flags.get('window') ?? WINDOW));
  if (!(window >= 1)) throw new Error('--window takes a number of messages, 1 or more');
  const names = (flags.get('variants') ?? Object.keys(VARIANTS).join(',')).split(',');
  for (const name of names) if (!VARIANTS[name]) throw new Error(`unknown variant ${name}`);
  const pid = findBrokerPids(port, 0).rabbitmq;
  const connection = await connectAmqp(url, true);
  connection.on('error', () => undefined);
  const channel = await connection.createConfirmChannel();
  const queue = `bench-wire-${randomBytes(4).toString('hex')}`;
  const exchange = `${queue}.x`;
  const results = new Map<string, Round[]>();
  try {
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': queueType } });
    await channel.assertExchange(exchange, 'direct', { durable: true });
    await channel.bindQueue(queue, exchange, 'bench.job');
    const send = (variant: Variant, count: number, first: number) =>
      new Promise<void>((resolve) => {
        let open = count;
        for (let i = 0; i < count; i++) {
          const json = JSON.stringify(makeJob(first + i));
          const body = Buffer.from(
            variant.paddingBytes ? json.padEnd(json.length + variant.paddingBytes) : json,
          );
          channel.publish(
            variant.viaExchange ? exchange : '',
            variant.viaExchange ? 'bench.job' : queue,
            body,
            variant.properties(),
            () => {
              if (--open === 0) resolve();
            },
          );
        }
      });
    for (let round = 0; round < rounds; round++) {
      const order = [...names.slice(round % names.length), ...names.slice(0, round % names.length)];
      for (const name of order) {
        const variant = VARIANTS[name]!;
        await send(variant, Math.min(window, WINDOW), 0); // warm-up
        const brokerStart = processCpuMs(pid);
        const load = loadavg()[0]!;
        const start = performance.now();
        for (let first = 0; first < jobs; first += window)
          await send(variant, Math.min(window, jobs - first), first);
        const wallMs = performance.now() - start;
        const brokerEnd = processCpuMs(pid);
        await channel.purgeQueue(queue);
        const brokerUsPerJob =
          brokerStart === undefined || brokerEnd === undefined
            ? undefined
            : ((brokerEnd - brokerStart) * 1000) / jobs;
        const figures = { jobsPerSec: (jobs / wallMs) * 1000, brokerUsPerJob, load };
        results.set(name, [...(results.get(name) ?? []), figures]);
        console.log(
          `[r${round + 1}/${rounds}] ${name}: ${figures.jobsPerSec.toFixed(0)} jobs/s, broker ${brokerUsPerJob?.toFixed(1) ?? '?'} µs/msg, load ${load.toFixed(1)}`,
        );
      }
    }
  } finally {
    await channel.deleteQueue(queue).catch(() => undefined);
    await channel.deleteExchange(exchange).catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
  const base = results.get(names[0]!)!;
  const baseJobs = median(base.map((r) => r.jobsPerSec));
  const baseBroker = median(base.map((r) => r.brokerUsPerJob ?? Number.NaN));
  console.log(
    `\nwire-cost: RabbitMQ ${broker} (port ${port}), ${queueType} queue, ${jobs.toLocaleString('en')} jobs in windows of ${window.toLocaleString('en')}, ${rounds} interleaved rounds, medians; 1-minute load ${Math.min(...[...results.values()].flat().map((r) => r.load)).toFixed(1)}–${Math.max(...[...results.values()].flat().map((r) => r.load)).toFixed(1)}\n`,
  );
  console.log(`| variant | what | jobs/s | × ${names[0]} | broker µs/msg | × ${names[0]} |`);
  console.log('|---|---|---:|---:|---:|---:|');
  for (const name of names) {
    const rows = results.get(name)!;
    const jobsPerSec = median(rows.map((r) => r.jobsPerSec));
    const brokerUs = median(rows.map((r) => r.brokerUsPerJob ?? Number.NaN));
    console.log(
      `| ${name} | ${VARIANTS[name]!.what} | ${jobsPerSec.toFixed(0)} | ${(jobsPerSec / baseJobs).toFixed(2)} | ${brokerUs.toFixed(1)} | ${(brokerUs / baseBroker).toFixed(2)} |`,
    );
  }
}

/** The suite's entry (bench/main.ts). */
export const run = main;
