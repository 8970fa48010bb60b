// Suite `throughput` (the default): npm run bench -- throughput [options]; the shapes of issue 30 item 4.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BASELINE, CONTENDER_NAMES, type ContenderName } from '../adapters';
import { connectAmqp } from '../adapters/amqplib';
import type { ContenderEnv, QueueType } from '../adapters/contender';
import { findBrokerPids } from '../lib/broker-processes';
import { Cleanup } from '../lib/cleanup';
import { PAYLOADS, type Payload } from '../lib/job';
import { collectMachineInfo } from '../lib/machine-info';
import { FULL, QUICK, type Sizes } from '../lib/options';
import { RESULTS_DIR } from '../lib/paths';
import { type RunRecord, summarize } from '../lib/report';
import { onInterrupt, runAll } from '../lib/runner';
import { renderThroughput } from '../lib/throughput-report';
import { withTimeout } from '../lib/timeout';
import { batchPublish } from '../scenarios/batch-publish';
import { consume } from '../scenarios/consume';
import { e2eLatency } from '../scenarios/e2e-latency';
import { enqueueSerial } from '../scenarios/enqueue-awaited';
import { retryCost } from '../scenarios/retries-and-delays';
import { type Scenario, variantOf } from '../scenarios/scenario';

export const GROUPS = ['consume', 'batch', 'retry', 'e2e', 'serial'] as const;
type Group = (typeof GROUPS)[number];
const QUEUE_TYPES: readonly QueueType[] = ['classic', 'quorum'];
const BROKER_LABELS = ['3.10', '4.3'] as const;
type BrokerLabel = (typeof BROKER_LABELS)[number];

/** The shared RabbitMQ nodes of this project's machines (CONTRIBUTING.md); env overrides them. */
const BROKER_URLS: Record<BrokerLabel, string> = {
  '3.10': process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  '4.3': process.env.BENCH_AMQP_URL_43 ?? 'amqp://guest:guest@127.0.0.1:5673',
};
const DEFAULT_CONTENDERS: readonly ContenderName[] = [
  'amqplib',
  'rascal',
  'warren',
  'warren-in-place',
  'amqplib-warren-wire',
];
/**
 * Only the quorum retries with a backoff: warren with its quorum queue retrying in place, and raw amqplib whose
 * quorum TTL queue dead-letters at-least-once as warren's hold does.
 */
const QUORUM_HOLD_CONTENDERS: readonly ContenderName[] = ['warren-in-place', 'amqplib-at-least-once'];
/**
 * raw amqplib with warren's exact messages: where publishing is measured it publishes them, where consuming is,
 * it consumes a queue pre-filled with them, and where retrying is, it republishes them as warren's worker does
 * (the broker's cost of the wire contract on each path).
 */
const WIRE_CONTENDER: ContenderName = 'amqplib-warren-wire';
/** warren's classic job queue as classic queue version 2: asked for by name, on classic queues only. */
const CQV2_CONTENDER: ContenderName = 'warren-cqv2';
const WIRE_GROUPS: readonly Group[] = ['batch', 'serial', 'consume', 'retry', 'e2e'];
/** raw amqplib's own messages through warren's topology: asked for by name, for the retry rows only. */
const TOPOLOGY_CONTENDER: ContenderName = 'amqplib-warren-topology';
const PROBE_TIMEOUT_MS = 5_000;

export interface ThroughputSizes extends Sizes {
  batchJobs: number;
  batchWindow: number;
}

/** Issue 30 item 4: 5 interleaved rounds, pre-filled queues of 20,000 (concurrency 1) and 50,000. */
export const THROUGHPUT_FULL: ThroughputSizes = {
  ...FULL,
  rounds: 5,
  consumeJobs: 50_000,
  consumeJobsAtConcurrency1: 20_000,
  consumeWarmup: 1_000,
  bulkPublishes: 20_000,
  batchJobs: 50_000,
  batchWindow: 1_000,
  // 10,000 fail-once jobs ran for 1.5-2.5 s, and a row's median of 5 rounds moved by up to 0.2 between two runs
  retryJobs: 30_000,
  retryConcurrency: 100,
};

/** Proves every scenario runs on every contender, in a few minutes; its figures mean nothing. */
export const THROUGHPUT_QUICK: ThroughputSizes = {
  ...QUICK,
  rounds: 1,
  serialPublishes: 100,
  serialWarmup: 20,
  consumeJobs: 2_000,
  consumeJobsAtConcurrency1: 300,
  consumeWarmup: 100,
  bulkPublishes: 2_000,
  batchJobs: 5_000,
  batchWindow: 1_000,
  retryJobs: 500,
  retryConcurrency: 100,
  e2eSeconds: 1,
  e2eWarmupSeconds: 0.5,
};

export interface ThroughputOptions {
  quick: boolean;
  brokers: BrokerLabel[];
  groups: Group[];
  queues: QueueType[];
  payloads: Payload[];
  concurrencies: number[];
  contenders: ContenderName[];
  sizes: ThroughputSizes;
}

