/**
 * Lookup and search in bounded time (issue 33, item 4): `ops.job(id)` on a history of `--events` events
 * (batches of 1,000, as a busy writer flushes them) and `warren dead search` / replay on a dead-letter log
 * of `--letters` letters, each query from a fresh process (bench/suites/lookup-child.ts: connect, then
 * time the one query; peak RSS of that process), beside the same queries through a baseline build
 * (`--baseline <dir with dist/>`, e.g. a copy of main's dist) in the same run, and beside the floor of any
 * lookup at that moment (one cold read of one record from a fresh process): the builds' lookups and the
 * floor alternate id by id, so the machine's load moves them alike. Each build reads a history of its
 * own (the same records, in a namespace of its own: one build's index records never meet the other's);
 * the log is the branch's. Namespaces of their own, deleted afterwards. The history is filled eight batches in flight (eight writer processes), the log 500
 * letters in flight (the collector's prefetch): a stream's chunks form from what arrives together, and a
 * read at an offset starts at its chunk.
 *
 * `--bounds N`: after the lookups, N fresh processes per lookup design read only what that design would
 * (lookup-child `bound`: today's three reads in turn, two, one; the history's end by a 10 ms quiet, a 3 ms
 * one or a marker), alternating design by design: the lower bound of each on this machine at this moment.
 * The marker designs append small records to the bench's history, so they run after every lookup.
 *
 * `--served`: a third copy of the history with a lookup server on it (lookup-child `serve`, a process of its
 * own, started after the fill: its first read of the whole history is timed), and the branch's lookups of
 * that copy (`job served`) in the same alternation, answered by the server.
 *
 *   npm run bench -- lookup [--events 1000000] [--letters 100000] [--lookups 20] [--traces 0] [--bounds 0] [--served [--served-cache BYTES]] [--baseline DIR] [--dead-baseline no]
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import { resolveDeadLetterLogOptions } from '../../src/dead-letter-log';
import { resolveHistoryOptions } from '../../src/history';
import { createNaming, planStream } from '../../src/topology';
import { RESULTS_DIR } from '../lib/paths';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    letters: { type: 'string', default: '100000' },
    lookups: { type: 'string', default: '20' },
    /** Traced lookups per build after the timed ones: the median timeline of the reads (lookup-child `trace`). */
    traces: { type: 'string', default: '0' },
    /** Fresh processes per lookup design after the lookups: the designs' lower bounds (lookup-child `bound`). */
    bounds: { type: 'string', default: '0' },
    /** Also time lookups answered by a lookup server (`history.serveLookups`), on a copy of the history. */
    served: { type: 'boolean', default: false },
    /** The lookup server's `history.lookupCacheBytes` (default: warren's); 0 reads every batch at its offset. */
    'served-cache': { type: 'string', default: '' },
    baseline: { type: 'string' },
    /** Run the baseline's log queries too (at 1,000,000 letters its index needs ~3 GB and minutes). */
    'dead-baseline': { type: 'string', default: 'yes' },
  },
});
const EVENTS = Number(values.events);
const LETTERS = Number(values.letters);
const LOOKUPS = Number(values.lookups);
const TRACES = Number(values.traces);
const BOUNDS = Number(values.bounds);
/** The designs `--bounds` compares (lookup-child.ts `bound`). */
const DESIGNS = ['r3', 'r2', 'r1', 'r3q3', 'r1q3', 'r3m', 'r2m', 'r1m'];
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const BATCH = 1000;
const SELECTED = 1000;
const CHILD = join(__dirname, 'lookup-child.js');
const OWN_DIST = join(__dirname, '..', '..');

interface ChildResult {
  readonly ms: number;
  readonly found: number;
  readonly rssMb: number;
  /** The child's CPU time over the timed query, ms (modes `job`, `trace`, `bound`). */
  readonly cpuMs?: number;
  /** Mode `trace`: ms from the lookup's start to each step of its reads. */
  readonly phases?: Record<string, number>;
}

