/**
 * Per-key limits (issue 38, docs/guide/per-key-limits.md), with 3 worker processes (test/fixtures/key-limit-worker)
 * on a queue of 6 unordered partitions, each reporting every start and end over IPC:
 *
 * - rate: `--keys` keys published at `--rate` jobs/s each (a per-key limit of `--rate` per second), first alone,
 *   then beside `--saturated` keys with a backlog of 3 windows' worth each: the saturated keys' starts per whole
 *   window against the limit (error = starts - max), and the unsaturated keys' completion rate beside them
 *   against alone.
 * - concurrency: `--jobs` jobs over 50 keys at perKeyConcurrency 2, handlers of 0-2 ms: the most runs of a key at
 *   once in the ledger, and the violations (a start while 2 of its key ran).
 * - cost: `--drain` no-op jobs prefilled over 1,000 keys, drained by one in-process worker at concurrency 10
 *   from the same partitions with per-key limits on (a cap no key reaches) and off, interleaved rounds: jobs/s
 *   and this process's CPU per job.
 *
 *   npm run bench -- per-key [--keys 1000] [--rate 10] [--saturated 20] [--seconds 10] [--jobs 100000]
 *                            [--drain 20000] [--rounds 3] [--only=rate,concurrency,cost] [--quick]
 *                            [--dump <file>: the saturated keys' start and end stamps, as JSON]
 *
 * The broker is `AMQP_URL` (default 3.10 on 5672; `AMQP_URL=amqp://guest:guest@127.0.0.1:5673` for the 4.3 node,
 * with `WARREN_TEST_SERVER=4.3` so the test profile agrees). At 1,000 keys the light keys are 10,000 jobs/s: each
 * tick of them is one `publishMany`, and the workers send their stamps in batches every 50 ms.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createWarren, defineJob, defineTopology, type Warren } from '../../src';
import { planOf } from '../../src/warren';
import { ChildWorkers } from '../../test/fixtures/child-workers';
import {
  keyLimitJobs,
  keyLimitTopology,
  type KeyLimitRunEvent,
  type KeyLimitWorkerMessage,
  type KeyLimitWorkerSettings,
} from '../../test/fixtures/key-limit-worker';
import { testProfile } from '../../test/support/test-broker';
import { rabbitmqVersion } from '../lib/machine-info';
import { RESULTS_DIR } from '../lib/paths';
import { deletePlan } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '10' },
    saturated: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '10' },
    jobs: { type: 'string', default: '100000' },
    drain: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string', default: 'rate,concurrency,cost' },
    quick: { type: 'boolean', default: false },
    dump: { type: 'string' },
  },
});
const QUICK = values.quick;
const KEYS = QUICK ? 20 : Number(values.keys);
const RATE = QUICK ? 5 : Number(values.rate);
const SATURATED = QUICK ? 3 : Number(values.saturated);
const SECONDS = QUICK ? 4 : Number(values.seconds);
const JOBS = QUICK ? 2000 : Number(values.jobs);
const DRAIN = QUICK ? 2000 : Number(values.drain);
const ROUNDS = QUICK ? 1 : Number(values.rounds);
const ONLY = new Set(values.only.split(','));
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PARTITIONS = 6;
/** A window where the light keys started within this of their tick, at the median, is one the machine kept up in. */
const KEPT_UP_MS = 500;
type RunEvent = KeyLimitRunEvent;

