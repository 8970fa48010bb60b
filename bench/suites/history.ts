/**
 * What the job history costs on the job path: jobs/s and CPU µs per job of one worker draining a prefilled
 * queue of jobs at concurrency 100 (a payload of about 120 bytes, a result of about 20), without history
 * (`off`), with `history` keeping no payload or result (`history`: started and completed events per job,
 * batched into the history stream), with it keeping both (`contents`, the default: the body's bytes as text
 * and the result's JSON), and with a `signingKey` too (`signed`: every batch signed). Variants alternate
 * within each round (the order turning each round) so drift on a shared machine hits them alike; the
 * report gives each round and the medians, and the differences within each round.
 *
 *   npm run bench -- history [--jobs 20000] [--concurrency 100] [--rounds 5] [--variants off,history,contents]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { createWarren, defineTopology, Job, type JobHandler, type Warren } from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { createOps } from '../../src/ops';
import { createNaming } from '../../src/topology';
import { HistoryWriter, keptPayload, keptResult, resolveHistoryOptions } from '../../src/history';
import type { Logger } from '../../src/core';
import type { RecordTrust } from '../../src/records';
import { planOf } from '../../src/warren';
import { median } from '../lib/stats';
import { drainMeasured } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    variants: { type: 'string', default: 'off,history,contents' },
    loop: { type: 'string', default: '500000' },
  },
});
const JOBS = Number(values.jobs);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const LOOP = Number(values.loop);
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const topology = defineTopology({ queues: { bench: {} } });

@Job('bench.noop', { queue: 'bench', concurrency: CONCURRENCY, attempts: 1 })
class NoopJob implements JobHandler<{ n: number; text: string }> {
  handle(data: { n: number; text: string }) {
    return { ok: true, n: data.n };
  }
}
/** About 120 bytes of JSON a job, as a small real payload is. */
const TEXT = 'x'.repeat(100);

type Variant = 'off' | 'history' | 'contents' | 'signed';
const VARIANTS: readonly Variant[] = ['off', 'history', 'contents', 'signed'];
/** Each variant's history options: `history` keeps no payload or result, `contents` keeps both (the default). */
const HISTORY: Record<Variant, object | undefined> = {
  off: undefined,
  history: { payloads: false, results: false },
  contents: {},
  signed: {},
};

const SIGNING_KEY = 'bench-signing-key-0123456789abcdef0123';

interface Run {
  readonly jobsPerSecond: number;
  readonly cpuUsPerJob: number;
  /** With history: how long `ops.job(id)` took for a job in the middle of the run (a fresh ops: cold). */
  readonly lookupMs?: number;
}

async function runOnce(variant: Variant): Promise<Run> {
  const namespace = `bench-hist-${randomBytes(4).toString('hex')}`;
  let warren: Warren | undefined;
  try {
    const running = await createWarren({
      url: AMQP_URL,
      namespace,
      topology,
      handlers: [new NoopJob()],
      queues: { expiresMs: 5 * 60_000 },
      delay: { levels: 8 },
      ...(HISTORY[variant] !== undefined ? { history: HISTORY[variant] } : {}),
      ...(variant === 'signed' ? { signingKey: SIGNING_KEY } : {}),
    });
    warren = running;
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i += 500)
      for (const job of await Promise.all(
        Array.from({ length: Math.min(500, JOBS - i) }, (_, k) =>
          running.publish(NoopJob, { n: i + k, text: TEXT }),
        ),
      ))
        ids.push(job.jobId);
    const run = await drainMeasured(running, JOBS);
    if (variant === 'off') return run;
    return { ...run, lookupMs: await lookup(namespace, ids[Math.floor(JOBS / 2)]!, variant === 'signed') };
  } finally {
    if (warren) {
      await warren.close();
      await deletePlan(planOf(warren), namespace);
    }
  }
}

