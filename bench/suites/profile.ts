// Suite `profile`, for profiling one hot path of one contender, without rounds or reports:
//   npm run bench -- profile consume --concurrency=1 --jobs=20000 --contender=warren
// --cpu-prof=/tmp/consume.cpuprofile
//   npm run bench -- profile publish --callers=100 --jobs=40000 --contender=warren
// --cpu-prof=/tmp/publish.cpuprofile
//   npm run bench -- profile bulk --jobs=20000 --contender=warren
//   npm run bench -- profile retry --concurrency=100 --jobs=10000 --backoff=0 --contender=warren
// (retry: every job fails once and is retried after --backoff ms; the profile covers both runs of each)
// --queues=classic|quorum: the job queue's type (default quorum); --exchange: warren publishes through a
// direct exchange of its topology, as the throughput suite's scenarios do
// The profile covers the timed part only (not connecting, not the consume scenario's prefill);
// then: npm run bench -- profile-summary /tmp/consume.cpuprofile
// --tracing (warren only): with warrenTracing(), every span sampled, to a no-op exporter through the SDK's
// BatchSpanProcessor (as bench/suites/observability.ts); prefilled jobs then carry a traceparent.
// --context-only (warren only): the same provider and AsyncLocalStorage context manager in use, but no
// warrenTracing(): what an app's tracing setup alone costs warren's untraced path (its async hooks).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { performance } from 'node:perf_hooks';
import { CONTENDER_NAMES, ContenderName, createContender } from '../adapters';
import { runCallers } from '../lib/callers';
import { makeJob, makeJobs } from '../lib/job';

const USAGE = `usage: npm run bench -- profile consume|publish|bulk|retry [--contender=${CONTENDER_NAMES.join('|')}] [--jobs=N] [--concurrency=N] [--callers=N] [--backoff=MS] [--queues=classic|quorum] [--exchange] [--cpu-prof=FILE] [--tracing|--context-only]`;

async function main(): Promise<void> {
  const [mode, ...rest] = process.argv.slice(2);
  const flags = new Map(rest.map((arg) => arg.replace(/^--/, '').split('=', 2) as [string, string]));
  const name = (flags.get('contender') ?? 'warren') as ContenderName;
  if (!CONTENDER_NAMES.includes(name) || !['consume', 'publish', 'bulk', 'retry'].includes(mode ?? ''))
    throw new Error(USAGE);
  if ((flags.has('tracing') || flags.has('context-only')) && name !== 'warren') throw new Error(USAGE);
  const jobs = Number(flags.get('jobs') ?? 20_000);
  const env = {
    amqpUrl: process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    redisHost: '127.0.0.1',
    redisPort: 6379,
    redisPrefix: `profile-${randomBytes(4).toString('hex')}`,
  };
  // Loaded only with --tracing, so that the other runs load what they always did.
  const traced = flags.has('tracing') || flags.has('context-only');
  const provider = traced ? (await import('../lib/noop-tracing')).noopTracerProvider() : undefined;
  // A context made active once turns the context manager's async hooks on for the rest of the process.
  if (provider) {
    const { context, ROOT_CONTEXT } = await import('@opentelemetry/api');
    context.with(ROOT_CONTEXT, () => undefined);
  }
  const contender = flags.has('tracing')
    ? new (await import('../adapters/warren')).WarrenContender(env, {
        instrumentation: [
          (await import('../../src/observability')).warrenTracing({ tracerProvider: provider }),
        ],
      })
    : await createContender(name, env);
  const queue = `bench-profile-${randomBytes(4).toString('hex')}`;
  const backoffMs = Number(flags.get('backoff') ?? 0);
  const queueType = (flags.get('queues') ?? 'quorum') as 'classic' | 'quorum';
  if (queueType !== 'classic' && queueType !== 'quorum') throw new Error(USAGE);
  const features = { queueType, jobsExchange: flags.has('exchange') };
  await contender.setup(queue, mode === 'retry' ? { ...features, retryBackoffMs: backoffMs } : features);
  try {
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    if (mode === 'consume' || mode === 'retry') {
      const concurrency = Number(flags.get('concurrency') ?? 1);
      if (mode === 'retry') await contender.prefillRetryable!(makeJobs(jobs));
      else await contender.prefill(makeJobs(jobs));
      const profiler = await startProfiler(flags.get('cpu-prof'));
      const prefilled = performance.now();
      const cpuPrefilled = process.cpuUsage();
      let handled = 0;
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      const onJob = () => {
        if (++handled === jobs) finish();
      };
      const consumer =
        mode === 'retry'
          ? await contender.consumeFailingOnce!(concurrency, onJob)
          : await contender.consume(concurrency, onJob);
      await done;
      const wallMs = performance.now() - prefilled;
      const cpu = process.cpuUsage(cpuPrefilled);
      await profiler.stop();
      await consumer.stop();
      const what = mode === 'retry' ? `retry (backoff ${backoffMs} ms)` : 'consume';
      report(`${name} ${what} c=${concurrency}`, jobs, wallMs, cpu);
    } else if (mode === 'bulk') {
      const batch = makeJobs(jobs);
      const profiler = await startProfiler(flags.get('cpu-prof'));
      await contender.publishBulk(batch);
      await profiler.stop();
      report(`${name} bulk`, jobs, performance.now() - start, process.cpuUsage(cpuStart));
    } else {
      const callers = Number(flags.get('callers') ?? 100);
      const profiler = await startProfiler(flags.get('cpu-prof'));
      await runCallers(callers, jobs, (i) => contender.publish(makeJob(i)));
      await profiler.stop();
      report(
        `${name} publish callers=${callers}`,
        jobs,
        performance.now() - start,
        process.cpuUsage(cpuStart),
      );
    }
  } finally {
    await contender.teardown({ deleteQueue: true });
    await provider?.shutdown();
  }
}

/** The in-process inspector, so that the profile starts where the timing does. */
async function startProfiler(file: string | undefined): Promise<{ stop(): Promise<void> }> {
  if (!file) return { stop: async () => undefined };
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    // biome-ignore lint/suspicious/noExplicitAny: the inspector protocol's results are untyped here
    new Promise<any>((resolve, reject) =>
      session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
    );
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 100 });
  await post('Profiler.start');
  return {
    async stop() {
      const { profile } = await post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      console.log(`profile: ${file}`);
    },
  };
}

function report(what: string, jobs: number, wallMs: number, cpu: NodeJS.CpuUsage): void {
  const cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(
    `${what}: ${jobs} jobs in ${wallMs.toFixed(0)} ms = ${((jobs / wallMs) * 1000).toFixed(0)} jobs/s; process CPU ${cpuMs.toFixed(0)} ms = ${((cpuMs * 1000) / jobs).toFixed(1)} µs a job (user ${(cpu.user / jobs).toFixed(1)}, system ${(cpu.system / jobs).toFixed(1)})`,
  );
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
