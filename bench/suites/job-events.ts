/**
 * What the live job events cost and how late they arrive (issue 33). Cost: jobs/s and CPU µs per job of
 * one worker draining a prefilled queue of no-op jobs at concurrency 100, with events off
 * (`events: { publish: false }`), on with no subscriber (the default), with one subscriber (another OS
 * process) to one job id, and with one subscriber to the whole queue (every completion sent); variants
 * alternate within each round. Latency: jobs published at a fixed rate (1,000/s) to the worker here, a
 * subscriber to the queue in another process: the time from the `completed` event in the worker to its
 * arrival in the subscriber (same machine clock), p50 / p99.
 *
 * Instructions (`--callgrind N`): what a shared machine's load cannot move. The worker runs in a child
 * process under `valgrind --tool=callgrind` and drains N, then 3N prefilled jobs (publisher and subscriber
 * outside it); (instructions at 3N − at N) / 2N is the instructions per job of consuming, the process's
 * start, connect and close cancelling out. Same variants; the same count on a rerun whatever the load
 * (it counts instructions, not time), within the little the broker's pacing of deliveries moves.
 *
 *   npm run bench -- job-events [--jobs 20000] [--concurrency 100] [--rounds 3] [--rate 1000] [--seconds 5]
 *   npm run bench -- job-events --callgrind 2000 [--variants off,on,one-job] [--repeats 2]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import {
  createEventSubscriber,
  createWarren,
  defineTopology,
  Job,
  type JobHandler,
  type Warren,
} from '../../src';
import { createSilentLogger } from '../../src/core';
import { EventRelay, resolveEventsOptions } from '../../src/job-events';
import { RecordTrust } from '../../src/records';
import { createNaming } from '../../src/topology';
import { planOf } from '../../src/warren';
import { WarrenEventSink } from '../../src/warren/event-sink';
import { deletePlan, drainMeasured, type DrainFigures } from '../lib/warren-drain';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const CHILD_ENV = 'WARREN_BENCH_EVENTS_SUBSCRIBER';
const CALLGRIND_ENV = 'WARREN_BENCH_EVENTS_CALLGRIND_WORKER';

const topology = defineTopology({ queues: { bench: {} } });

@Job('bench.noop', { queue: 'bench', concurrency: 100, attempts: 1 })
class NoopJob implements JobHandler<{ n: number }> {
  handle() {}
}

/**
 * `idle`: events on, and a subscriber process subscribed in another namespace: the same processes on the
 * machine as `one-job`, but no filter reaches this worker (what the subscriber's mere presence costs).
 */
type Variant = 'off' | 'on' | 'one-job' | 'queue' | 'idle';
type ChildMessage =
  | { kind: 'subscribed' }
  | { kind: 'latencies'; values: number[] }
  | { kind: 'received'; count: number };

type Run = DrainFigures;

/** A subscriber in another process: to one job id, or to the queue (reporting each event's latency). */
async function startSubscriber(namespace: string, filter: { jobId: string } | { queue: string }) {
  const child = fork(__filename, [], {
    env: { ...process.env, [CHILD_ENV]: JSON.stringify({ namespace, filter }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await nextMessage(child, 'subscribed');
  return child;
}

function nextMessage<K extends ChildMessage['kind']>(
  child: ChildProcess,
  kind: K,
): Promise<Extract<ChildMessage, { kind: K }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: ChildMessage) => {
      if (m.kind !== kind) return;
      child.off('message', onMessage);
      resolve(m as Extract<ChildMessage, { kind: K }>);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`subscriber exited (${code})`)));
  });
}

async function stopSubscriber(child: ChildProcess): Promise<number[]> {
  const report = nextMessage(child, 'latencies');
  child.send('stop');
  const { values } = await report;
  await new Promise((resolve) => child.once('exit', resolve));
  return values;
}

async function newWarren(namespace: string, variant: Variant): Promise<Warren> {
  return createWarren({
    url: AMQP_URL,
    namespace,
    topology,
    handlers: [new NoopJob()],
    queues: { expiresMs: 5 * 60_000 },
    delay: { levels: 8 },
    ...(variant === 'off' ? { events: { publish: false } } : {}),
  });
}