const USAGE =
  'usage: npm run bench -- throughput [--quick] [--broker=3.10|4.3|both] [--rounds=N] ' +
  `[--only=${GROUPS.join(',')}] [--queues=classic,quorum] [--payloads=small,1k] [--concurrency=1,10,100] ` +
  `[--contenders=${DEFAULT_CONTENDERS.join(',')}]`;

const VALUE_FLAGS = [
  '--broker',
  '--rounds',
  '--only',
  '--queues',
  '--payloads',
  '--concurrency',
  '--contenders',
];

/** `--flag value` and `--flag=value` alike. */
function normalize(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (VALUE_FLAGS.includes(arg) && i + 1 < argv.length) out.push(`${arg}=${argv[++i]}`);
    else out.push(arg);
  }
  return out;
}

function listOf<T extends string>(flag: string, value: string, known: readonly T[]): T[] {
  const items = value.split(',').filter(Boolean);
  for (const item of items)
    if (!known.includes(item as T))
      throw new Error(`unknown argument ${flag}=${item}; known: ${known.join(', ')}\n${USAGE}`);
  if (items.length === 0) throw new Error(`unknown argument ${flag}= (empty)\n${USAGE}`);
  return items as T[];
}

export function parseThroughputOptions(argv: string[]): ThroughputOptions {
  let quick = false;
  let brokers: BrokerLabel[] = [...BROKER_LABELS];
  let groups: Group[] = [...GROUPS];
  let queues: QueueType[] = [...QUEUE_TYPES];
  let payloads: Payload[] = [...PAYLOADS];
  let concurrencies = [1, 10, 100];
  let contenders: ContenderName[] = [...DEFAULT_CONTENDERS];
  let rounds: number | undefined;
  for (const arg of normalize(argv)) {
    const [flag, value = ''] = arg.split('=', 2);
    if (flag === '--quick') quick = true;
    else if (flag === '--broker')
      brokers = value === 'both' ? [...BROKER_LABELS] : listOf(flag, value, BROKER_LABELS);
    else if (flag === '--only') groups = listOf(flag, value, GROUPS);
    else if (flag === '--queues') queues = listOf(flag, value, QUEUE_TYPES);
    else if (flag === '--payloads') payloads = listOf(flag, value, PAYLOADS);
    else if (flag === '--contenders') contenders = listOf(flag, value, CONTENDER_NAMES);
    else if (flag === '--concurrency') concurrencies = value.split(',').map(Number);
    else if (flag === '--rounds') rounds = Number(value);
    else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0))
    throw new Error(`--rounds takes a positive integer\n${USAGE}`);
  if (concurrencies.some((c) => !(Number.isInteger(c) && c > 0)))
    throw new Error(`--concurrency takes positive integers\n${USAGE}`);
  if (!contenders.includes(BASELINE))
    throw new Error(`--contenders must include ${BASELINE}: every ratio is to it\n${USAGE}`);
  const base = quick ? THROUGHPUT_QUICK : THROUGHPUT_FULL;
  const sizes = { ...base, rounds: rounds ?? base.rounds };
  return { quick, brokers, groups, queues, payloads, concurrencies, contenders, sizes };
}

/** Every scenario of the selected groups, once per queue type; warren routes through its jobs exchange. */
export function buildThroughputScenarios(options: ThroughputOptions): Scenario[] {
  const { sizes } = options;
  const scenarios: Scenario[] = [];
  const byGroup: Record<Group, () => Scenario[]> = {
    consume: () =>
      options.concurrencies.flatMap((c) =>
        options.payloads.map((payload) =>
          consume(sizes, c, { payload, asyncHandler: true, id: 1, keyPrefix: 'consume' }),
        ),
      ),
    batch: () => [
      batchPublish({ total: sizes.batchJobs, window: sizes.batchWindow, id: 2, keyPrefix: 'batch' }),
      batchPublish({ total: sizes.bulkPublishes, window: sizes.bulkPublishes, id: 2, keyPrefix: 'batch' }),
    ],
    retry: () => [retryCost(sizes, 0, 3, 'retry'), retryCost(sizes, 1_000, 3, 'retry')],
    e2e: () => [{ ...e2eLatency(sizes), id: 4, key: 'e2e' }],
    serial: () => {
      const serial = enqueueSerial(sizes);
      // p99 first: the figure issue 30 watches (it also picks the median run whose CPU is shown)
      return [{ ...serial, id: 5, key: 'serial', metrics: [...serial.metrics].reverse() }];
    },
  };
  for (const group of options.groups) {
    for (const scenario of byGroup[group]()) {
      for (const queueType of options.queues) {
        const features = { queueType, jobsExchange: true };
        scenarios.push(
          variantOf(scenario, { keySuffix: `-${queueType}`, titleSuffix: `; ${queueType} queues`, features }),
        );
      }
    }
  }
  return scenarios;
}

function isQuorumRetryWithBackoff(scenario: Scenario): boolean {
  return (
    groupOf(scenario) === 'retry' &&
    scenario.features?.queueType === 'quorum' &&
    Boolean(scenario.features.retryBackoffMs)
  );
}

function groupOf(scenario: Scenario): Group {
  return GROUPS[scenario.id - 1];
}

interface Broker {
  label: BrokerLabel;
  url: string;
  version: string;
}

