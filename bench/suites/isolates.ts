/**
 * Isolated processors beside inline handlers (issue 34), on the pool itself (no broker but for the heartbeat
 * check): overhead per job with a 1 KiB payload, a CPU-bound job with the pool at 2 against inline, the
 * main event loop's delay while isolates burn CPU (and whether a broker connection's heartbeats lapse),
 * and how long after its hard timeout a looping job's isolate is gone. Ratios within one run: the machine
 * is shared.
 *
 *   npm run bench -- isolates [--jobs 2000] [--cpu-jobs 40] [--seconds 15] [--kills 200]
 *   (--seconds per event-loop figure, four figures; --kills 1000 for the full count)
 */
import { fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createSilentLogger, type IsolateKind } from '../../src/core';
import { createWarren } from '../../src';
import { IsolatePool } from '../../src/worker/isolate-pool';
import { resolveIsolateSettings } from '../../src/worker/isolate-settings';
import { burn, handle } from '../lib/isolate-processor';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    'cpu-jobs': { type: 'string', default: '40' },
    seconds: { type: 'string', default: '15' },
    kills: { type: 'string', default: '200' },
  },
});
const JOBS = Number(values.jobs);
const CPU_JOBS = Number(values['cpu-jobs']);
const SECONDS = Number(values.seconds);
const KILLS = Number(values.kills);
const CPU_MS = 25;
const KINDS: readonly IsolateKind[] = ['thread', 'process'];

function poolOf(kind: IsolateKind, size: number, hardTimeoutMs = 60_000): IsolatePool {
  const settings = resolveIsolateSettings(
    {
      name: 'bench.isolate',
      queue: 'bench',
      isolate: kind,
      processor: require.resolve('../lib/isolate-processor'),
      hardTimeoutMs,
      pool: { size, warm: size },
    },
    { timeoutMs: hardTimeoutMs, concurrency: size, isTimeoutSet: true },
  )!;
  return new IsolatePool('bench.isolate', settings, createSilentLogger());
}

const job = {
  jobId: 'bench',
  name: 'bench.isolate',
  attempt: 1,
  maxAttempts: 1,
  queue: 'bench',
  headers: {},
  enqueuedAt: 0,
  redelivered: false,
  openBreakers: [],
};

function run(pool: IsolatePool, data: unknown) {
  return pool.run({ data, job, onMessage: () => undefined });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** Rounds of the overhead figure, interleaved (bare, then warren, per kind): the medians are reported. */
const OVERHEAD_ROUNDS = 5;

async function overhead(): Promise<void> {
  const body = 'x'.repeat(1024);
  const timeIt = async (call: () => Promise<unknown>, warmUp = 0) => {
    for (let i = 0; i < warmUp; i++) await call();
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < JOBS; i++) await call();
    const wallMs = (performance.now() - start) / JOBS;
    const used = process.cpuUsage(cpu);
    return { wallMs, cpuUs: (used.user + used.system) / JOBS };
  };
  const inline = await timeIt(async () => handle({ mode: 'echo', body }), 200);
  console.log(
    `overhead, 1 KiB payload, ${JOBS} jobs one at a time, medians of ${OVERHEAD_ROUNDS} interleaved rounds: inline ${inline.wallMs.toFixed(4)} ms/job, main CPU ${inline.cpuUs.toFixed(1)} µs/job`,
  );
  const bare = await bareEchoes(body);
  try {
    for (const kind of KINDS) {
      const pool = poolOf(kind, 1);
      await pool.start();
      const isolatedCall = async () => {
        const outcome = await run(pool, { mode: 'echo', body }).outcome;
        if (outcome.kind !== 'completed') throw new Error(`echo ${outcome.kind}`);
      };
      const rounds = { bare: [] as Timing[], isolated: [] as Timing[] };
      // the machine's load moves both figures between rounds: each round measures both, back to back
      for (let r = 0; r < OVERHEAD_ROUNDS; r++) {
        rounds.bare.push(await timeIt(bare[kind], r === 0 ? 200 : 0));
        rounds.isolated.push(await timeIt(isolatedCall, r === 0 ? 200 : 0));
      }
      await pool.close();
      const b = medianTiming(rounds.bare);
      const i = medianTiming(rounds.isolated);
      const added = rounds.isolated.map((t, k) => t.wallMs - rounds.bare[k]!.wallMs).sort((x, y) => x - y);
      console.log(
        `  ${kind.padEnd(7)} ${i.wallMs.toFixed(4)} ms/job round trip, ${Math.round(1000 / i.wallMs)} jobs/s; a bare ${kind} echo ${b.wallMs.toFixed(4)} ms: warren adds ${added[Math.floor(added.length / 2)]!.toFixed(4)} ms (rounds ${added.map((x) => x.toFixed(3)).join(' ')}); CPU ${i.cpuUs.toFixed(1)} µs/job (bare ${b.cpuUs.toFixed(1)}; a thread's own CPU counts in this process)`,
      );
    }
  } finally {
    await bare.close();
  }
}

