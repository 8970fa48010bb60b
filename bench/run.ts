// Entry point: node dist/bench/run.js [--quick] [--only=1,4] [--contenders=amqplib,rascal] [--rounds=N]
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BASELINE, BROKER_OF, ContenderName, createContender, isNotImplemented } from './adapters';
import type { Contender, ContenderEnv } from './adapters/contender';
import { BrokerPids, findBrokerPids } from './broker-processes';
import { Cleanup } from './cleanup';
import { collectMachineInfo } from './machine-info';
import { Options, parseOptions } from './options';
import { renderMarkdown, RunRecord, summarize } from './report';
import { buildScenarios } from './scenarios';
import type { Scenario } from './scenarios/scenario';
import { withTimeout } from './timeout';
import { killAllWorkers } from './worker-client';

const RESULTS_DIR = join(__dirname, '..', '..', 'bench', 'results');
const SETUP_TIMEOUT_MS = 30_000;
const MAX_SETUP_FAILURES = 3;
const TEARDOWN_TIMEOUT_MS = 15_000;

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
    await runAll(scenarios, options, env, brokers, cleanup, records);
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
  // only a complete run may replace latest.md / latest-quick.md
  const suffix = `${options.quick ? '-quick' : ''}${partial ? '-partial' : ''}`;
  const jsonPath = join(RESULTS_DIR, `${stamp}${suffix}.json`);
  const json = { runId, ...header, options, summaries, records };
  writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(RESULTS_DIR, `latest${suffix}.md`), markdown);
  console.log(`\n${markdown}`);
  console.log(
    `Results: ${jsonPath} and bench/results/latest${suffix}.md; took ${(durationMs / 1000).toFixed(1)} s`,
  );
  if (records.some((r) => r.status === 'failed')) process.exitCode = 1;
}

/** Round-robin within each round, so machine noise hits every contender alike. */
async function runAll(
  scenarios: Scenario[],
  options: Options,
  env: ContenderEnv,
  brokers: BrokerPids,
  cleanup: Cleanup,
  records: RunRecord[],
): Promise<void> {
  const skipped = new Map<ContenderName, string>();
  const setupFailures = new Map<ContenderName, number>();
  for (const scenario of scenarios) {
    const rounds = scenario.rounds ?? options.sizes.rounds;
    for (let round = 1; round <= rounds; round++) {
      for (const name of options.contenders) {
        const queue = `${env.redisPrefix}-${name}-s${scenario.key}-r${round}`;
        const reason = skipped.get(name);
        const started = performance.now();
        const record: RunRecord = reason
          ? { scenario: scenario.key, contender: name, round, queue, status: 'skipped', error: reason }
          : await runOnce(scenario, name, round, queue, options, env, brokers, cleanup);
        record.elapsedMs = performance.now() - started;
        if (record.status === 'skipped' && !reason && !record.unsupported)
          skipped.set(name, record.error ?? 'skipped');
        // an unreachable broker would otherwise cost a setup timeout in every remaining run
        const failures = record.failedIn === 'setup' ? (setupFailures.get(name) ?? 0) + 1 : 0;
        setupFailures.set(name, failures);
        if (failures >= MAX_SETUP_FAILURES)
          skipped.set(name, `${failures} setups in a row failed, last: ${record.error}`);
        records.push(record);
        logRecord(scenario, record, rounds, Boolean(reason));
      }
    }
  }
}

async function runOnce(
  scenario: Scenario,
  name: ContenderName,
  round: number,
  queue: string,
  options: Options,
  env: ContenderEnv,
  brokers: BrokerPids,
  cleanup: Cleanup,
): Promise<RunRecord> {
  const record: RunRecord = {
    scenario: scenario.key,
    contender: name,
    round,
    queue,
    status: 'ok',
    loadAverage: os.loadavg()[0],
  };
  if (BROKER_OF[name] === 'rabbitmq') cleanup.trackAmqpQueue(queue);
  let contender: Contender | undefined;
  try {
    record.failedIn = 'setup';
    contender = await createContender(name, env);
    const has = (method: keyof Contender) => typeof contender?.[method] === 'function';
    const missing = (scenario.requires ?? [])
      .filter((need) => (Array.isArray(need) ? !need.some(has) : !has(need)))
      .map((need) => (Array.isArray(need) ? need.join(' or ') : need));
    if (missing.length > 0) {
      delete record.failedIn;
      return {
        ...record,
        status: 'skipped',
        unsupported: true,
        error: `not supported by ${name} (no ${missing.join(', ')})`,
      };
    }
    const setup = Promise.resolve().then(() => contender?.setup(queue, scenario.features));
    await withTimeout(setup, SETUP_TIMEOUT_MS, `setup ${name}`);
    record.failedIn = 'run';
    const run = scenario.run({ contender, contenderName: name, env, queue, brokers, sizes: options.sizes });
    record.outcome = await withTimeout(
      run,
      scenario.timeoutMs ?? options.sizes.runTimeoutMs,
      `${scenario.key}/${name}`,
    );
    delete record.failedIn;
  } catch (err) {
    record.status = isNotImplemented(err) ? 'skipped' : 'failed';
    if (record.status === 'skipped') delete record.failedIn;
    record.error = err instanceof Error ? err.message : String(err);
  } finally {
    killAllWorkers(); // only a run that failed or timed out still has one
    const teardown = Promise.resolve().then(() => contender?.teardown({ deleteQueue: true }));
    await withTimeout(teardown, TEARDOWN_TIMEOUT_MS, `teardown ${name}`).catch((err: Error) => {
      if (!isNotImplemented(err)) console.error(`teardown of ${name} failed: ${err.message}`);
    });
  }
  return record;
}

function logRecord(scenario: Scenario, record: RunRecord, rounds: number, repeatSkip: boolean): void {
  if (repeatSkip) return;
  const where = `[${scenario.key} r${record.round}/${rounds}] ${record.contender}`;
  if (!record.outcome) {
    console.log(`${where}: ${record.status}: ${record.error}`);
    return;
  }
  const figures = scenario.metrics.map(
    (m) => `${record.outcome?.metrics[m.key].toFixed(m.digits)} ${m.label}`,
  );
  console.log(`${where}: ${figures.join(', ')} (${(record.outcome.wallMs / 1000).toFixed(1)} s)`);
}

/** Ctrl-C or a kill still deletes what this run declared on the shared servers. */
function onInterrupt(cleanup: Cleanup): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: cleaning up (again to exit at once)`);
      process.once(signal, () => process.exit(130));
      killAllWorkers();
      void cleanup.sweep().finally(() => process.exit(130));
    });
  }
  // a library emitting a late rejection must not kill an unattended run before its cleanup
  process.on('unhandledRejection', (err) => console.error('unhandled rejection:', err));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
