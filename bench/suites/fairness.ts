/**
 * Fair share (issue 35, docs/guide/fair-share.md), beside the same job type without fairness and raw amqplib:
 *
 * - starvation: handlers take 5 ms at concurrency 10; key A floods `--flood` jobs, and once A is running,
 *   keys B–J publish 10 jobs each. Per key: the longest wait from its publish to its start (keys hashed into
 *   A's lane reported apart: the lane-level guarantee), and A's throughput while they run beside its rate
 *   before they came.
 * - keys: `--jobs` no-op jobs spread over 10,000 keys, then all on a single key, drained at concurrency 10,
 *   as jobs/s beside the plain job type and raw amqplib (prefetch 10, an ack per message, Nagle off) on a
 *   quorum queue.
 *
 *   npm run bench -- fairness [--flood 100000] [--jobs 50000] [--rounds 3] [--only=starvation,keys]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { createWarren, defineJob, defineTopology, type Warren } from '../../src';
import { laneOf } from '../../src/message';
import { planOf } from '../../src/warren';
import { deletePlan } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    flood: { type: 'string', default: '100000' },
    jobs: { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string', default: 'starvation,keys' },
    quick: { type: 'boolean', default: false },
  },
});
const QUICK = values.quick;
const FLOOD = QUICK ? 3000 : Number(values.flood);
const JOBS = QUICK ? 3000 : Number(values.jobs);
const ROUNDS = QUICK ? 1 : Number(values.rounds);
const ONLY = new Set(values.only.split(','));
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const LANES = 8;
const CONCURRENCY = 10;
const OTHERS = ['B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'].map((k) => `key-${k}`);
const FLOODER = 'key-A';

type Row = { key: string; at: number };

async function benchWarren(fair: boolean, handle: (row: Row) => Promise<void> | void): Promise<Warren> {
  const suffix = randomBytes(4).toString('hex');
  const job = defineJob(
    'bench.row',
    { queue: 'bench', concurrency: CONCURRENCY, attempts: 1, key: (row: Row) => row.key },
    handle,
  );
  return createWarren({
    url: AMQP_URL,
    namespace: `bench-fair-${suffix}`,
    topology: defineTopology({ queues: { bench: fair ? { fairness: { lanes: LANES } } : {} } }),
    handlers: [job],
    queues: { expiresMs: 10 * 60_000 },
    delay: { levels: 4 },
  });
}

async function publishRows(warren: Warren, rows: readonly Row[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000)
    await warren.publishMany(rows.slice(i, i + 1000).map((data) => ({ job: 'bench.row', data })));
}

async function closeAndDelete(warren: Warren): Promise<void> {
  await warren.close({ graceMs: 200 });
  await deletePlan(AMQP_URL, planOf(warren));
}

/** One starvation run: the waits of B–J (by whether they share A's lane) and A's rate before and during. */
async function starvation(fair: boolean) {
  const startedAt = new Map<string, number[]>();
  const floodDone: number[] = [];
  const warren = await benchWarren(fair, async (row) => {
    const now = Date.now();
    if (row.key === FLOODER) floodDone.push(now);
    else startedAt.set(row.key, [...(startedAt.get(row.key) ?? []), now - row.at]);
    await new Promise((resolve) => setTimeout(resolve, 5));
  });
  try {
    await publishRows(
      warren,
      Array.from({ length: FLOOD }, () => ({ key: FLOODER, at: 0 })),
    );
    await warren.start();
    await until(() => floodDone.length >= 2000 || floodDone.length >= FLOOD / 3, 60_000);
    const publishedAt = Date.now();
    const before = rate(floodDone, publishedAt - 1000, publishedAt);
    await publishRows(
      warren,
      OTHERS.flatMap((key) => Array.from({ length: 10 }, () => ({ key, at: Date.now() }))),
    );
    const separate = OTHERS.filter((key) => laneOf(key, LANES) !== laneOf(FLOODER, LANES));
    const floodLeft = FLOOD - floodDone.length;
    await until(() => separate.every((key) => startedAt.get(key)?.length === 10), 20_000);
    // A's share of what B-J left, over the 2 s from their publish: A's rate then over the rate A had alone
    // minus the slots B-J's 5 ms jobs took
    await until(() => Date.now() >= publishedAt + 2000, 3000);
    const othersStarted = OTHERS.reduce((n, key) => n + (startedAt.get(key)?.length ?? 0), 0);
    const during = rate(floodDone, publishedAt, publishedAt + 2000);
    const left = Math.max(1, before - othersStarted / 2);
    // Then every key's wait to the end, the colliding key's too: it waits for A's lane (the whole flood: A's
    // jobs are all in that lane) to drain. The cap: three times the rest of the flood at the ideal rate.
    const capMs = 20_000 + (3 * floodLeft * 5) / CONCURRENCY;
    await until(() => OTHERS.every((key) => startedAt.get(key)?.length === 10), capMs);
    await until(() => floodDone.length === FLOOD, capMs);
    const floodEndMs = floodDone.length === FLOOD ? floodDone[FLOOD - 1]! - publishedAt : undefined;
    const waits = (keys: readonly string[]) => {
      const all = keys.flatMap((key) => startedAt.get(key) ?? []);
      return { started: all.length, of: keys.length * 10, maxMs: all.length ? Math.max(...all) : undefined };
    };
    return {
      separate: waits(separate),
      colliding: waits(OTHERS.filter((key) => !separate.includes(key))),
      floodRateBefore: before,
      floodRateDuring: during,
      floodShareOfLeft: during / left,
      floodLeft,
      floodEndMs,
    };
  } finally {
    await closeAndDelete(warren);
  }
}

