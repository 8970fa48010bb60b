/**
 * The dead-letter log's targets (issue 16): a page of 50 from a log of 1,000,000 letters; search over
 * 100,000 warm and cold (the CLI's case: a new process scans the log); replay of 10,000 letters. Logs are
 * filled by publishing letter records straight into the stream (as the collector appends them), with
 * confirms, a window in flight.
 *
 *   npm run bench -- dead-letter-log [--letters 1000000] [--search-letters 100000] [--replay 10000]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { RESULTS_DIR } from '../lib/paths';
import { median } from '../lib/stats';
import { describeRun } from '../lib/run-description';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { defineTopology, Job, type JobHandler } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { createNaming } from '../../src/topology';

const { values } = parseArgs({
  options: {
    letters: { type: 'string', default: '1000000' },
    'search-letters': { type: 'string', default: '100000' },
    replay: { type: 'string', default: '10000' },
  },
});
const LETTERS = Number(values.letters);
const SEARCH_LETTERS = Number(values['search-letters']);
const REPLAY = Number(values.replay);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const ERRORS = ['TypeError: card declined', 'RangeError: amount out of range', 'Error: upstream 503'];

@Job('bench.charge', { queue: 'bench' })
class Charge implements JobHandler<object> {
  handle() {}
}

@Job('bench.replay', { queue: 'bench' })
class Replayed implements JobHandler<object> {
  handle() {}
}

const topology = defineTopology({ queues: { bench: {} } });

function opsFor(namespace: string): WarrenOps {
  return createOps({ url: AMQP_URL, namespace, topology, jobs: [Charge, Replayed] });
}

/** Appends `count` letter records; every `replayEvery`-th is a `bench.replay` job (the replay's selection). */
async function fill(
  connection: amqp.ChannelModel,
  stream: string,
  count: number,
  replays = 0,
): Promise<number> {
  const channel = await connection.createConfirmChannel();
  const started = Date.now();
  const deadAt = Date.now() - count;
  const every = replays > 0 ? Math.floor(count / replays) : 0;
  let inFlight = 0;
  let waiting: (() => void) | undefined;
  for (let i = 0; i < count; i += 1) {
    const replay = every > 0 && i % every === 0 && i / every < replays;
    const body = Buffer.from(JSON.stringify({ order: i, customer: { id: `c${i % 5000}` } }));
    inFlight += 1;
    channel.publish(
      '',
      stream,
      body,
      {
        messageId: `job-${i}`,
        type: replay ? 'bench.replay' : 'bench.charge',
        contentType: 'application/json',
        persistent: true,
        headers: {
          'warren-log-kind': 'letter',
          'warren-queue': 'bench',
          'warren-dead-reason': i % 7 === 0 ? 'unrecoverable' : 'attempts-exhausted',
          'warren-last-error': `${ERRORS[i % ERRORS.length]}\n    at charge (billing.js:${i % 100}:1)`,
          'warren-dead-at': deadAt + i,
          'warren-attempt': 3,
        },
      },
      () => {
        inFlight -= 1;
        if (inFlight < 2000) waiting?.();
      },
    );
    if (inFlight >= 5000) await new Promise<void>((resolve) => (waiting = resolve));
  }
  await channel.waitForConfirms();
  await channel.close();
  return count / ((Date.now() - started) / 1000);
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

async function main(): Promise<void> {
  const run = randomBytes(3).toString('hex');
  const connection = await amqp.connect(AMQP_URL);
  const results: Record<string, unknown> = { loadavgBefore: os.loadavg(), cores: os.cpus().length };
  const namespaces: string[] = [];
  const cleanup = async () => {
    const channel = await connection.createChannel();
    for (const ns of namespaces) {
      const naming = createNaming(ns);
      for (const q of [naming.deadLetterLog(), naming.queue('bench'), naming.deadQueue('bench')])
        await channel.deleteQueue(q).catch(() => undefined);
      await channel.deleteExchange(naming.deadExchange('bench')).catch(() => undefined);
    }
  };
  try {
    // 1. A page of 50 from a log of LETTERS.
    const big = `bench-dlog-${run}-big`;
    namespaces.push(big);
    const bigOps = opsFor(big);
    await bigOps.dead.stats().catch(() => undefined); // declares the stream (and reads it empty)
    const fillRate = await fill(connection, createNaming(big).deadLetterLog(), LETTERS);
    results.fillPerSecond = Math.round(fillRate);
    const pages: number[] = [];
    for (const at of [0.1, 0.5, 0.9, 0.3, 0.7]) {
      const { ms, value } = await timed(() => bigOps.dead.page(Math.floor(LETTERS * at), 50));
      if (value.letters.length !== 50) throw new Error(`page at ${at} had ${value.letters.length}`);
      pages.push(ms);
    }
    results.pageOf50Ms = { median: median(pages), max: Math.max(...pages), runs: pages };
    const tails: number[] = [];
    for (let i = 0; i < 3; i += 1) tails.push((await timed(() => bigOps.dead.tail(50))).ms);
    results.tailOf50Ms = { median: median(tails), runs: tails };
    await bigOps.close();
    await cleanup();
    namespaces.length = 0;

    // 2. Search over SEARCH_LETTERS: cold (a new process's first query scans the log), then warm.
    const mid = `bench-dlog-${run}-search`;
    namespaces.push(mid);
    const setup = opsFor(mid);
    await setup.topology.apply();
    await setup.dead.stats();
    await setup.close();
    await fill(connection, createNaming(mid).deadLetterLog(), SEARCH_LETTERS, REPLAY);
    const ops = opsFor(mid);
    const cold = await timed(() => ops.dead.search({ jobId: `job-${SEARCH_LETTERS - 7}` }));
    if (cold.value.length !== 1) throw new Error('cold search missed');
    results.searchColdMs = cold.ms;
    const queries: Record<string, Parameters<WarrenOps['dead']['search']>[0]> = {
      jobId: { jobId: `job-${Math.floor(SEARCH_LETTERS / 2)}` },
      'name+reason': { name: 'bench.charge', reason: 'unrecoverable' },
      errorClass: { errorClass: 'RangeError' },
      errorText: { error: 'upstream 503' },
      timeRange: {
        since: new Date(Date.now() - SEARCH_LETTERS),
        until: new Date(Date.now() - SEARCH_LETTERS / 2),
      },
      payloadField: { field: { path: 'customer.id', equals: 'c42' } },
    };
    const warm: Record<string, { medianMs: number; matches: number }> = {};
    for (const [label, filter] of Object.entries(queries)) {
      const runs: number[] = [];
      let matches = 0;
      for (let i = 0; i < 5; i += 1) {
        const r = await timed(() => ops.dead.search(filter));
        runs.push(r.ms);
        matches = r.value.length;
      }
      warm[label] = { medianMs: median(runs), matches };
    }
    results.searchWarm = warm;

    // 3. Replay REPLAY letters (the bench.replay ones) at no rate limit, into the bench queue.
    const replay = await timed(() => ops.dead.replay({ name: 'bench.replay' }, { ratePerSecond: 0 }));
    if (replay.value.replayed !== REPLAY) throw new Error(`replayed ${replay.value.replayed} of ${REPLAY}`);
    results.replay = { letters: REPLAY, ms: replay.ms, perSecond: Math.round(REPLAY / (replay.ms / 1000)) };
    const check = await connection.createChannel();
    results.replay = {
      ...(results.replay as object),
      inQueue: (await check.checkQueue(createNaming(mid).queue('bench'))).messageCount,
    };
    await check.close();
    await ops.close();
  } finally {
    await cleanup();
    await connection.close();
  }
  results.loadavgAfter = os.loadavg();
  const dir = RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `dead-letter-log-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ ...(await describeRun('dead-letter-log', AMQP_URL)), letters: LETTERS, searchLetters: SEARCH_LETTERS, ...results }, null, 2)}\n`,
  );
  console.log(JSON.stringify(results, null, 2));
  console.log(`written to ${file}`);
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