async function costRun(variant: Variant, jobs: number): Promise<Run> {
  const namespace = `bench-events-${randomBytes(4).toString('hex')}`;
  const warren = await newWarren(namespace, variant);
  let child: ChildProcess | undefined;
  try {
    const ids: string[] = [];
    for (let i = 0; i < jobs; i += 500)
      for (const job of await Promise.all(
        Array.from({ length: Math.min(500, jobs - i) }, (_, k) => warren.publish(NoopJob, { n: i + k })),
      ))
        ids.push(job.jobId);
    if (variant === 'one-job')
      child = await startSubscriber(namespace, { jobId: ids[Math.floor(jobs / 2)]! });
    if (variant === 'queue') child = await startSubscriber(namespace, { queue: 'bench' });
    if (variant === 'idle') child = await startSubscriber(`${namespace}-idle`, { jobId: 'elsewhere' });
    return await drainMeasured(warren, jobs);
  } finally {
    if (child) await stopSubscriber(child);
    await warren.close();
    await deletePlan(AMQP_URL, planOf(warren));
    if (variant === 'idle') await deleteIdleNamespace(namespace);
  }
}

/** What the `idle` variant's subscriber declared in its namespace of its own. */
async function deleteIdleNamespace(namespace: string): Promise<void> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    await channel.deleteExchange(createNaming(`${namespace}-idle`).jobEvents());
  } finally {
    await connection.close();
  }
}

/** Jobs at `rate` per second for `seconds`; the subscriber's latencies (ms) of their completed events. */
async function latencyRun(rate: number, seconds: number): Promise<number[]> {
  const namespace = `bench-events-${randomBytes(4).toString('hex')}`;
  const warren = await newWarren(namespace, 'on');
  try {
    await warren.start();
    const child = await startSubscriber(namespace, { queue: 'bench' });
    const total = rate * seconds;
    let completed = 0;
    const done = new Promise<void>((resolve) => {
      warren.on('completed', () => {
        if (++completed === total) resolve();
      });
    });
    const started = Date.now();
    const tickMs = 10;
    for (let sent = 0; sent < total; ) {
      const due = Math.min(total, Math.floor(((Date.now() - started) * rate) / 1000) + rate / 100);
      const batch: Promise<unknown>[] = [];
      for (; sent < due; sent++) batch.push(warren.publish(NoopJob, { n: sent }));
      await Promise.all(batch);
      await new Promise((resolve) => setTimeout(resolve, tickMs));
    }
    await done;
    // let the last events arrive before the subscriber reports
    await new Promise((resolve) => setTimeout(resolve, 300));
    return await stopSubscriber(child);
  } finally {
    await warren.close();
    await deletePlan(AMQP_URL, planOf(warren));
  }
}

/**
 * Instructions the worker process executes to drain `jobs` prefilled jobs, start to exit, counted by
 * callgrind: the jobs are published (and the subscriber of `one-job` started) from here, outside it.
 */
async function workerInstructions(variant: Variant, jobs: number): Promise<number> {
  const namespace = `bench-events-${randomBytes(4).toString('hex')}`;
  const publisher = await newWarren(namespace, 'on');
  let child: ChildProcess | undefined;
  const out = join(os.tmpdir(), `warren-${namespace}.callgrind`);
  try {
    const ids: string[] = [];
    for (let i = 0; i < jobs; i += 500)
      for (const job of await Promise.all(
        Array.from({ length: Math.min(500, jobs - i) }, (_, k) => publisher.publish(NoopJob, { n: i + k })),
      ))
        ids.push(job.jobId);
    if (variant === 'one-job')
      child = await startSubscriber(namespace, { jobId: ids[Math.floor(jobs / 2)]! });
    if (variant === 'queue') child = await startSubscriber(namespace, { queue: 'bench' });
    if (variant === 'idle') child = await startSubscriber(`${namespace}-idle`, { jobId: 'elsewhere' });
    await new Promise<void>((resolve, reject) =>
      execFile(
        'valgrind',
        [
          '--tool=callgrind',
          `--callgrind-out-file=${out}`,
          '--smc-check=all-non-file',
          process.execPath,
          // V8 compiles and collects on the main thread: when optimized code is ready no longer depends on
          // how a background thread was scheduled, so a rerun executes the same instructions
          '--single-threaded',
          __filename,
        ],
        {
          env: { ...process.env, [CALLGRIND_ENV]: JSON.stringify({ namespace, jobs, variant }) },
          timeout: 900_000,
          maxBuffer: 16 << 20,
        },
        (error, _stdout, stderr) => (error ? reject(new Error(`callgrind: ${stderr || error}`)) : resolve()),
      ),
    );
    const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, 'utf8'));
    if (totals === null) throw new Error(`no instruction count in ${out}`);
    return Number(totals[1]);
  } finally {
    rmSync(out, { force: true });
    if (child) await stopSubscriber(child);
    await publisher.close();
    await deletePlan(AMQP_URL, planOf(publisher));
    if (variant === 'idle') await deleteIdleNamespace(namespace);
  }
}

