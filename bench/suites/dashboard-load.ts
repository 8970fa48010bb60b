/**
 * The dashboard's load target (issue 18): with 500 queues, 3 worker processes and 10 open browsers, the
 * overview answers in < 300 ms p95 warm, and the broker sees the load of one browser (one snapshot per
 * dashboard). Each "browser" holds the event stream open and asks for the overview once a second; the
 * script counts the snapshot refreshes (each one the broker reads) with 1 browser and with 10.
 *
 *   npm run bench -- dashboard-load [--queues 500] [--processes 3] [--browsers 10] [--seconds 15]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createWarren, defineTopology, Job, type JobClass, type JobHandler } from '../../src';
import { createOps } from '../../src/ops';
import { type DashboardServer, startDashboardServer } from '../../src/ui';
import { deletePlanEntities } from '../../test/support/test-broker';

const { values } = parseArgs({
  options: {
    queues: { type: 'string', default: '500' },
    processes: { type: 'string', default: '3' },
    browsers: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '15' },
    worker: { type: 'string' },
    clients: { type: 'string' },
  },
});
const QUEUES = Number(values.queues);
/** Its browsers and worker processes run this suite again through the one entry point. */
const ENTRY = join(__dirname, '..', 'main.js');
const SUITE = 'dashboard-load';
const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

function application(namespace: string) {
  const names = Array.from({ length: QUEUES }, (_, i) => `q${i}`);
  const topology = defineTopology({
    queues: Object.fromEntries(names.map((n) => [n, { type: 'classic' as const }])),
  });
  const jobs: JobClass[] = names.map((n) => {
    class Noop implements JobHandler<object> {
      handle() {}
    }
    Job(`bench.${n}`, { queue: n })(Noop);
    return Noop;
  });
  return {
    url,
    namespace,
    topology,
    jobs,
    delay: { queueType: 'classic' as const, levels: 4 },
    queues: { expiresMs: 30 * 60_000 },
  };
}

async function worker(namespace: string): Promise<void> {
  const config = application(namespace);
  const warren = await createWarren({
    ...config,
    handlers: config.jobs.map((J) => new (J as new () => object)()),
  });
  await warren.start();
  process.send?.('ready');
  process.once('SIGTERM', () => void warren.close().then(() => process.exit(0)));
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

/**
 * `browsers` clients in their own process (as browsers are): each holds the event stream and asks for
 * the overview every second. Reports the latencies to the parent.
 */
async function clients(url: string, browsers: number, seconds: number): Promise<void> {
  const aborts = Array.from({ length: browsers }, () => new AbortController());
  for (const abort of aborts)
    void fetch(`${url}api/events`, { signal: abort.signal })
      .then(async (r) => {
        for await (const _ of r.body!) void _;
      })
      .catch(() => undefined);
  const times: number[] = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    aborts.map(async (_, i) => {
      await new Promise((r) => setTimeout(r, (1000 * i) / browsers));
      while (Date.now() < end) {
        const started = performance.now();
        const body = await (await fetch(`${url}api/snapshot`)).json();
        times.push(performance.now() - started);
        if ((body as { queues: unknown[] }).queues.length !== QUEUES) throw new Error('short snapshot');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }),
  );
  for (const abort of aborts) abort.abort();
  times.sort((a, b) => a - b);
  process.send!({ requests: times.length, p50: percentile(times, 50), p95: percentile(times, 95) });
  process.exit(0);
}

async function browse(server: DashboardServer, browsers: number, seconds: number) {
  const before = server.handler.snapshots.refreshes;
  const child = fork(ENTRY, [
    SUITE,
    ...['--clients', server.url, '--browsers', String(browsers), '--seconds', String(seconds)],
    ...['--queues', String(QUEUES)],
  ]);
  const result = await new Promise<{ requests: number; p50: number; p95: number }>((resolve) =>
    child.once('message', (m) => resolve(m as { requests: number; p50: number; p95: number })),
  );
  return { ...result, refreshes: server.handler.snapshots.refreshes - before };
}

async function main(): Promise<void> {
  if (values.worker) return worker(values.worker);
  if (values.clients) return clients(values.clients, Number(values.browsers), Number(values.seconds));
  const namespace = `bench-ui-${randomBytes(3).toString('hex')}`;
  const processes = Array.from({ length: Number(values.processes) }, () =>
    fork(ENTRY, [SUITE, '--worker', namespace, '--queues', String(QUEUES)]),
  );
  await Promise.all(processes.map((p) => new Promise((r) => p.once('message', r))));
  const ops = createOps({ ...application(namespace), replyTimeoutMs: 1500 });
  const server = await startDashboardServer({ ops, port: 0 });
  try {
    const started = performance.now();
    const first = await server.handler.snapshots.get();
    const coldMs = performance.now() - started;
    const seconds = Number(values.seconds);
    const one = await browse(server, 1, seconds);
    const many = await browse(server, Number(values.browsers), seconds);
    const f = (n: number) => n.toFixed(1);
    console.log(
      `${QUEUES} queues, ${first.processes.length} processes answering; cold snapshot ${f(coldMs)} ms`,
    );
    for (const [label, r] of [
      ['1 browser', one],
      [`${values.browsers} browsers`, many],
    ] as const)
      console.log(
        `${label}: ${r.requests} overview requests, p50 ${f(r.p50)} ms, p95 ${f(r.p95)} ms; ` +
          `${r.refreshes} snapshot refreshes (broker reads) in ${seconds} s`,
      );
  } finally {
    await server.close();
    for (const p of processes) p.kill('SIGTERM');
    await Promise.all(processes.map((p) => new Promise((r) => p.once('exit', r))));
    await deletePlanEntities(ops.plan);
    await ops.close();
  }
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