/** The broker's version, or why it cannot be used. */
async function probe(label: BrokerLabel): Promise<Broker | string> {
  const url = BROKER_URLS[label];
  const where = new URL(url).host;
  try {
    const connection = await withTimeout(connectAmqp(url), PROBE_TIMEOUT_MS, `connecting to ${where}`);
    const version = String(connection.connection.serverProperties.version);
    await connection.close();
    if (!version.startsWith(label))
      return `RabbitMQ ${label} expected on ${where}, but it runs ${version}: skipped (set BENCH_AMQP_URL${label === '4.3' ? '_43' : ''})`;
    return { label, url, version };
  } catch (err) {
    return `RabbitMQ ${label} on ${where} is not reachable (${(err as Error).message}): skipped`;
  }
}

async function runOnBroker(broker: Broker, options: ThroughputOptions, argv: string[]): Promise<boolean> {
  const runId = `bench-${randomBytes(4).toString('hex')}`;
  const env: ContenderEnv = {
    amqpUrl: broker.url,
    redisHost: '127.0.0.1',
    redisPort: 6379,
    redisPrefix: runId,
  };
  const cleanup = new Cleanup(env);
  current = cleanup;
  const port = Number(new URL(broker.url).port || 5672);
  const brokers = findBrokerPids(port, env.redisPort);
  if (!brokers.rabbitmq)
    console.warn(`no process found listening on port ${port}: the broker's CPU per job will be missing`);
  const startedAt = new Date();
  const started = performance.now();
  const machine = await collectMachineInfo(env, { redis: false });
  const scenarios = buildThroughputScenarios(options);
  const contendersOf = (scenario: Scenario) =>
    options.contenders.filter(
      (name) =>
        (name !== WIRE_CONTENDER || WIRE_GROUPS.includes(groupOf(scenario))) &&
        (name !== TOPOLOGY_CONTENDER || groupOf(scenario) === 'retry') &&
        (name !== CQV2_CONTENDER || scenario.features?.queueType === 'classic') &&
        (!QUORUM_HOLD_CONTENDERS.includes(name) || isQuorumRetryWithBackoff(scenario)),
    );
  console.log(
    `${runId}: throughput on RabbitMQ ${broker.version} (${new URL(broker.url).host}), ${options.quick ? 'quick' : 'full'}, ` +
      `${scenarios.length} scenarios, contenders ${options.contenders.join(',')}, ${options.sizes.rounds} round(s)`,
  );
  const records: RunRecord[] = [];
  let cleanupProblems: string[] = [];
  try {
    await runAll(
      {
        scenarios,
        contenders: options.contenders,
        sizes: options.sizes,
        env,
        brokers,
        cleanup,
        runId,
        contendersOf,
      },
      records,
    );
  } finally {
    cleanupProblems = await cleanup.sweep();
    for (const problem of cleanupProblems) console.error(`cleanup: ${problem}`);
  }
  const summaries = summarize(scenarios, options.contenders, records, BASELINE).map((summary) => ({
    ...summary,
    contenders: summary.contenders.filter((row) =>
      records.some((r) => r.scenario === summary.key && r.contender === row.contender),
    ),
  }));
  const others = argv.filter((arg, i) => !arg.startsWith('--broker') && argv[i - 1] !== '--broker');
  const command = ['npm run bench -- throughput', ...others, `--broker=${broker.label}`].join(' ');
  const header = {
    startedAt,
    durationMs: performance.now() - started,
    command,
    rounds: options.sizes.rounds,
    baseline: BASELINE,
    broker: `RabbitMQ ${broker.version} (${new URL(broker.url).host})`,
    machine,
    loadAverages: records.flatMap((r) => (r.loadAverage === undefined ? [] : [r.loadAverage])),
    cleanupProblems,
  };
  const markdown = renderThroughput(header, summaries, records);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = `${startedAt.toISOString().slice(0, 16).replace(/:/g, '-')}Z`;
  const base = join(
    RESULTS_DIR,
    `throughput-${stamp}-rabbitmq-${broker.version}${options.quick ? '-quick' : ''}`,
  );
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ suite: 'throughput', runId, ...header, options, summaries, records }, null, 2)}\n`,
  );
  writeFileSync(`${base}.md`, markdown);
  console.log(`\n${markdown}`);
  console.log(`Results: ${base}.md and .json; took ${(header.durationMs / 1000).toFixed(1)} s`);
  return !records.some((r) => r.status === 'failed');
}

/** The broker run under way, whose queues an interrupt deletes. */
let current: Cleanup | undefined;

export async function run(argv: string[]): Promise<void> {
  const options = parseThroughputOptions(argv);
  onInterrupt({ sweep: () => current?.sweep() ?? Promise.resolve([]) });
  let ok = true;
  let ran = 0;
  for (const label of options.brokers) {
    const broker = await probe(label);
    if (typeof broker === 'string') {
      console.log(broker);
      continue;
    }
    ran++;
    ok = (await runOnBroker(broker, options, argv)) && ok;
  }
  if (ran === 0) throw new Error('no broker to run on');
  if (!ok) process.exitCode = 1;
}