/** The worker under callgrind: drains the prefilled queue, closes, exits. */
async function callgrindWorker(): Promise<void> {
  const { namespace, jobs, variant } = JSON.parse(process.env[CALLGRIND_ENV]!) as {
    namespace: string;
    jobs: number;
    variant: Variant;
  };
  const warren = await newWarren(namespace, variant);
  let completed = 0;
  const done = new Promise<void>((resolve) => {
    warren.on('completed', () => {
      if (++completed === jobs) resolve();
    });
  });
  await warren.start();
  await done;
  await warren.close();
}

/** `--callgrind N`: instructions per consumed job of each variant, (at 3N − at N) / 2N, `repeats` times. */
async function callgrindCost(jobs: number, variants: readonly Variant[], repeats: number): Promise<void> {
  console.log(
    `job events under callgrind: the worker drains ${jobs}, then ${3 * jobs} prefilled jobs; ` +
      `instructions per job = difference / ${2 * jobs}; load ${load()}`,
  );
  const perJob = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  for (let r = 1; r <= repeats; r++)
    for (const variant of r % 2 ? variants : [...variants].reverse()) {
      const small = await workerInstructions(variant, jobs);
      const large = await workerInstructions(variant, 3 * jobs);
      const each = (large - small) / (2 * jobs);
      perJob.get(variant)!.push(each);
      console.log(
        `  repeat ${r} ${variant.padEnd(8)} ${small} at ${jobs}, ${large} at ${3 * jobs}: ${each.toFixed(0)} instructions a job; load ${load()}`,
      );
    }
  const base = quantile(perJob.get('off') ?? [], 0.5);
  for (const variant of variants) {
    const each = quantile(perJob.get(variant)!, 0.5);
    const against = Number.isFinite(base) ? ` (${((each / base - 1) * 100).toFixed(2)} % against off)` : '';
    console.log(
      `median ${variant.padEnd(8)} ${each.toFixed(0)} instructions a job${against}; every repeat: ${perJob
        .get(variant)!
        .map((x) => x.toFixed(0))
        .join(', ')}`,
    );
  }
}

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
}

/**
 * The job path's share of the events, without the broker's noise: ns per job that the sink's checks add
 * (one `listens` and one `emit` of `completed`, one `listens` of `progress`), with the relay off, on with
 * no subscriber, and on with one subscriber to another job id. A warren with no listener of its own.
 */
