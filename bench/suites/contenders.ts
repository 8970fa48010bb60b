// Suite `contenders`: npm run bench -- contenders [--quick] [--only=1,4] [--contenders=amqplib,rascal] [--rounds=N]
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS_DIR } from '../lib/paths';
import { performance } from 'node:perf_hooks';
import { BASELINE } from '../adapters';
import type { ContenderEnv } from '../adapters/contender';
import { findBrokerPids } from '../lib/broker-processes';
import { Cleanup } from '../lib/cleanup';
import { collectMachineInfo } from '../lib/machine-info';
import { parseOptions } from '../lib/options';
import { renderMarkdown, RunRecord, summarize } from '../lib/report';
import { buildScenarios } from '../scenarios';
import { onInterrupt, runAll } from '../lib/runner';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const options = parseOptions(argv);
  const runId = `bench-${randomBytes(4).toString('hex')}`;
  const env: ContenderEnv = {
    amqpUrl: process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    redisHost: process.env.BENCH_REDIS_HOST ?? '127.0.0.1',
    redisPort: Number(process.env.BENCH_REDIS_PORT ?? 6379),
    redisPrefix: runId,
  };
  const cleanup = new Cleanup(env);
  onInterrupt(cleanup);

  const startedAt = new Date();
  const started = performance.now();
  const machine = await collectMachineInfo(env);
  const brokers = findBrokerPids(Number(new URL(env.amqpUrl).port || 5672), env.redisPort);
  if (!brokers.rabbitmq)
    console.warn('no process found listening on the AMQP port: RabbitMQ CPU time will be missing');
  if (!brokers.redis)
    console.warn('no process found listening on the Redis port: Redis CPU time will be missing');
  const scenarios = buildScenarios(options.sizes).filter(
    (s) => options.only.length === 0 || options.only.includes(s.id),
  );
  console.log(
    `${runId}: ${options.quick ? 'quick' : 'full'} run, scenarios ${[...new Set(scenarios.map((s) => s.id))].join(',')}, ` +
      `contenders ${options.contenders.join(',')}, ${options.sizes.rounds} round(s)`,
  );

  const records: RunRecord[] = [];
  let cleanupProblems: string[] = [];
  try {
    await runAll(
      { scenarios, contenders: options.contenders, sizes: options.sizes, env, brokers, cleanup, runId },
      records,
    );
  } finally {
    cleanupProblems = await cleanup.sweep();
    for (const problem of cleanupProblems) console.error(`cleanup: ${problem}`);
  }

  const durationMs = performance.now() - started;
  const summaries = summarize(scenarios, options.contenders, records, BASELINE);
  const loadAverages = records.flatMap((r) => (r.loadAverage === undefined ? [] : [r.loadAverage]));
  const header = {
    startedAt,
    durationMs,
    argv,
    rounds: options.sizes.rounds,
    baseline: BASELINE,
    machine,
    loadAverages,
    cleanupProblems,
  };
  const markdown = renderMarkdown(header, summaries);

  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = `${startedAt.toISOString().slice(0, 19).replace(/:/g, '-')}Z`;
  const partial = argv.some((arg) => !arg.startsWith('--quick'));
  // only a complete run may replace contenders-latest.md / contenders-latest-quick.md
  const suffix = `${options.quick ? '-quick' : ''}${partial ? '-partial' : ''}`;
  const jsonPath = join(RESULTS_DIR, `contenders-${stamp}${suffix}.json`);
  const json = { runId, ...header, options, summaries, records };
  writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(RESULTS_DIR, `contenders-latest${suffix}.md`), markdown);
  console.log(`\n${markdown}`);
  console.log(
    `Results: ${jsonPath} and bench/results/contenders-latest${suffix}.md; took ${(durationMs / 1000).toFixed(1)} s`,
  );
  if (records.some((r) => r.status === 'failed')) process.exitCode = 1;
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