async function lookup(namespace: string, jobId: string, signed: boolean): Promise<number> {
  // Let the last batch reach the stream first.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const ops = createOps({
    url: AMQP_URL,
    namespace,
    topology,
    jobs: [NoopJob],
    ...(signed ? { signingKey: SIGNING_KEY } : {}),
  });
  try {
    const started = process.hrtime.bigint();
    const status = await ops.job(jobId);
    if (status.state !== 'completed') throw new Error(`job ${jobId} is ${status.state}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  } finally {
    await ops.close();
  }
}

async function deletePlan(plan: TopologyPlan, namespace: string): Promise<void> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    for (const queue of plan.queues) await channel.deleteQueue(queue.name);
    for (const exchange of plan.exchanges) await channel.deleteExchange(exchange.name);
    await channel.deleteQueue(createNaming(namespace).jobHistory());
    await channel.deleteQueue(createNaming(namespace).jobHistoryIndex());
  } finally {
    await connection.close();
  }
}

/**
 * What keeping a payload and a result adds to a completed event, alone: the event built as the history
 * builds it (with or without the body's text and the result's JSON), recorded by the history's own writer,
 * which cuts and serializes its batches (its publish goes to a channel that drops it), in a loop; CPU µs
 * per event.
 */
async function loopCost(withContents: boolean): Promise<number> {
  const body = Buffer.from(JSON.stringify({ n: 1, text: TEXT }));
  const result = { ok: true, n: 1 };
  const jobId = '7f1d0ee2-29cb-4e7e-bdde-17259e53b534';
  let bytes = 0;
  const channel = {
    on: () => channel,
    publish: (_exchange: string, _queue: string, content: Buffer) => {
      bytes += content.length;
      return true;
    },
    close: async () => undefined,
  };
  const trust = { proof: () => ({}) } as unknown as RecordTrust;
  const log = { warn: () => undefined } as unknown as Logger;
  const options = resolveHistoryOptions({ flushMs: 60_000 });
  const writer = new HistoryWriter('s', options, { p: 'p', h: 'h', pid: 1 }, log, trust);
  await writer.open(async () => channel as unknown as amqp.Channel);
  const before = process.cpuUsage();
  for (let i = 0; i < LOOP; i++)
    writer.record({
      j: jobId,
      n: 'bench.noop',
      q: 'bench',
      k: 'completed',
      t: Date.now(),
      a: 1,
      d: 3,
      ...(withContents
        ? { ...keptPayload(body, options.maxPayloadBytes), ...keptResult(result, options.maxResultBytes) }
        : {}),
    });
  writer.flush();
  const used = process.cpuUsage(before);
  if (bytes === 0) throw new Error('nothing serialized');
  return (used.user + used.system) / LOOP;
}

async function main(): Promise<void> {
  if (LOOP > 0) {
    const bare: number[] = [];
    const kept: number[] = [];
    for (let i = 0; i < 3; i++) {
      bare.push(await loopCost(false));
      kept.push(await loopCost(true));
    }
    console.log(
      `a completed event alone (${LOOP} in a loop through the history's writer, its batches cut and serialized), 3 loops each, alternating: without payload and result ${bare.map((x) => x.toFixed(2)).join(', ')} µs; with them ${kept.map((x) => x.toFixed(2)).join(', ')} µs; added ${(median(kept) - median(bare)).toFixed(2)} µs CPU an event (medians)`,
    );
  }
  const variants = values.variants.split(',') as Variant[];
  for (const v of variants) if (!VARIANTS.includes(v)) throw new Error(`unknown variant ${v}`);
  const runs = new Map<Variant, Run[]>(variants.map((v) => [v, []]));
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  console.log(
    `history overhead: ${JOBS} jobs per run (payload ~120 B, result ~20 B), concurrency ${CONCURRENCY}, ${ROUNDS} rounds, quorum queue, variants ${variants.join(', ')}; load ${load()}`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    for (const variant of round % 2 ? variants : [...variants].reverse()) {
      const run = await runOnce(variant);
      runs.get(variant)!.push(run);
      console.log(
        `  round ${round} ${variant.padEnd(8)} ${run.jobsPerSecond.toFixed(0).padStart(6)} jobs/s  ${run.cpuUsPerJob.toFixed(1).padStart(6)} CPU µs/job` +
          (run.lookupMs === undefined
            ? ''
            : `  ops.job(id) over ${JOBS * 3} events: ${run.lookupMs.toFixed(0)} ms`) +
          `  load ${load()}`,
      );
    }
  }
  const rate = (rs: Run[]) => median(rs.map((r) => r.jobsPerSecond));
  const cpu = (rs: Run[]) => median(rs.map((r) => r.cpuUsPerJob));
  console.log(
    '\n| variant | median jobs/s | median CPU µs/job | CPU µs/job, each round |\n| --- | --- | --- | --- |',
  );
  for (const [variant, rs] of runs)
    console.log(
      `| ${variant} | ${rate(rs).toFixed(0)} | ${cpu(rs).toFixed(1)} | ${rs.map((r) => r.cpuUsPerJob.toFixed(1)).join(', ')} |`,
    );
  // the added cost of one variant over another, round by round (both ran in the same round)
  const pairs: [Variant, Variant][] = [
    ['history', 'off'],
    ['contents', 'history'],
    ['contents', 'off'],
    ['signed', 'contents'],
  ];
  for (const [a, b] of pairs) {
    const ra = runs.get(a);
    const rb = runs.get(b);
    if (!ra || !rb) continue;
    const diffs = ra.map((r, i) => r.cpuUsPerJob - rb[i]!.cpuUsPerJob);
    console.log(
      `${a} over ${b}: ${median(diffs) >= 0 ? '+' : ''}${median(diffs).toFixed(1)} CPU µs/job (median of the rounds' differences; each: ${diffs.map((d) => d.toFixed(1)).join(', ')}), throughput ${((rate(ra) / rate(rb) - 1) * 100).toFixed(1)} %`,
    );
  }
  console.log(`load after: ${load()}`);
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
