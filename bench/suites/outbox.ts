// Suite `outbox`: npm run bench -- outbox [--quick] — the transactional outbox beside direct publish.
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { RESULTS_DIR } from '../lib/paths';
import { describeRun } from '../lib/run-description';
import { Pool } from 'pg';
import {
  benchWarren,
  drainDirect,
  drainOutbox,
  steadyDirect,
  steadyOutbox,
  type BenchEnv,
} from './outbox-scenarios';

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const sizes = quick
    ? { rate: 1_000, seconds: 3, drainJobs: 10_000 }
    : { rate: 1_000, seconds: 10, drainJobs: 100_000 };
  const pool = new Pool({
    connectionString: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    max: 40,
  });
  const env: BenchEnv = { amqpUrl: process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672', pool };
  const startedAt = new Date();
  const load = [os.loadavg()[0]!];
  const cpu0 = process.cpuUsage();
  try {
    const direct = await benchWarren(env, false);
    const steadyPublish = await steadyDirect(direct.warren, sizes.rate, sizes.seconds);
    console.log('steady direct publish', steadyPublish);
    await direct.dispose();
    load.push(os.loadavg()[0]!);

    const relaying = await benchWarren(env, true);
    const steadyRelay = await steadyOutbox(env, relaying.warren, sizes.rate, sizes.seconds);
    console.log('steady outbox', steadyRelay);
    await relaying.dispose();
    load.push(os.loadavg()[0]!);

    const drainRelay = await drainOutbox(env, 500, sizes.drainJobs);
    console.log('drain outbox (one relay, batch 500)', drainRelay);
    load.push(os.loadavg()[0]!);

    const bulk = await benchWarren(env, false);
    const drainPublish = await drainDirect(bulk.warren, sizes.drainJobs, 1_000);
    console.log('direct publish, 1,000 in flight', drainPublish);
    await bulk.dispose();
    load.push(os.loadavg()[0]!);

    const cpu = process.cpuUsage(cpu0);
    const result = {
      startedAt,
      quick,
      sizes,
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
      loadAverage1m: load,
      benchProcessCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      steadyPublish,
      steadyRelay,
      drainRelay,
      drainPublish,
    };
    mkdirSync(RESULTS_DIR, { recursive: true });
    const stamp = `${startedAt.toISOString().slice(0, 19).replace(/:/g, '-')}Z`;
    writeFileSync(
      join(RESULTS_DIR, `outbox-${stamp}${quick ? '-quick' : ''}.json`),
      `${JSON.stringify({ ...(await describeRun('outbox', env.amqpUrl)), ...result }, null, 2)}\n`,
    );
    const markdown = render(result);
    if (!quick) writeFileSync(join(RESULTS_DIR, 'outbox-latest.md'), markdown);
    console.log(markdown);
  } finally {
    await pool.end();
  }
}

function render(r: {
  startedAt: Date;
  sizes: { rate: number; seconds: number; drainJobs: number };
  machine: { cpus: number; model: string | undefined; node: string };
  loadAverage1m: number[];
  steadyPublish: { p50Ms: number; p99Ms: number; maxMs: number; jobsPerSecond: number };
  steadyRelay: {
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    jobsPerSecond: number;
    commitP50Ms: number;
    commitP99Ms: number;
  };
  drainRelay: { jobs: number; seconds: number; jobsPerSecond: number };
  drainPublish: { jobs: number; seconds: number; jobsPerSecond: number };
}): string {
  const l = r.loadAverage1m.map((x) => x.toFixed(1)).join(' → ');
  return `# Outbox benchmark, ${r.startedAt.toISOString()}

${r.machine.cpus} CPUs (${r.machine.model}), Node ${r.machine.node}; 1-minute load average during the run: ${l}
(other test runs shared the machine). Broker, PostgreSQL and the bench process on one machine.

| steady ${r.sizes.rate} jobs/s for ${r.sizes.seconds} s | achieved jobs/s | p50 ms | p99 ms | max ms |
|---|---|---|---|---|
| direct \`publish\` (call → confirm) | ${r.steadyPublish.jobsPerSecond} | ${r.steadyPublish.p50Ms} | ${r.steadyPublish.p99Ms} | ${r.steadyPublish.maxMs} |
| outbox (COMMIT → confirmed and row deleted) | ${r.steadyRelay.jobsPerSecond} | ${r.steadyRelay.p50Ms} | ${r.steadyRelay.p99Ms} | ${r.steadyRelay.maxMs} |

The outbox writer's own transaction (BEGIN, \`outbox.publish\`, COMMIT): p50 ${r.steadyRelay.commitP50Ms} ms, p99 ${r.steadyRelay.commitP99Ms} ms.

| ${r.drainRelay.jobs.toLocaleString('en')} jobs | seconds | jobs/s |
|---|---|---|
| one relay draining a backlog (batch 500) | ${r.drainRelay.seconds} | ${r.drainRelay.jobsPerSecond} |
| direct \`publish\`, 1,000 in flight | ${r.drainPublish.seconds} | ${r.drainPublish.jobsPerSecond} |
`;
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