function pathCost(): Record<'off' | 'on' | 'one-job', number> {
  const naming = createNaming('bench-path');
  const options = resolveEventsOptions({});
  const log = createSilentLogger();
  const relay = new EventRelay(naming, 'bench', options, new RecordTrust('bench-path', undefined, log), log);
  const withInterest = new EventRelay(
    naming,
    'bench',
    options,
    new RecordTrust('bench-path', undefined, log),
    log,
  );
  const interest = Buffer.from(
    JSON.stringify({
      v: 1,
      op: 'interest',
      subscriber: '0123456789abcdef',
      filter: { jobId: 'x' },
      leaseMs: 30_000,
      t: Date.now(),
    }),
  );
  (withInterest as unknown as { hear(m: unknown): void }).hear({
    content: interest,
    properties: { headers: {} },
  });
  const sinks = { off: new WarrenEventSink(), on: new WarrenEventSink(), 'one-job': new WarrenEventSink() };
  sinks.on.relayTo(relay);
  sinks['one-job'].relayTo(withInterest);
  const payload = {
    jobId: 'job-1',
    name: 'bench.noop',
    queue: 'bench',
    attempt: 1,
    durationMs: 1,
    result: undefined,
  };
  const n = 2_000_000;
  const result = { off: 0, on: 0, 'one-job': 0 };
  for (let pass = 0; pass < 3; pass++)
    for (const key of Object.keys(sinks) as (keyof typeof sinks)[]) {
      const sink = sinks[key];
      const started = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        sink.listens('progress', payload.jobId, payload.name, payload.queue);
        sink.listens('completed', payload.jobId, payload.name, payload.queue);
        sink.emit('completed', payload);
      }
      result[key] = Number(process.hrtime.bigint() - started) / n; // the last pass, warmed up
    }
  return result;
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '20000' },
      rounds: { type: 'string', default: '3' },
      rate: { type: 'string', default: '1000' },
      seconds: { type: 'string', default: '5' },
      variants: { type: 'string', default: 'off,on,one-job,queue' },
      callgrind: { type: 'string' },
      repeats: { type: 'string', default: '2' },
    },
  });
  if (values.callgrind !== undefined) {
    const jobs = Number(values.callgrind);
    if (!Number.isInteger(jobs) || jobs < 1)
      throw new Error(`--callgrind must be a job count (got ${values.callgrind})`);
    const variants = values.variants.split(',') as Variant[];
    return callgrindCost(jobs, variants, Number(values.repeats));
  }
  const jobs = Number(values.jobs);
  const rounds = Number(values.rounds);
  const variants = values.variants.split(',') as Variant[];
  const runs = new Map<Variant, Run[]>(variants.map((v) => [v, []]));
  console.log(
    `job events: ${jobs} no-op jobs per run, concurrency 100, ${rounds} rounds, quorum queue; load ${load()}`,
  );
  // a warm-up run of each variant, not counted: the first runs of a process are slower
  for (const variant of variants) await costRun(variant, Math.min(jobs, 5000));
  for (let round = 1; round <= rounds; round++) {
    for (const variant of round % 2 ? variants : [...variants].reverse()) {
      const run = await costRun(variant, jobs);
      runs.get(variant)!.push(run);
      console.log(
        `  round ${round} ${variant.padEnd(8)} ${run.jobsPerSecond.toFixed(0).padStart(6)} jobs/s  ${run.cpuUsPerJob.toFixed(1).padStart(6)} CPU µs/job`,
      );
    }
  }
  const median = (rs: Run[], f: (r: Run) => number) => quantile(rs.map(f), 0.5);
  // the ratio to `off` (or the first variant given) within each round (drift on a shared machine hits a
  // round's runs alike), then its median
  const baseName = variants.includes('off') ? 'off' : variants[0]!;
  const off = runs.get(baseName)!;
  const paired = (rs: Run[]) =>
    quantile(
      rs.map((r, i) => r.cpuUsPerJob / off[i]!.cpuUsPerJob),
      0.5,
    );
  for (const variant of variants) {
    const rs = runs.get(variant)!;
    const rate = median(rs, (r) => r.jobsPerSecond);
    const cpu = median(rs, (r) => r.cpuUsPerJob);
    const baseRate = median(off, (r) => r.jobsPerSecond);
    const baseCpu = median(off, (r) => r.cpuUsPerJob);
    console.log(
      `median ${variant.padEnd(8)} ${rate.toFixed(0)} jobs/s (${((rate / baseRate - 1) * 100).toFixed(1)} % against ${baseName}), ` +
        `${cpu.toFixed(1)} CPU µs/job (${((cpu / baseCpu - 1) * 100).toFixed(1)} %; median of the rounds' ratios ${((paired(rs) - 1) * 100).toFixed(1)} %)`,
    );
  }
  // one-job beside idle: the same processes on the machine (a subscriber process), a filter held or not
  if (runs.has('one-job') && runs.has('idle')) {
    const idle = runs.get('idle')!;
    const ratio = quantile(
      runs.get('one-job')!.map((r, i) => r.cpuUsPerJob / idle[i]!.cpuUsPerJob),
      0.5,
    );
    console.log(`one-job against idle: median of the rounds' ratios ${((ratio - 1) * 100).toFixed(1)} %`);
  }
  const path = pathCost();
  console.log(
    `job path, ns per job added by the sink's checks: off ${path.off.toFixed(1)}, on ${path.on.toFixed(1)}, ` +
      `one subscriber to another job id ${path['one-job'].toFixed(1)}`,
  );
  const rate = Number(values.rate);
  const latencies = await latencyRun(rate, Number(values.seconds));
  console.log(
    `latency at ${rate} jobs/s for ${values.seconds} s, worker's completed → subscriber in another process: ` +
      `${latencies.length} events, p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, ` +
      `max ${Math.max(...latencies).toFixed(1)} ms; load ${load()}`,
  );
}

/** The subscriber process: subscribes, records each event's latency, reports them when told to stop. */
async function subscriberChild(): Promise<void> {
  const { namespace, filter } = JSON.parse(process.env[CHILD_ENV]!) as {
    namespace: string;
    filter: { jobId: string } | { queue: string };
  };
  const subscriber = await createEventSubscriber({ url: AMQP_URL, namespace, topology, jobs: [NoopJob] });
  const subscription = await subscriber.subscribe(filter, { maxLength: 100_000 });
  const latencies: number[] = [];
  process.send?.({ kind: 'subscribed' } satisfies ChildMessage);
  process.on('message', async () => {
    process.send?.({ kind: 'latencies', values: latencies } satisfies ChildMessage, () => {
      void subscriber.close().finally(() => process.exit(0));
    });
  });
  for await (const event of subscription)
    if (event.kind === 'completed') latencies.push(Date.now() - event.at.getTime());
}

if (process.env[CALLGRIND_ENV] !== undefined && require.main === module) {
  callgrindWorker().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error('job events worker under callgrind failed', error);
      process.exit(1);
    },
  );
}

if (process.env[CHILD_ENV] !== undefined && require.main === module) {
  subscriberChild().catch((error: unknown) => {
    console.error('job events subscriber failed', error);
    process.exit(1);
  });
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
