/**
 * Every suite `npm run bench -- <suite>` runs. A suite is a module exporting `run(argv)`; older suites read
 * the same arguments from `process.argv.slice(2)`, which the entry point sets to them before loading the
 * module. Modules load lazily, so a suite's libraries (pg, BullMQ, OpenTelemetry) load only when it runs.
 */
export interface SuiteModule {
  run(argv: string[]): Promise<void>;
}

export interface Suite {
  readonly name: string;
  /** One line for `--list`. */
  readonly summary: string;
  /** Its options, for `--list` and the README. */
  readonly usage: string;
  /**
   * What `--quick` becomes for this suite: tiny sizes that prove it works in seconds (a smoke run, not a
   * measurement). Suites with a `--quick` of their own get it passed through.
   */
  readonly quickArgs: readonly string[];
  /** Needs more than RabbitMQ on 5672 (PostgreSQL, Redis, a browser). */
  readonly needs?: string;
  load(): Promise<SuiteModule>;
}

export const DEFAULT_SUITE = 'throughput';

export const SUITES: readonly Suite[] = [
  {
    name: 'throughput',
    summary:
      'raw amqplib, Rascal and warren in one run (issue 30): consume, batch publish, fail-once retries, end-to-end and serial publish; per broker',
    usage:
      '[--quick] [--broker=3.10|4.3|both] [--rounds=N] [--only=consume,batch,retry,e2e,serial] [--queues=classic,quorum] [--payloads=small,1k] [--contenders=amqplib,rascal,warren,amqplib-warren-wire]',
    quickArgs: ['--quick'],
    load: () => import('./throughput'),
  },
  {
    name: 'contenders',
    summary:
      'warren beside raw amqplib (Nagle on and off), Rascal and BullMQ: the 8 scenarios of the first benchmark',
    usage:
      '[--quick] [--only=1,4] [--contenders=amqplib,amqplib-nodelay,rascal,bullmq,warren,warren-classic-levels] [--rounds=N] [--memory-jobs=N] [--delay-max-ms=N] [--single-delay-max-ms=N]',
    quickArgs: ['--quick'],
    needs: 'Redis on 6379 (BullMQ)',
    load: () => import('./contenders'),
  },
  {
    name: 'batch-and-debounce',
    summary:
      'batch consume (PostgreSQL inserts, batch of 100 vs one row per job at concurrency 100, lone-job latency) and debounce (10,000 updates from 3 processes, publish cost, maxWaitMs)',
    usage: '[--jobs 20000] [--rounds 3] [--lone 20] [--updates 10000] [--only=batch,debounce]',
    quickArgs: ['--jobs', '2000', '--rounds', '1', '--lone', '3', '--updates', '300'],
    needs: 'PostgreSQL (PG_URL, default postgres://postgres@127.0.0.1:5432/test)',
    load: () => import('./batch-and-debounce'),
  },
  {
    name: 'fairness',
    summary:
      'fair share (issue 35): a 100,000-job flood of one key beside 9 light keys, and 10,000 active keys, beside the plain job type and raw amqplib',
    usage: '[--quick] [--flood 100000] [--jobs 50000] [--rounds 3] [--only=starvation,keys]',
    quickArgs: ['--quick'],
    load: () => import('./fairness'),
  },
  {
    name: 'partitions',
    summary:
      'ordered partitions (issue 37): drain throughput and broker CPU per job at N = 1, 2, 4, 8 beside one queue, and rebalance time after a join and a leave',
    usage:
      '[--quick] [--jobs 20000] [--rounds 3] [--rebalances 5] [--heartbeat 500] [--only=scale,rebalance]',
    quickArgs: ['--quick'],
    load: () => import('./partitions'),
  },
  {
    name: 'per-key',
    summary:
      'per-key limits (issue 38): per-key rate error and unsaturated keys beside saturated ones, per-key concurrency violations across 3 processes, cost per job on and off',
    usage:
      '[--quick] [--keys 1000] [--rate 10] [--saturated 20] [--seconds 10] [--jobs 100000] [--drain 20000] [--rounds 3] [--only=rate,concurrency,cost]',
    quickArgs: ['--quick'],
    load: () => import('./per-key'),
  },
  {
    name: 'observability',
    summary: 'what metrics and traces cost a job: consume at concurrency 100 and publish with 100 callers',
    usage: '[--jobs 20000] [--rounds 5] [--concurrency 100]',
    quickArgs: ['--jobs', '500', '--rounds', '1'],
    load: () => import('./observability'),
  },
  {
    name: 'outbox',
    summary: 'the transactional outbox beside direct publish: steady 1,000 jobs/s, then draining a backlog',
    usage: '[--quick]',
    quickArgs: ['--quick'],
    needs: 'PostgreSQL (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/test)',
    load: () => import('./outbox'),
  },
  {
    name: 'dead-letter-log',
    summary:
      "the dead-letter log's targets: a page of 50 from 1,000,000 letters, search warm and cold, replay",
    usage: '[--letters 1000000] [--search-letters 100000] [--replay 10000]',
    quickArgs: ['--letters', '2000', '--search-letters', '1000', '--replay', '100'],
    load: () => import('./dead-letter-log'),
  },
  {
    name: 'history',
    summary:
      'what the job history costs a job at concurrency 100: without payloads and results, with them (the default), signed',
    usage:
      '[--jobs 20000] [--concurrency 100] [--rounds 5] [--variants off,history,contents,signed] [--loop 500000]',
    quickArgs: ['--jobs', '500', '--rounds', '1', '--loop', '20000'],
    load: () => import('./history'),
  },
  {
    name: 'aggregates',
    summary:
      'what the queue aggregates cost a job (collector alone and end to end) and the records they write',
    usage: '[--jobs 20000] [--concurrency 100] [--rounds 5] [--loop 2000000]',
    quickArgs: ['--jobs', '500', '--rounds', '1', '--loop', '100000'],
    load: () => import('./aggregates'),
  },
  {
    name: 'job-events',
    summary:
      'what live job events cost a job at concurrency 100 (off, no subscriber, one job id, a queue): CPU time over interleaved rounds, or instructions under callgrind (--callgrind N); their latency to another process',
    usage:
      '[--jobs 20000] [--rounds 3] [--rate 1000] [--seconds 5] [--variants off,on,one-job,queue] | --callgrind 2000 [--repeats 2]',
    quickArgs: ['--jobs', '500', '--rounds', '1', '--seconds', '1'],
    load: () => import('./job-events'),
  },
  {
    name: 'lookup',
    summary:
      'issue 33: ops.job(id) and dead search / replay from a fresh process on a big history and log, beside a baseline build',
    usage:
      '[--events 1000000] [--letters 100000] [--lookups 20] [--traces 0] [--baseline DIR] [--dead-baseline no]',
    quickArgs: ['--events', '3000', '--letters', '2000', '--lookups', '3'],
    load: () => import('./lookup'),
  },
  {
    name: 'idempotency',
    summary:
      'what an idempotency store costs: none, memory, PostgreSQL (synchronous and asynchronous commit)',
    usage: '[--jobs 5000] [--concurrency 20] [--rounds 3]',
    quickArgs: ['--jobs', '200', '--rounds', '1'],
    needs: 'PostgreSQL (PG_URL, default postgres://postgres@127.0.0.1:5432/test)',
    load: () => import('./idempotency'),
  },
  {
    name: 'cron',
    summary: "cron firing latency: a '* * * * * *' schedule's tick time to its handler start",
    usage: '[firings=30]',
    quickArgs: ['2'],
    load: () => import('./cron'),
  },
  {
    name: 'leader-failover',
    summary: 'cron leader failover after SIGKILL and SIGSTOP of the leading process',
    usage: '[rounds=5] [heartbeatSeconds=2]',
    quickArgs: ['1', '1'],
    load: () => import('./leader-failover'),
  },
  {
    name: 'consumer-startup',
    summary: 'createWarren, start(), and start() to a waiting job running',
    usage: '[rounds=10]',
    quickArgs: ['2'],
    load: () => import('./consumer-startup'),
  },
  {
    name: 'control-startup',
    summary: 'a fresh process ready on job control and the schedule registry: empty, and beside a flood',
    usage: '[--records 1000000] [--rounds 3]',
    quickArgs: ['--records', '2000', '--rounds', '1'],
    load: () => import('./control-startup'),
  },
  {
    name: 'isolates',
    summary:
      'isolated processors beside inline handlers: overhead per job, CPU-bound speed-up, event-loop delay, kill latency',
    usage: '[--jobs 2000] [--cpu-jobs 40] [--seconds 15] [--kills 200]',
    quickArgs: ['--jobs', '100', '--cpu-jobs', '4', '--seconds', '2', '--kills', '5'],
    load: () => import('./isolates'),
  },
  {
    name: 'wire-cost',
    summary:
      "what each part of warren's wire contract (exchange routing, mandatory, properties, headers) costs the broker, and bare messages padded to the same size: raw amqplib in windows of 1,000, interleaved rounds (issue 30)",
    usage:
      '[--broker=3.10|4.3] [--queue=classic|quorum] [--jobs=20000] [--rounds=5] [--window=1000] [--variants=bare,exchange,...,padded]',
    quickArgs: ['--jobs=2000', '--rounds=1'],
    load: () => import('./wire-cost'),
  },
  {
    name: 'record-codec',
    summary: 'CPU µs to sign and to verify the records warren writes (no broker)',
    usage: '[--records 200000]',
    quickArgs: ['--records', '2000'],
    load: () => import('./record-codec'),
  },
  {
    name: 'dashboard-load',
    summary: "the dashboard's load target: 500 queues, 3 worker processes, 10 browsers",
    usage: '[--queues 500] [--processes 3] [--browsers 10] [--seconds 15]',
    quickArgs: ['--queues', '10', '--processes', '1', '--browsers', '2', '--seconds', '2'],
    load: () => import('./dashboard-load'),
  },
  {
    name: 'tracing-floor',
    summary: "the OpenTelemetry SDK's own CPU per span, no warren and no broker",
    usage: '[--spans 200000] [--rounds 5]',
    quickArgs: ['--spans', '2000', '--rounds', '1'],
    load: () => import('./tracing-floor'),
  },
  {
    name: 'profile',
    summary: 'one hot path of one contender, optionally under the V8 profiler (no rounds, no report)',
    usage:
      'consume|publish|bulk|retry [--contender=warren] [--jobs=N] [--concurrency=N] [--callers=N] [--backoff=MS] [--queues=classic|quorum] [--exchange] [--cpu-prof=FILE] [--tracing|--context-only]',
    quickArgs: ['--jobs=500'],
    load: () => import('./profile'),
  },
  {
    name: 'profile-summary',
    summary:
      'self and inclusive time by function of a .cpuprofile that `profile --cpu-prof` wrote (no broker)',
    usage: '<file.cpuprofile> [--top=N]',
    quickArgs: [],
    load: () => import('./profile-summary'),
  },
];

export function findSuite(name: string): Suite | undefined {
  return SUITES.find((suite) => suite.name === name);
}