const lines: string[] = [];
const say = (line: string) => {
  console.log(line);
  lines.push(line);
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** Three worker processes and a publisher on a fresh namespace; `stop` kills them and deletes the plan. */
async function fleet(overrides: Partial<KeyLimitWorkerSettings>) {
  const namespace = `bench-perkey-${randomBytes(4).toString('hex')}`;
  const settings: KeyLimitWorkerSettings = {
    partitions: PARTITIONS,
    concurrency: 10,
    perKey: 2,
    rateMax: RATE,
    rateMs: 1000,
    heartbeatMs: 500,
    url: AMQP_URL,
    batchEventsMs: 50,
    ...overrides,
  };
  // the workers' profile (test delay levels), so that both declare the same plan
  const publisher = await createWarren({
    ...testProfile(namespace),
    url: AMQP_URL,
    topology: keyLimitTopology(PARTITIONS),
    handlers: [...keyLimitJobs(settings, () => undefined)],
  });
  const workers = new ChildWorkers<KeyLimitWorkerMessage>('../fixtures/key-limit-worker');
  const events: RunEvent[] = [];
  const owned = new Map<number, readonly number[]>();
  const deferred = new Map<number, number>();
  for (let i = 0; i < 3; i++) {
    const worker = workers.fork([namespace, JSON.stringify(settings)]);
    worker.child.on('message', (m: KeyLimitWorkerMessage) => {
      if (m.kind === 'owned') owned.set(m.pid, m.owned);
      else if (m.kind === 'batch') for (const e of m.events) events.push(e);
      else if (m.kind === 'deferred') deferred.set(m.pid, m.deferred);
      else if (m.kind !== 'ready') events.push(m);
    });
  }
  const deadline = Date.now() + 60_000;
  for (let stable = 0; stable < 10; await sleep(100)) {
    const all = [...owned.values()].flat().sort((a, b) => a - b);
    stable = all.length === PARTITIONS && all.every((p, i) => p === i) && owned.size === 3 ? stable + 1 : 0;
    if (Date.now() > deadline) throw new Error('the 3 workers did not settle their partitions');
  }
  return {
    events,
    /** Jobs re-delayed for their key's limit so far, over the 3 processes (as last reported, 500 ms at most old). */
    deferred: () => [...deferred.values()].reduce((a, b) => a + b, 0),
    publish: (job: 'limited.call' | 'limited.rated', key: string, seq: number, ms: number) =>
      publisher.publish(job, { key, seq, ms }),
    /** One `publishMany` of a rated job per key: 1,000 keys a tick cost the bench one batch, not 1,000 calls. */
    publishRated: async (keys: readonly string[], seq: number) => {
      const results = await publisher.publishMany(
        keys.map((key) => ({ job: 'limited.rated', data: { key, seq, ms: 0 } })),
      );
      const failed = results.find((r) => r.status === 'failed');
      if (failed?.status === 'failed') throw failed.error;
    },
    stop: async () => {
      await workers.killAll();
      await publisher.close({ graceMs: 200 });
      await deletePlan(AMQP_URL, planOf(publisher));
    },
  };
}

async function rate(): Promise<void> {
  const f = await fleet({});
  try {
    const light = Array.from({ length: KEYS }, (_, i) => `light-${i}`);
    const hot = Array.from({ length: SATURATED }, (_, i) => `hot-${i}`);
    /** Publishes each light key at RATE/s for SECONDS (spread over each second); seq from seq0. */
    let late = 0;
    const startedAt = new Map<number, number>();
    const steady = async (seq0: number) => {
      const started = Date.now();
      startedAt.set(seq0, started);
      for (let s = 0; s < SECONDS; s++)
        for (let r = 0; r < RATE; r++) {
          const at = started + s * 1000 + (r * 1000) / RATE;
          if (at > Date.now()) await sleep(at - Date.now());
          else late += 1;
          await f.publishRated(light, seq0 + s * RATE + r);
        }
      await sleep(2000);
      const ends = f.events.filter(
        (e) =>
          e.kind === 'end' && e.key.startsWith('light-') && e.seq >= seq0 && e.seq < seq0 + SECONDS * RATE,
      );
      return ends.length / (SECONDS * RATE * KEYS);
    };
    const alone = await steady(0);
    const hotFrom = f.events.length;
    const deferredAlone = f.deferred();
    const backlog = 3 * RATE * SECONDS;
    for (let seq = 0; seq < backlog; seq++) await f.publishRated(hot, seq);
    const beside = await steady(100_000);
    await sleep(600);
    const deferredBeside = f.deferred() - deferredAlone;
    const hotStarts = f.events
      .slice(hotFrom)
      .filter((e) => e.kind === 'start' && e.key.startsWith('hot-')).length;
    // the light keys' start lag beside the saturated keys (start - the time their tick was due): a window
    // where it is high is one where the machine was behind (publisher or workers at their concurrency), and
    // a saturated key's job waits for a worker slot like any other
    const besideAt = startedAt.get(100_000)!;
    const lags = f.events
      .filter((e) => e.kind === 'start' && e.key.startsWith('light-') && e.seq >= 100_000)
      .map((e) => ({ at: e.at, lag: e.at - (besideAt + ((e.seq - 100_000) * 1000) / RATE) }))
      .sort((a, b) => a.at - b.at);
    const lagIn = (w: number) => {
      const inside = lags.filter((l) => l.at >= w && l.at < w + 1000).map((l) => l.lag);
      return inside.length === 0 ? 0 : inside.sort((a, b) => a - b)[Math.floor(inside.length / 2)]!;
    };
    const keptUp: number[] = [];
    // the saturated keys' starts per whole window while their backlog lasted
    const errors: number[] = [];
    for (const key of hot) {
      const starts = f.events
        .slice(hotFrom)
        .filter((e) => e.kind === 'start' && e.key === key)
        .map((e) => e.at)
        .sort((a, b) => a - b);
      if (starts.length < 2) continue;
      for (let w = starts[0]! + 1000; w + 1000 <= starts[starts.length - 1]!; w += 1000) {
        const error = starts.filter((s) => s >= w && s < w + 1000).length - RATE;
        errors.push(error);
        if (lagIn(w) < KEPT_UP_MS) keptUp.push(error);
      }
    }
    if (values.dump !== undefined)
      writeFileSync(
        values.dump,
        JSON.stringify(f.events.slice(hotFrom).filter((e) => e.key.startsWith('hot-'))),
      );
    errors.sort((a, b) => a - b);
    const within = errors.filter((e) => Math.abs(e) <= 1).length;
    say(
      `\n## rate: ${KEYS} keys at ${RATE}/s each (limit ${RATE} per second per key), ${SATURATED} saturated (load ${load()})`,
    );
    say(
      `- unsaturated keys, share of their jobs completed within their ${SECONDS} s (+2 s): alone ${(alone * 100).toFixed(1)} %, beside the saturated keys ${(beside * 100).toFixed(1)} % (ratio ${(beside / alone).toFixed(3)})`,
    );
    say(
      `- re-delays for a key's limit: ${deferredAlone} while the light keys ran alone; ${deferredBeside} beside the saturated keys, while these started ${hotStarts} jobs of their backlog of ${SATURATED * backlog} (one per job not waiting aside is the floor; more is jobs going round again)`,
    );
    say(
      `- publishing: ${late} of ${2 * SECONDS * RATE} ticks of ${KEYS} jobs began after their time (the publisher behind)`,
    );
    say(
      `- saturated keys, starts per whole window minus the limit, over ${errors.length} windows: min ${errors[0]}, median ${errors[Math.floor(errors.length / 2)]}, max ${errors[errors.length - 1]}; within +-1: ${within} (${((within / Math.max(1, errors.length)) * 100).toFixed(1)} %)`,
    );
    keptUp.sort((a, b) => a - b);
    const keptWithin = keptUp.filter((e) => Math.abs(e) <= 1).length;
    say(
      `- of those, the ${keptUp.length} windows where the light keys' median start lag was under ${KEPT_UP_MS} ms (the machine keeping up): min ${keptUp[0]}, median ${keptUp[Math.floor(keptUp.length / 2)]}, max ${keptUp[keptUp.length - 1]}; within +-1: ${keptWithin} (${((keptWithin / Math.max(1, keptUp.length)) * 100).toFixed(1)} %)`,
    );
  } finally {
    await f.stop();
  }
}

async function concurrency(): Promise<void> {
  const f = await fleet({ perKey: 2, concurrency: 10 });
  try {
    const keys = Array.from({ length: 50 }, (_, i) => `acct-${i}`);
    for (let seq = 0; seq < JOBS / keys.length; seq++)
      await Promise.all(keys.map((key) => f.publish('limited.call', key, seq, seq % 3)));
    const deadline = Date.now() + 30 * 60_000;
    while (f.events.filter((e) => e.kind === 'end').length < JOBS && Date.now() < deadline) await sleep(500);
    let violations = 0;
    let most = 0;
    for (const key of keys) {
      const marks = f.events
        .filter((e) => e.key === key)
        .map((e) => ({ at: e.at, delta: e.kind === 'start' ? 1 : -1 }))
        .sort((a, b) => a.at - b.at || a.delta - b.delta);
      let running = 0;
      for (const mark of marks) {
        running += mark.delta;
        if (mark.delta === 1 && running > 2) violations += 1;
        most = Math.max(most, running);
      }
    }
    const ended = f.events.filter((e) => e.kind === 'end').length;
    say(
      `\n## concurrency: ${JOBS} jobs over 50 keys, perKeyConcurrency 2, 3 processes at concurrency 10 (load ${load()})`,
    );
    say(`- ended ${ended}; most runs of a key at once ${most}; violations ${violations}`);
  } finally {
    await f.stop();
  }
}

/** The cost runs: no per-key limit, a per-key concurrency never reached, a per-key rate never reached. */
type CostVariant = 'off' | 'concurrency' | 'rate';
const LIMITS_OF: Record<CostVariant, object> = {
  off: {},
  concurrency: { perKeyConcurrency: 1000 },
  rate: { limiter: { max: 10_000, durationMs: 1000, per: 'key' } },
};

async function drainOnce(variant: CostVariant): Promise<{ jobsPerSecond: number; cpuUsPerJob: number }> {
  const job = defineJob(
    'bench.step',
    {
      queue: 'bench',
      concurrency: 10,
      attempts: 1,
      key: (row: { key: string }) => row.key,
      ...LIMITS_OF[variant],
    },
    () => undefined,
  );
  const warren: Warren = await createWarren({
    url: AMQP_URL,
    namespace: `bench-perkey-${randomBytes(4).toString('hex')}`,
    topology: defineTopology({ queues: { bench: { partitions: { count: PARTITIONS, order: 'none' } } } }),
    handlers: [job],
    queues: { expiresMs: 10 * 60_000 },
    delay: { levels: 4 },
  });
  try {
    for (let i = 0; i < DRAIN; i += 1000)
      await warren.publishMany(
        Array.from({ length: Math.min(1000, DRAIN - i) }, (_, j) => ({
          job: 'bench.step',
          data: { key: `key-${(i + j) % 1000}` },
        })),
      );
    let completed = 0;
    let first: { at: bigint; cpu: NodeJS.CpuUsage } | undefined;
    const done = new Promise<void>((resolve) =>
      warren.on('completed', () => {
        completed += 1;
        if (completed === 1) first = { at: process.hrtime.bigint(), cpu: process.cpuUsage() };
        if (completed === DRAIN) resolve();
      }),
    );
    await warren.start();
    await done;
    const seconds = Number(process.hrtime.bigint() - first!.at) / 1e9;
    const cpu = process.cpuUsage(first!.cpu);
    return { jobsPerSecond: (DRAIN - 1) / seconds, cpuUsPerJob: (cpu.user + cpu.system) / (DRAIN - 1) };
  } finally {
    await warren.close({ graceMs: 200 });
    await deletePlan(AMQP_URL, planOf(warren));
  }
}

async function cost(): Promise<void> {
  const variants: CostVariant[] = ['off', 'concurrency', 'rate'];
  const runs = new Map<CostVariant, { jobsPerSecond: number; cpuUsPerJob: number }[]>(
    variants.map((v) => [v, []]),
  );
  for (let round = 0; round < ROUNDS; round++)
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + round) % variants.length]!; // the order rotates every round
      runs.get(variant)!.push(await drainOnce(variant));
    }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rateOf = (v: CostVariant) => median(runs.get(v)!.map((r) => r.jobsPerSecond));
  say(
    `\n## cost: ${DRAIN} no-op jobs over 1,000 keys, 6 unordered partitions, one worker at concurrency 10, ${ROUNDS} interleaved rounds (load ${load()})`,
  );
  const label: Record<CostVariant, string> = {
    off: 'off',
    concurrency: 'perKeyConcurrency 1000, never reached',
    rate: 'limiter per key, 10,000 a second, never reached',
  };
  for (const v of variants) {
    const all = runs.get(v)!;
    const ratio = v === 'off' ? '' : `; ratio to off ${(rateOf(v) / rateOf('off')).toFixed(3)}`;
    say(
      `- ${label[v]}: ${rateOf(v).toFixed(0)} jobs/s (${all.map((r) => r.jobsPerSecond.toFixed(0)).join(', ')}), ${median(all.map((r) => r.cpuUsPerJob)).toFixed(0)} worker CPU-us/job${ratio}`,
    );
  }
}

export async function run(): Promise<void> {
  say(
    `# per-key limits bench, ${new Date().toISOString()}, ${AMQP_URL.replace(/\/\/.*@/, '//')}${QUICK ? ' (quick)' : ''}`,
  );
  if (ONLY.has('rate')) await rate();
  if (ONLY.has('concurrency')) await concurrency();
  if (ONLY.has('cost')) await cost();
  mkdirSync(RESULTS_DIR, { recursive: true });
  // the broker's version in the name: a run on each broker in the same minute keeps both files
  const version = await rabbitmqVersion({ amqpUrl: AMQP_URL }).catch(() => 'unknown');
  const stamp = new Date().toISOString().slice(0, 16).replace(':', '-');
  const file = join(RESULTS_DIR, `per-key-${stamp}Z-rabbitmq-${version}.md`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  console.log(`\nwritten ${file}`);
}
