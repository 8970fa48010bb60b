/**
 * Ordered partitions (issue 37, docs/guide/ordered-partitions.md):
 *
 * - scale: `--jobs` no-op jobs over 1,000 keys, prefilled, then drained by one worker process at concurrency 10,
 *   from a plain quorum queue (the same keyed job type) and from N = 1, 2, 4, 8 quorum partitions, in
 *   interleaved rounds (the order turning each round): jobs/s, and the broker's CPU per job (the broker
 *   process listening on the port, from /proc) and this process's. Timed from the first job's completion to
 *   the last, so the membership's settle (one heartbeat) is not counted.
 * - rebalance: worker processes (test/fixtures/partition-worker) on 8 partitions with handlers of 2 ms under a
 *   steady publish; from 2 workers a third joins, then leaves with SIGTERM, `--rebalances` times: the time
 *   from the joiner's `ready` (its start() returned) and from the SIGTERM until every partition has exactly
 *   one owner among the workers running, none with more than ⌈8/M⌉, as the workers report it (every 20 ms).
 *
 * - `--cluster`: both on a 3-node cluster of private nodes (test/support/rabbit-node.sh's w1..w3, the fault
 *   suite's recipe, of the server WARREN_TEST_SERVER names; started, then cleaned afterwards) instead of
 *   AMQP_URL: the bench process connects to w1, the quorum leaders are spread over the three nodes after
 *   each declare (`rabbitmq-queues rebalance quorum`), the broker CPU is the three nodes' sum (and each
 *   node's), and the rebalance's worker processes connect to w1, w2, w3 in turn.
 *
 *   npm run bench -- partitions [--jobs 20000] [--rounds 3] [--rebalances 5] [--heartbeat 500] [--only=scale,rebalance] [--cluster]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { createWarren, defineJob, defineTopology, type Warren } from '../../src';
import { planOf } from '../../src/warren';
import type { PartitionWorkerMessage } from '../../test/fixtures/partition-worker';
import {
  cleanCluster,
  rebalanceQuorumLeaders,
  startCluster,
  type PrivateNode,
} from '../../test/support/private-broker';
import { testProfile } from '../../test/support/test-broker';
import { findBrokerPids } from '../lib/broker-processes';
import { processCpuMs } from '../lib/cpu';
import { RESULTS_DIR } from '../lib/paths';
import { deletePlan } from '../lib/warren-drain';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    rebalances: { type: 'string', default: '5' },
    heartbeat: { type: 'string', default: '500' },
    only: { type: 'string', default: 'scale,rebalance' },
    quick: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
  },
});
const QUICK = values.quick;
const JOBS = QUICK ? 2000 : Number(values.jobs);
const ROUNDS = QUICK ? 1 : Number(values.rounds);
const REBALANCES = QUICK ? 1 : Number(values.rebalances);
const HEARTBEAT_MS = Number(values.heartbeat);
const ONLY = new Set(values.only.split(','));
const CLUSTER = values.cluster;
/** The broker the bench process uses (w1 with --cluster), and every node's URL (one without it). */
let AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
let NODE_URLS: readonly string[] = [AMQP_URL];
const CONCURRENCY = 10;
const KEYS = 1000;
/** 0: the plain queue. */
const VARIANTS = [0, 1, 2, 4, 8] as const;

type Row = { key: string };

async function benchWarren(partitions: number, namespace: string): Promise<Warren> {
  const job = defineJob(
    'bench.step',
    { queue: 'bench', concurrency: CONCURRENCY, attempts: 1, key: (row: Row) => row.key },
    () => undefined,
  );
  return createWarren({
    url: AMQP_URL,
    namespace,
    topology: defineTopology({ queues: { bench: partitions === 0 ? {} : { partitions } } }),
    handlers: [job],
    queues: { expiresMs: 10 * 60_000 },
    delay: { levels: 4 },
    worker: { partitionHeartbeatMs: HEARTBEAT_MS },
  });
}

interface Drain {
  readonly jobsPerSecond: number;
  /** Every node's together. */
  readonly brokerCpuUsPerJob: number | undefined;
  /** Each node's, in NODE_URLS order. */
  readonly nodeBrokerCpuUsPerJob: readonly (number | undefined)[];
  readonly nodeCpuUsPerJob: number;
}