/** Whether a queue or stream of this name exists (a passive declare, on a channel of its own). */
async function streamExists(connection: amqp.ChannelModel, name: string): Promise<boolean> {
  const channel = await connection.createChannel();
  channel.on('error', () => undefined);
  try {
    await channel.checkQueue(name);
    await channel.close();
    return true;
  } catch {
    return false;
  }
}

function child(root: string, mode: string, namespace: string, arg: string): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CHILD, root, mode, AMQP_URL, namespace, arg],
      { timeout: 600_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${mode} ${arg}: ${stderr || String(error)}`));
        else resolve(JSON.parse(stdout) as ChildResult);
      },
    );
  });
}

/** A lookup server on a namespace (lookup-child `serve`), once it has read the history; `stop` gives its counts. */
async function startServer(
  namespace: string,
): Promise<{ ready: Record<string, unknown>; stop(): Promise<Record<string, unknown>> }> {
  const cache = values['served-cache'];
  const server: ChildProcess = spawn(
    process.execPath,
    [CHILD, OWN_DIST, 'serve', AMQP_URL, namespace, cache],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines: string[] = [];
  let waiting: (() => void) | undefined;
  let buffered = '';
  server.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
      lines.push(buffered.slice(0, at));
      buffered = buffered.slice(at + 1);
      waiting?.();
    }
  });
  let exited = false;
  server.on('exit', () => {
    exited = true;
    waiting?.();
  });
  const nextLine = async () => {
    while (lines.length === 0) {
      if (exited) throw new Error('the lookup server exited');
      await new Promise<void>((resolve) => (waiting = resolve));
    }
    return JSON.parse(lines.shift()!) as Record<string, unknown>;
  };
  const ready = await nextLine();
  return {
    ready,
    stop: async () => {
      server.stdin!.end();
      return nextLine();
    },
  };
}

/** Bytes published (bodies and properties as JSON): about what the broker keeps, for the memory ratio. */
const published = { bytes: 0 };

async function publishAll(
  connection: amqp.ChannelModel,
  stream: string,
  count: number,
  record: (i: number) => { content: Buffer; properties: amqp.Options.Publish },
  /** Publishes in flight: as many as the writers would have (chunks of the stream form from them). */
  window: number,
): Promise<number> {
  const channel = await connection.createConfirmChannel();
  const started = Date.now();
  let inFlight = 0;
  let waiting: (() => void) | undefined;
  for (let i = 0; i < count; i += 1) {
    const r = record(i);
    published.bytes += r.content.length + Buffer.byteLength(JSON.stringify(r.properties));
    inFlight += 1;
    channel.publish('', stream, r.content, r.properties, () => {
      inFlight -= 1;
      if (inFlight <= window / 2) waiting?.();
    });
    if (inFlight >= window) await new Promise<void>((resolve) => (waiting = resolve));
  }
  await channel.waitForConfirms();
  await channel.close();
  return (Date.now() - started) / 1000;
}

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

const round = (x: number) => Math.round(x * 10) / 10;

/** The ms of one step in the runs that have it. */
function stepTimes(runs: readonly ChildResult[], step: string): number[] {
  return runs.map((r) => r.phases?.[step]).filter((x): x is number => x !== undefined);
}

/** The commit of the tree the bench runs from, marked when it has uncommitted changes. */
function commitOf(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
    });
    return dirty.trim() === '' ? head : `${head} (uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const namespace = `bench-look-${randomBytes(3).toString('hex')}`;
  const naming = createNaming(namespace);
  const connection = await amqp.connect(AMQP_URL);
  const builds: Record<string, string> = { branch: OWN_DIST };
  if (values.baseline) builds.baseline = values.baseline;
  const results: Record<string, unknown> = {
    command: `npm run bench -- lookup ${process.argv.slice(2).join(' ')}`.trim(),
    commit: commitOf(),
    node: process.version,
    rabbitmq: String(
      (connection as unknown as { connection: { serverProperties?: { version?: unknown } } }).connection
        .serverProperties?.version ?? 'unknown',
    ),
    broker: AMQP_URL.replace(/\/\/[^@]*@/, '//'),
    events: EVENTS,
    letters: LETTERS,
    lookups: LOOKUPS,
    loadavgBefore: os.loadavg(),
    cores: os.cpus().length,
  };
  const setup = await connection.createChannel();
  const log = planStream('dead-letter-log', resolveDeadLetterLogOptions({}), naming);
  try {
    await setup.assertQueue(log.name, log.assertion);
    await setup.assertQueue(naming.queue('bench'), {
      durable: true,
      arguments: { 'x-queue-type': 'quorum' },
    });

    // The history: EVENTS events in batches of BATCH, each job a published, a started and a completed; one
    // copy per build.
    const historyOf: Record<string, string> = Object.fromEntries(
      Object.keys(builds).map((b, i) => [b, i === 0 ? namespace : `${namespace}-${b}`]),
    );
    if (values.served) historyOf.served = `${namespace}-served`;
    const fill = async (ns: string) => {
      // as a warren declares it (a lookup server's process declares it too)
      const stream = planStream('history', resolveHistoryOptions({}), createNaming(ns));
      await setup.assertQueue(stream.name, stream.assertion);
      return publishAll(
        connection,
        createNaming(ns).jobHistory(),
        Math.ceil(EVENTS / BATCH),
        (b) => {
          const e: object[] = [];
          for (let i = b * BATCH; i < Math.min(EVENTS, (b + 1) * BATCH); i += 1) {
            const job = Math.floor(i / 3);
            const k = ['published', 'started', 'completed'][i % 3];
            e.push({ j: `job-${job}`, n: 'bench.charge', q: 'bench', k, t: t0 + i });
          }
          return {
            content: Buffer.from(JSON.stringify({ p: 'bench', h: 'bench', pid: 1, e })),
            properties: { persistent: true },
          };
        },
        8,
      ); // eight writer processes, one batch in flight each
    };
    const t0 = Date.now() - EVENTS;
    const before = published.bytes;
    for (const ns of Object.values(historyOf)) results.historyFillSeconds = round(await fill(ns));
    const historyBytes = (published.bytes - before) / Object.keys(historyOf).length;
    const server = values.served ? await startServer(historyOf.served!) : undefined;
    if (server) {
      results['lookup server, after its first read of the history'] = server.ready;
      console.log('lookup server ready:', server.ready);
    }
    // the served lookups: the branch's build, on the copy the server follows
    const lookupsOf: Record<string, string> = { ...builds, ...(server ? { served: OWN_DIST } : {}) };
    results.historyMb = round(historyBytes / 1024 ** 2);

    const jobs = Math.floor(EVENTS / 3);
    const ids = Array.from({ length: LOOKUPS }, (_, i) => `job-${Math.floor(((i + 0.5) / LOOKUPS) * jobs)}`);
    for (const [build, root] of Object.entries(builds)) {
      const firstLookup = await child(root, 'job', historyOf[build]!, 'job-1');
      results[`first job lookup, indexes the history ${build}`] = { ms: round(firstLookup.ms) };
      console.log(`first job lookup, ${build}:`, results[`first job lookup, indexes the history ${build}`]);
    }
    // The builds' lookups and the floor alternate, id by id: the machine's load moves between seconds, not
    // between them.
    const timings = Object.fromEntries(
      [...Object.keys(lookupsOf), 'floor'].map((b) => [
        b,
        { ms: [] as number[], rss: [] as number[], cpu: [] as number[] },
      ]),
    );
    // A small history (--quick) has no checkpoint yet, so no checkpoint stream: its floor reads the history.
    const floorStream = (await streamExists(connection, naming.jobHistoryCheckpoints()))
      ? naming.jobHistoryCheckpoints()
      : naming.jobHistory();
    for (const id of ids) {
      for (const [build, root] of Object.entries(lookupsOf)) {
        const r = await child(root, 'job', historyOf[build]!, id);
        if (r.found !== 3) throw new Error(`${build}: ${id} has ${r.found} events`);
        timings[build]!.ms.push(r.ms);
        timings[build]!.rss.push(r.rssMb);
        if (r.cpuMs !== undefined) timings[build]!.cpu.push(r.cpuMs);
      }
      const f = await child(OWN_DIST, 'floor', namespace, floorStream);
      timings.floor!.ms.push(f.ms);
      timings.floor!.rss.push(f.rssMb);
    }
    for (const [build, { ms, rss, cpu }] of Object.entries(timings)) {
      const key = build === 'floor' ? 'one cold read of one record (floor)' : `job ${build}`;
      results[key] = {
        p50Ms: round(percentile(ms, 50)),
        p99Ms: round(percentile(ms, 99)),
        maxRssMb: round(Math.max(...rss)),
        ...(cpu.length > 0 ? { cpuP50Ms: round(percentile(cpu, 50)) } : {}),
      };
      console.log(`${key}:`, results[key]);
    }
    results.loadavgAfterLookups = os.loadavg();
    if (server) {
      results['lookup server, at the end'] = await server.stop();
      console.log('lookup server:', results['lookup server, at the end']);
    }
    if (TRACES > 0) {
      // the timeline of each build's lookups, alternating as above: the median ms of each step
      const traced = Object.fromEntries(Object.keys(builds).map((b) => [b, [] as Record<string, number>[]]));
      for (let i = 0; i < TRACES; i += 1)
        for (const [build, root] of Object.entries(builds)) {
          const r = await child(root, 'trace', historyOf[build]!, ids[i % ids.length]!);
          traced[build]!.push(r.phases ?? {});
        }
      for (const [build, runs] of Object.entries(traced)) {
        const steps = [...new Set(runs.flatMap((r) => Object.keys(r)))];
        const medians = steps
          .map((step) => {
            const at = runs.map((r) => r[step]).filter((x): x is number => x !== undefined);
            return [step, round(percentile(at, 50)), at.length] as const;
          })
          .sort((a, b) => a[1] - b[1]);
        results[`timeline of job ${build} (median ms from the start, runs)`] = Object.fromEntries(
          medians.map(([step, ms, n]) => [step, n === runs.length ? ms : `${ms} (${n} runs)`]),
        );
        console.log(
          `timeline, ${build}:`,
          results[`timeline of job ${build} (median ms from the start, runs)`],
        );
      }
      results.loadavgAfterTraces = os.loadavg();
    }
    if (BOUNDS > 0 && floorStream === naming.jobHistory())
      console.log(
        '--bounds skipped: the history is too small to have a checkpoint, which the designs read first',
      );
    else if (BOUNDS > 0) {
      // each design's lower bound, alternating design by design, on the branch's history
      const runs = Object.fromEntries(DESIGNS.map((d) => [d, [] as ChildResult[]]));
      for (let i = 0; i < BOUNDS; i += 1)
        for (const d of DESIGNS)
          runs[d]!.push(await child(OWN_DIST, 'bound', namespace, `${d}:${ids[i % ids.length]!}`));
      for (const [d, rs] of Object.entries(runs)) {
        const steps = [...new Set(rs.flatMap((r) => Object.keys(r.phases ?? {})))];
        results[`bound ${d} (p50 / p99 ms, median step ms)`] = {
          p50Ms: round(
            percentile(
              rs.map((r) => r.ms),
              50,
            ),
          ),
          p99Ms: round(
            percentile(
              rs.map((r) => r.ms),
              99,
            ),
          ),
          cpuP50Ms: round(
            percentile(
              rs.map((r) => r.cpuMs ?? 0),
              50,
            ),
          ),
          ...Object.fromEntries(steps.map((s) => [s, round(percentile(stepTimes(rs, s), 50))])),
        };
        console.log(`bound ${d}:`, results[`bound ${d} (p50 / p99 ms, median step ms)`]);
      }
      results.loadavgAfterBounds = os.loadavg();
    }

    // The dead-letter log: LETTERS letters; SELECTED of them carry customer.id "selected".
    const every = Math.floor(LETTERS / SELECTED);
    const fillLog = await publishAll(
      connection,
      log.name,
      LETTERS,
      (i) => ({
        content: Buffer.from(
          JSON.stringify({ order: i, customer: { id: i % every === 0 ? 'selected' : `c${i % 5000}` } }),
        ),
        properties: {
          messageId: `letter-${i}`,
          type: 'bench.charge',
          contentType: 'application/json',
          persistent: true,
          headers: {
            'warren-log-kind': 'letter',
            'warren-queue': 'bench',
            'warren-dead-reason': i === Math.floor(LETTERS / 2) ? 'rare-reason' : 'attempts-exhausted',
            'warren-last-error': `TypeError: card declined\n    at charge (billing.js:${i % 100}:1)`,
            'warren-dead-at': t0 + i,
            'warren-attempt': 3,
          },
        },
      }),
      500,
    ); // the collector's prefetch
    results.logFillSeconds = round(fillLog);
    const logBytes = published.bytes - before - historyBytes * Object.keys(builds).length;
    results.logMb = round(logBytes / 1024 ** 2);

    const deadBuilds = values['dead-baseline'] !== 'no' ? builds : { branch: OWN_DIST };
    // The first keyed query reads the unindexed log and indexes it (once; a later one reads the index).
    for (const [build, root] of Object.entries(deadBuilds)) {
      const r = await child(root, 'search', namespace, JSON.stringify({ jobId: 'letter-1' }));
      results[`first search, indexes the log ${build}`] = { ms: round(r.ms), rssMb: round(r.rssMb) };
      console.log(`first search, ${build}:`, results[`first search, indexes the log ${build}`]);
    }
    const queries: [string, string, object][] = [
      ['search by job id', 'search', { jobId: `letter-${Math.floor(LETTERS * 0.7)}` }],
      ['search by field', 'search', { field: { path: 'customer.id', equals: 'selected' } }],
      ['search by reason', 'search', { reason: 'rare-reason' }],
    ];
    for (const [build, root] of Object.entries(deadBuilds))
      for (const [what, mode, filter] of queries) {
        const r = await child(root, mode, namespace, JSON.stringify(filter));
        results[`${what} ${build}`] = { ms: round(r.ms), found: r.found, rssMb: round(r.rssMb) };
        console.log(`${what}, ${build}:`, results[`${what} ${build}`]);
      }
    // The replay last (it appends markers and the replayed jobs): this branch only, on the same log.
    const r = await child(OWN_DIST, 'replay', namespace, JSON.stringify(queries[1]![2]));
    results['replay of the field selection branch'] = {
      ms: round(r.ms),
      replayed: r.found,
      rssMb: round(r.rssMb),
    };
    console.log('replay, branch:', results['replay of the field selection branch']);
  } finally {
    const streams = [log.name, naming.queue('bench'), naming.deadLetterLogIndex()];
    for (const ns of [namespace, ...['baseline', 'served'].map((b) => `${namespace}-${b}`)]) {
      const n = createNaming(ns);
      streams.push(n.jobHistory(), n.jobHistoryIndex(), n.jobHistoryCheckpoints(), n.historyLookups());
    }
    for (const q of streams) await setup.deleteQueue(q).catch(() => undefined);
    await connection.close();
  }
  results.loadavgAfter = os.loadavg();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `lookup-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results, null, 2));
  console.log(`written to ${file}`);
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export const run = main;
