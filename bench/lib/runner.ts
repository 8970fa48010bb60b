import * as os from 'node:os';
import { performance } from 'node:perf_hooks';
import { BROKER_OF, type ContenderName, createContender, isNotImplemented } from '../adapters';
import type { Contender, ContenderEnv, ContenderFeatures } from '../adapters/contender';
import type { Scenario } from '../scenarios/scenario';
import type { BrokerPids } from './broker-processes';
import type { Cleanup } from './cleanup';
import type { Sizes } from './options';
import type { RunRecord } from './report';
import { withTimeout } from './timeout';
import { killAllWorkers } from './worker-client';

const SETUP_TIMEOUT_MS = 30_000;
const MAX_SETUP_FAILURES = 3;
const TEARDOWN_TIMEOUT_MS = 15_000;

/** What the contender suites (`contenders`, `throughput`) share: scenarios × contenders × rounds. */
export interface RunPlan {
  scenarios: Scenario[];
  contenders: readonly ContenderName[];
  sizes: Sizes;
  env: ContenderEnv;
  brokers: BrokerPids;
  cleanup: Cleanup;
  /** Prefix of every queue name (unique per run, so the sweep deletes only this run's queues). */
  runId: string;
  /** Which contenders a scenario runs; default all of `contenders`. */
  contendersOf?: (scenario: Scenario) => readonly ContenderName[];
}

/**
 * Interleaved rounds: round 1 runs every contender once, then round 2, so machine noise hits all alike; the
 * order rotates from round to round so no contender always runs first (on a cold broker) or last.
 */
export async function runAll(plan: RunPlan, records: RunRecord[]): Promise<void> {
  const skipped = new Map<ContenderName, string>();
  const setupFailures = new Map<ContenderName, number>();
  for (const scenario of plan.scenarios) {
    const rounds = scenario.rounds ?? plan.sizes.rounds;
    const names = plan.contendersOf?.(scenario) ?? plan.contenders;
    for (let round = 1; round <= rounds; round++) {
      for (const name of rotate(names, round - 1)) {
        const queue = queueName(plan, scenario, name, round);
        const reason = skipped.get(name);
        const started = performance.now();
        const record: RunRecord = reason
          ? { scenario: scenario.key, contender: name, round, queue, status: 'skipped', error: reason }
          : await runOnce(plan, scenario, name, round, queue);
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

/**
 * A run's queue (and namespace) name: as short as a user's and of the same length for every contender, e.g.
 * `bench-7bf7178b-c02-s5-r1`. On RabbitMQ 3.10 a queue name over 64 bytes on the dead-letter path (a retry's
 * TTL queue, whose name is the copy's routing key and its `x-death` queue) costs the broker 15–20 % more a
 * message (over 64 bytes Erlang keeps a binary off the process heap, the likely reason; 4.3 shows no such
 * step). Names spelled from the contender and scenario put warren's holds (the namespace + 30 bytes) and some
 * contenders' TTL queues over that line and not others', so the retry rows measured name lengths (issue 30;
 * `bench/probes/queue-name-length.ts`).
 */
function queueName(plan: RunPlan, scenario: Scenario, name: ContenderName, round: number): string {
  const contender = plan.contenders.indexOf(name);
  return `${plan.runId}-c${String(contender).padStart(2, '0')}-s${plan.scenarios.indexOf(scenario)}-r${round}`;
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = items.length === 0 ? 0 : by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function runOnce(
  plan: RunPlan,
  scenario: Scenario,
  name: ContenderName,
  round: number,
  queue: string,
): Promise<RunRecord> {
  const { env, brokers, cleanup, sizes } = plan;
  const record: RunRecord = {
    scenario: scenario.key,
    contender: name,
    round,
    queue,
    status: 'ok',
    loadAverage: os.loadavg()[0],
  };
  if (BROKER_OF[name] === 'rabbitmq') cleanup.trackAmqpQueue(queue);
  else cleanup.trackRedis();
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
    const features: ContenderFeatures | undefined = scenario.features;
    const setup = Promise.resolve().then(() => contender?.setup(queue, features));
    await withTimeout(setup, SETUP_TIMEOUT_MS, `setup ${name}`);
    record.failedIn = 'run';
    const run = scenario.run({
      contender,
      contenderName: name,
      env,
      queue,
      brokers,
      sizes,
      features: features ?? {},
    });
    record.outcome = await withTimeout(
      run,
      scenario.timeoutMs ?? sizes.runTimeoutMs,
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
export function onInterrupt(cleanup: Pick<Cleanup, 'sweep'>): void {
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