/** Prefills, starts, and times the drain from the first completion to the last (JOBS - 1 jobs). */
async function drain(partitions: number, brokerPids: readonly (number | undefined)[]): Promise<Drain> {
  const namespace = `bench-parts-${randomBytes(4).toString('hex')}`;
  const warren = await benchWarren(partitions, namespace);
  const brokerCpu = () => brokerPids.map(processCpuMs);
  try {
    for (let i = 0; i < JOBS; i += 1000)
      await warren.publishMany(
        Array.from({ length: Math.min(1000, JOBS - i) }, (_, j) => ({
          job: 'bench.step',
          data: { key: `key-${(i + j) % KEYS}` },
        })),
      );
    let completed = 0;
    // declared through w1, every leader is there: spread them as a cluster's clients would
    if (CLUSTER) await rebalanceQuorumLeaders(`^${namespace}`);
    let first: { at: bigint; cpu: NodeJS.CpuUsage; broker: (number | undefined)[] } | undefined;
    const done = new Promise<void>((resolve) => {
      warren.on('completed', () => {
        completed += 1;
        if (completed === 1)
          first = { at: process.hrtime.bigint(), cpu: process.cpuUsage(), broker: brokerCpu() };
        if (completed === JOBS) resolve();
      });
    });
    await warren.start();
    await done;
    const seconds = Number(process.hrtime.bigint() - first!.at) / 1e9;
    const cpu = process.cpuUsage(first!.cpu);
    const brokerAfter = brokerCpu();
    const n = JOBS - 1;
    const perNode = brokerAfter.map((after, i) => {
      const before = first!.broker[i];
      return after === undefined || before === undefined ? undefined : ((after - before) * 1000) / n;
    });
    return {
      jobsPerSecond: n / seconds,
      brokerCpuUsPerJob: perNode.includes(undefined) ? undefined : perNode.reduce((sum, us) => sum! + us!, 0),
      nodeBrokerCpuUsPerJob: perNode,
      nodeCpuUsPerJob: (cpu.user + cpu.system) / n,
    };
  } finally {
    await warren.close({ graceMs: 200 });
    await deletePlan(AMQP_URL, planOf(warren));
  }
}