type Timing = { wallMs: number; cpuUs: number };

function medianTiming(timings: readonly Timing[]): Timing {
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { wallMs: mid(timings.map((t) => t.wallMs)), cpuUs: mid(timings.map((t) => t.cpuUs)) };
}

/** The same round trip through a bare thread and a bare child process: the runtime's floor. */
async function bareEchoes(
  body: string,
): Promise<Record<IsolateKind, () => Promise<unknown>> & { close(): Promise<void> }> {
  const script = require.resolve('../lib/isolate-echo');
  const worker = new Worker(script);
  const child = fork(script, [], { serialization: 'advanced', execArgv: [] });
  const echo = (send: (m: unknown) => void, on: (l: (m: unknown) => void) => void) => {
    let pending: ((v: unknown) => void) | undefined;
    on((m) => pending?.(m));
    return () =>
      new Promise((resolve) => {
        pending = resolve;
        send({ n: 1, body, job });
      });
  };
  return {
    thread: echo(
      (m) => worker.postMessage(m),
      (l) => worker.on('message', l),
    ),
    process: echo(
      (m) => child.send(m as object),
      (l) => child.on('message', l),
    ),
    close: async () => {
      await worker.terminate();
      child.kill();
    },
  };
}

async function cpuBound(): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < CPU_JOBS; i++) burn(CPU_MS);
  const inlineMs = performance.now() - start;
  console.log(
    `\nCPU-bound, ${CPU_JOBS} jobs of ${CPU_MS} ms, ${availableParallelism()} cores: inline ${Math.round(inlineMs)} ms`,
  );
  for (const kind of KINDS) {
    const pool = poolOf(kind, 2);
    await pool.start();
    const began = performance.now();
    await Promise.all(
      Array.from({ length: CPU_JOBS }, () => run(pool, { mode: 'burn', ms: CPU_MS }).outcome),
    );
    const poolMs = performance.now() - began;
    await pool.close();
    console.log(
      `  ${kind.padEnd(7)} pool 2: ${Math.round(poolMs)} ms, ${(inlineMs / poolMs).toFixed(2)}× inline`,
    );
  }
}

/** Isolates burning CPU without pause while a warren connection holds its heartbeats. */
async function eventLoop(): Promise<void> {
  const warren = await createWarren({
    url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    connection: { heartbeatSeconds: 1 },
  });
  let disconnects = 0;
  warren.on('disconnected', () => {
    disconnects += 1;
  });
  console.log(
    `\nmain event-loop delay, isolates burning CPU for ${SECONDS} s per figure (heartbeats every 1 s):`,
  );
  try {
    for (const kind of KINDS)
      for (const size of [1, 2]) {
        const pool = poolOf(kind, size);
        await pool.start();
        const histogram = monitorEventLoopDelay({ resolution: 5 });
        const end = performance.now() + SECONDS * 1000;
        histogram.enable();
        await Promise.all(
          Array.from({ length: size }, async () => {
            while (performance.now() < end) await run(pool, { mode: 'burn', ms: 50 }).outcome;
          }),
        );
        histogram.disable();
        await pool.close();
        console.log(
          `  ${kind.padEnd(7)} pool ${size}: p99 ${(histogram.percentile(99) / 1e6).toFixed(1)} ms, max ${(histogram.max / 1e6).toFixed(1)} ms, connection lost ${disconnects} times so far`,
        );
      }
  } finally {
    await warren.close();
  }
}

async function killLatency(): Promise<void> {
  const HARD_MS = 20;
  console.log(
    `\nkill latency over ${KILLS} hard timeouts of ${HARD_MS} ms (from the deadline to the isolate gone):`,
  );
  for (const kind of KINDS) {
    const pool = poolOf(kind, 1, HARD_MS);
    await pool.start();
    const late: number[] = [];
    // the deadline's timer fires late by what the main loop lags: shown beside, for scale
    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    for (let i = 0; i < KILLS; i++) {
      const running = run(pool, { mode: 'loop' });
      const outcome = await running.outcome;
      if (outcome.kind !== 'failed') throw new Error(`a loop ended ${outcome.kind}`);
      late.push(performance.now() - running.startedAt - HARD_MS);
    }
    histogram.disable();
    await pool.close();
    late.sort((a, b) => a - b);
    console.log(
      `  ${kind.padEnd(7)} p50 ${percentile(late, 0.5).toFixed(1)} ms, p99 ${percentile(late, 0.99).toFixed(1)} ms, max ${late.at(-1)!.toFixed(1)} ms (main loop delay meanwhile: p99 ${(histogram.percentile(99) / 1e6).toFixed(1)} ms, max ${(histogram.max / 1e6).toFixed(1)} ms)`,
    );
  }
}

/** The suite's entry (bench/main.ts). */
export async function run_(): Promise<void> {
  await overhead();
  await cpuBound();
  await eventLoop();
  await killLatency();
}
export { run_ as run };