/** Jobs/s of one drain of `JOBS` no-op jobs over `keys` keys. */
async function drain(fair: boolean, keys: number): Promise<number> {
  let done = 0;
  let resolve!: () => void;
  const finished = new Promise<void>((r) => (resolve = r));
  const warren = await benchWarren(fair, () => {
    if (++done === JOBS) resolve();
  });
  try {
    await publishRows(
      warren,
      Array.from({ length: JOBS }, (_, i) => ({ key: `tenant-${i % keys}`, at: 0 })),
    );
    const t0 = performance.now();
    await warren.start();
    await finished;
    return JOBS / ((performance.now() - t0) / 1000);
  } finally {
    await closeAndDelete(warren);
  }
}

/** The same drain on raw amqplib: a quorum queue, prefetch 10, an ack per message. */
async function drainRaw(): Promise<number> {
  const connection = await amqp.connect(AMQP_URL, { noDelay: true });
  const queue = `bench-fair-raw-${randomBytes(4).toString('hex')}`;
  try {
    const publisher = await connection.createConfirmChannel();
    await publisher.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const body = Buffer.from(JSON.stringify({ key: 'tenant-1', at: 0 }));
    for (let i = 0; i < JOBS; i++)
      publisher.sendToQueue(queue, body, { persistent: true, type: 'bench.row' });
    await publisher.waitForConfirms();
    const channel = await connection.createChannel();
    await channel.prefetch(CONCURRENCY);
    let done = 0;
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      void channel.consume(queue, (message) => {
        if (message === null) return;
        JSON.parse(message.content.toString('utf8'));
        channel.ack(message);
        if (++done === JOBS) resolve();
      });
    });
    const perSecond = JOBS / ((performance.now() - t0) / 1000);
    await publisher.deleteQueue(queue);
    return perSecond;
  } finally {
    await connection.close();
  }
}

function rate(times: readonly number[], from: number, to: number): number {
  return times.filter((t) => t >= from && t < to).length / Math.max(0.001, (to - from) / 1000);
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

async function main(): Promise<void> {
  console.log(
    `fairness: ${LANES} lanes, concurrency ${CONCURRENCY}, ${ROUNDS} round(s), load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (ONLY.has('starvation')) {
    console.log(`\nstarvation: A floods ${FLOOD} jobs of 5 ms, then B–J publish 10 each`);
    console.log(
      "| variant | B–J in other lanes: started, longest wait | B–J in A's lane: started, longest wait | A's jobs left at B–J's publish, its last done after | A jobs/s before → during | A's share of what B–J left |",
    );
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (let round = 1; round <= ROUNDS; round++)
      for (const fair of [true, false]) {
        const r = await starvation(fair);
        const wait = (w: { started: number; of: number; maxMs: number | undefined }) =>
          `${w.started}/${w.of}, ${w.maxMs === undefined ? '–' : `${w.maxMs} ms`}`;
        console.log(
          `| ${fair ? 'fairness' : 'plain'} (round ${round}) | ${wait(r.separate)} | ${wait(r.colliding)} | ${r.floodLeft}, ${r.floodEndMs === undefined ? 'not done' : `${r.floodEndMs} ms`} | ${r.floodRateBefore.toFixed(0)} → ${r.floodRateDuring.toFixed(0)} | ${(r.floodShareOfLeft * 100).toFixed(0)} % |`,
        );
      }
  }
  if (ONLY.has('keys')) {
    console.log(`\nkeys: ${JOBS} no-op jobs drained at concurrency ${CONCURRENCY}`);
    const variants = {
      'fairness, 10,000 keys': () => drain(true, 10_000),
      'fairness, 1 key': () => drain(true, 1),
      plain: () => drain(false, 10_000),
      'raw amqplib': () => drainRaw(),
    } as const;
    const results = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
    const entries = Object.entries(variants);
    for (let round = 1; round <= ROUNDS; round++) {
      // the order turns each round, so a drifting load hits every variant alike
      const order = round % 2 ? entries : [...entries].reverse();
      for (const [name, measure] of order) results.get(name)!.push(await measure());
      console.log(
        `  round ${round}: ${entries.map(([name]) => `${name} ${results.get(name)!.at(-1)!.toFixed(0)}`).join(', ')} jobs/s; load ${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const plainRuns = results.get('plain')!;
    const plain = median(plainRuns);
    console.log(
      '| variant | median jobs/s | min–max | vs plain (medians) | vs plain, round by round (median, min–max) |\n| --- | --- | --- | --- | --- |',
    );
    for (const [name, xs] of results) {
      const ratios = xs.map((x, i) => x / plainRuns[i]!);
      console.log(
        `| ${name} | ${median(xs).toFixed(0)} | ${range(xs)} | ${(median(xs) / plain).toFixed(2)}× | ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`,
      );
    }
  }
  console.log(
    `\nload after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

/** The suite's entry (bench/main.ts). */
export const run = main;