async function scale(lines: string[]): Promise<void> {
  const brokerPids = NODE_URLS.map((url) => findBrokerPids(Number(new URL(url).port || 5672), 6379).rabbitmq);
  const results = new Map<number, Drain[]>(VARIANTS.map((v) => [v, []]));
  const loads: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [...VARIANTS] : [...VARIANTS].reverse();
    for (const variant of order) {
      loads.push(loadavg()[0]!);
      const figures = await drain(variant, brokerPids);
      results.get(variant)!.push(figures);
      console.log(
        `round ${round + 1} ${variant === 0 ? 'plain' : `N=${variant}`}: ${figures.jobsPerSecond.toFixed(0)} jobs/s, broker ${figures.brokerCpuUsPerJob?.toFixed(0) ?? '-'} µs/job (load ${loads.at(-1)!.toFixed(1)})`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const plain = median(results.get(0)!.map((d) => d.jobsPerSecond));
  const brokerN1 = median(results.get(1)!.map((d) => d.brokerCpuUsPerJob ?? Number.NaN));
  lines.push(
    `## Scale: ${JOBS} no-op jobs over ${KEYS} keys, concurrency ${CONCURRENCY}, one worker process, ${ROUNDS} interleaved rounds (load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)})`,
    '',
    `| variant | jobs/s (median) | of the plain queue | broker CPU µs/job${CLUSTER ? ' (3 nodes)' : ''} | jobs per broker CPU-s, of N = 1 | worker CPU µs/job |${CLUSTER ? ' broker CPU µs/job per node |' : ''}`,
    `| --- | --- | --- | --- | --- | --- |${CLUSTER ? ' --- |' : ''}`,
  );
  for (const variant of VARIANTS) {
    const drains = results.get(variant)!;
    const rate = median(drains.map((d) => d.jobsPerSecond));
    const broker = median(drains.map((d) => d.brokerCpuUsPerJob ?? Number.NaN));
    lines.push(
      `| ${variant === 0 ? 'plain quorum queue' : `${variant} partition${variant > 1 ? 's' : ''}`} | ${rate.toFixed(0)} (${drains.map((d) => d.jobsPerSecond.toFixed(0)).join(', ')}) | ${(rate / plain).toFixed(2)}× | ${broker.toFixed(0)} | ${variant === 0 ? '-' : `${(brokerN1 / broker).toFixed(2)}×`} | ${median(drains.map((d) => d.nodeCpuUsPerJob)).toFixed(0)} |${CLUSTER ? ` ${NODE_URLS.map((_, i) => median(drains.map((d) => d.nodeBrokerCpuUsPerJob[i] ?? Number.NaN)).toFixed(0)).join(' / ')} |` : ''}`,
    );
  }
  lines.push('');
}

interface Child {
  readonly child: ChildProcess;
  readonly pid: number;
  ready: boolean;
  owned: readonly number[];
}

async function rebalance(lines: string[]): Promise<void> {
  const namespace = `bench-rebal-${randomBytes(4).toString('hex')}`;
  // the workers' profile (test/fixtures/partition-worker), so that both declare the same delay levels
  const publisher = await createWarren({
    ...testProfile(namespace),
    url: AMQP_URL,
    topology: defineTopology({ queues: { ordered: { partitions: 8 } } }),
    handlers: [
      defineJob(
        'ordered.step',
        { queue: 'ordered', key: (row: { key: string; seq: number }) => row.key },
        () => undefined,
      ),
    ],
  });
  const script = join(__dirname, '../../test/fixtures/partition-worker.js');
  const children: Child[] = [];
  const spawn = (): Child => {
    const child = fork(script, [namespace, '8', String(HEARTBEAT_MS), '2', '4'], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, WARREN_PARTITION_URL: NODE_URLS[children.length % NODE_URLS.length] },
    });
    const entry: Child = { child, pid: child.pid!, ready: false, owned: [] };
    child.on('message', (m: PartitionWorkerMessage) => {
      if (m.kind === 'ready') entry.ready = true;
      else if (m.kind === 'owned') entry.owned = m.owned;
    });
    children.push(entry);
    return entry;
  };
  const settled = () => {
    const lists = children.map((c) => c.owned);
    const all = lists.flat().sort((a, b) => a - b);
    return (
      all.length === 8 &&
      all.every((p, i) => p === i) &&
      lists.every((l) => l.length <= Math.ceil(8 / lists.length))
    );
  };
  let seq = 0;
  let publishing = true;
  const steady = (async () => {
    while (publishing) {
      await publisher.publishMany(
        Array.from({ length: 50 }, (_, i) => ({
          job: 'ordered.step',
          data: { key: `key-${i % 200}`, seq: seq++ },
        })),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const joins: number[] = [];
  const leaves: number[] = [];
  try {
    spawn();
    spawn();
    await until(() => children.every((c) => c.ready) && settled(), 60_000);
    if (CLUSTER) await rebalanceQuorumLeaders(`^${namespace}`);
    for (let r = 0; r < REBALANCES; r++) {
      const joiner = spawn();
      await until(() => joiner.ready, 60_000);
      const joinedAt = Date.now();
      await until(settled, 30_000);
      joins.push(Date.now() - joinedAt);
      const exited = new Promise((resolve) => joiner.child.once('exit', resolve));
      const leftAt = Date.now();
      joiner.child.kill('SIGTERM');
      children.splice(children.indexOf(joiner), 1);
      await until(settled, 30_000);
      leaves.push(Date.now() - leftAt);
      await exited;
      console.log(
        `rebalance ${r + 1}: join ${joins.at(-1)} ms, leave ${leaves.at(-1)} ms (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    publishing = false;
    await steady;
    for (const c of children) c.child.kill('SIGKILL');
    await publisher.close({ graceMs: 200 });
    await deletePlan(AMQP_URL, planOf(publisher));
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const p50 = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]!;
  lines.push(
    `## Rebalance: 8 partitions, 2 → 3 → 2 worker processes, handlers of 2 ms under a steady publish, heartbeat ${HEARTBEAT_MS} ms, ${REBALANCES} rounds (load ${loadavg()[0]!.toFixed(1)})`,
    '',
    '| change | p50 | max | all |',
    '| --- | --- | --- | --- |',
    `| join (start() returned → settled) | ${p50(joins)} ms | ${Math.max(...joins)} ms | ${joins.join(', ')} |`,
    `| leave, SIGTERM (signal → settled) | ${p50(leaves)} ms | ${Math.max(...leaves)} ms | ${leaves.join(', ')} |`,
    '',
  );
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The broker's version, as it announces itself at connect. */
async function brokerVersion(): Promise<string> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const properties = (connection.connection as unknown as { serverProperties?: { version?: unknown } })
      .serverProperties;
    return String(properties?.version ?? 'unknown');
  } finally {
    await connection.close();
  }
}

export async function run(): Promise<void> {
  let nodes: PrivateNode[] | undefined;
  if (CLUSTER) {
    console.log('starting the 3-node cluster (w1..w3)');
    nodes = await startCluster();
    AMQP_URL = nodes[0]!.url;
    NODE_URLS = nodes.map((node) => node.url);
  }
  try {
    await measure();
  } finally {
    if (CLUSTER) await cleanCluster();
  }
}

async function measure(): Promise<void> {
  const version = await brokerVersion();
  const lines: string[] = [
    `# Ordered partitions: ${new Date().toISOString()}`,
    '',
    `\`npm run bench -- partitions ${process.argv.slice(2).join(' ')}\` on ${CLUSTER ? `a 3-node cluster (${NODE_URLS.map((url) => url.replace(/\/\/.*@/, '//')).join(', ')}), the bench process on the first node, quorum leaders spread over the three` : `${AMQP_URL.replace(/\/\/.*@/, '//')}, one node, not a cluster`} (RabbitMQ ${version}).`,
    '',
  ];
  if (ONLY.has('scale')) await scale(lines);
  if (ONLY.has('rebalance')) await rebalance(lines);
  const text = lines.join('\n');
  console.log(`\n${text}`);
  if (!QUICK) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(
      RESULTS_DIR,
      `partitions-${new Date().toISOString().slice(0, 16).replace(/:/g, '-')}Z-rabbitmq-${version}${CLUSTER ? '-cluster' : ''}.md`,
    );
    writeFileSync(file, text);
    console.log(`written: ${file}`);
  }
}
