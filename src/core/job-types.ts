import type { Logger } from './logger';
import type { StandardSchemaV1 } from './standard-schema';

/** How long to wait before the next attempt. `attempt` is the attempt that just failed (1 = first run). */
export type BackoffFunction = (attempt: number, error: unknown) => number;

export type BackoffOptions =
  | { readonly type: 'fixed'; readonly delayMs: number }
  | {
      readonly type: 'exponential';
      /** Delay after the first failure; doubles with every further attempt. */
      readonly delayMs: number;
      /** Upper bound of any single delay. Default 1 hour. */
      readonly maxDelayMs?: number;
      /**
       * Fraction (0..1) of each delay drawn at random, to spread retries of jobs that failed together.
       * Default 0.2.
       */
      readonly jitter?: number;
    }
  | BackoffFunction;

/** Options of a job class (`@Job(name, options)`); per-publish options override some of them. */
export interface JobOptions<TData = unknown> {
  /** Key of the topology queue the job is consumed from. Required. */
  readonly queue: string;
  /** Attempts including the first run. Default 3. */
  readonly attempts?: number;
  /** Delay between attempts. Default exponential from 1 s, capped at 1 h, 20 % jitter. */
  readonly backoff?: BackoffOptions;
  /**
   * Abort the handler's `ctx.signal` and count the attempt as failed after this many ms. Default 15 min.
   * Must stay below the broker's `consumer_timeout` (30 min by default), see docs/guide/timeouts.md.
   */
  readonly timeoutMs?: number;
  /**
   * Jobs of this queue run at most this many at once per worker process (the consumer's prefetch). Default
   * 10.
   */
  readonly concurrency?: number;
  /** Default priority of published jobs (needs `maxPriority` on the queue). */
  readonly priority?: number;
  /** Standard Schema (zod, valibot, arktype, ...) checked on publish and before the handler runs. */
  readonly schema?: StandardSchemaV1<TData>;
  /** Names of the circuit breakers the handler uses: their queue pauses while one is open. */
  readonly breakers?: readonly string[];
  /**
   * The job's key (tenant, account, document), from its payload: carried in the `warren-key` header, and on
   * a queue with `fairness` the unit it shares the workers by (docs/guide/fair-share.md). A publish's `key`
   * overrides it. A function that throws, or returns a value that is not a string, is empty or is over 255
   * UTF-8 bytes, fails the publish with PUBLISH_INVALID_KEY. Default: no key.
   */
  readonly key?: (data: TData) => string;
  /**
   * At most `max` runs per `durationMs` across every worker process of the namespace (permits live
   * on the broker). A job waiting for a permit spends no attempt. See docs/guide/rate-limits.md.
   */
  readonly limiter?: RateLimitOptions<TData>;
  /**
   * At most this many jobs of this type run at once per job key, across every worker process (the key of
   * `key`, or of `limiter.per`). Needs a queue with `partitions: { count, order: 'none' }`: the one process that
   * owns a key's partition counts its runs. A job over its key's cap waits aside without blocking other keys, or
   * is re-delayed without spending an attempt. docs/guide/per-key-limits.md. Default: no per-key cap.
   */
  readonly perKeyConcurrency?: number;
  /**
   * The job may be a step of a routing slip (`warren.slip()`, docs/guide/workflows.md): its `<name>.slip`
   * companion job is planned in every process that knows the job (`handlers` or `jobs`), so the
   * `activities` option need not list it again. Default false.
   */
  readonly activity?: boolean;
  /**
   * Run the handler in a worker thread (`'thread'`) or a child process (`'process'`) of a pool, not on the
   * worker's event loop: for CPU-heavy jobs (PDFs, images, reports). Needs `processor`, the module the
   * isolate imports. The broker side (acks, retries, dead letters, breakers, limits, events) stays in the
   * main process. Default: none (the handler runs inline). docs/guide/isolated-processors.md.
   */
  readonly isolate?: IsolateKind;
  /**
   * With `isolate`: the module the isolate imports to find the handler (an absolute path or a `file:` URL,
   * e.g. `require.resolve('./render-pdf')` or `new URL('./render-pdf.js', import.meta.url)`). It must be
   * importable by itself: it exports the defined job, the `@Job` class (built with no constructor
   * arguments), or a `handle(data, ctx)` function.
   */
  readonly processor?: string | URL;
  /**
   * With `isolate`: the isolate running the job is killed this many ms after it started, and the attempt
   * fails with reason `hard-timeout`. Default: the job's `timeoutMs`. At least `timeoutMs` (which aborts
   * `ctx.signal` first), below the broker's `consumer_timeout` (30 min).
   */
  readonly hardTimeoutMs?: number;
  /**
   * With `isolate`: memory cap of one isolate, MiB. A thread's cap is its JS heap (`resourceLimits`); a
   * process's is its RSS (all its memory, Buffers included). Past it the isolate is killed and the attempt
   * fails with reason `memory-limit`. Default: no cap.
   */
  readonly memoryLimitMb?: number;
  /** With `isolate`: replace an isolate after it ran `jobs` jobs, or once its memory passed `rssMb` after a job. */
  readonly recycleAfter?: IsolateRecycleOptions;
  /** With `isolate`: the pool's size, its warm minimum and idle reaping. */
  readonly pool?: IsolatePoolOptions;
  /**
   * Hand the jobs to `handleBatch(jobs, ctx)` in groups of up to `size`, the oldest waiting at most
   * `timeoutMs` for its batch to fill. The class has `handleBatch` instead of `handle`. Default: none
   * (one job per call). docs/guide/batch-and-debounce.md.
   */
  readonly batch?: BatchOptions;
}

/**
 * `@Job({ batch })`: the worker hands the job's deliveries to `handleBatch` in groups. A batch starts when
 * `size` jobs wait or when the oldest has waited `timeoutMs`, whichever comes first
 * (docs/guide/batch-and-debounce.md).
 */
export interface BatchOptions {
  /**
   * Jobs per batch at most: an integer >= 1. Default 100. The queue's prefetch (`concurrency`, default
   * twice `size` for a batch job) must hold at least one full batch.
   */
  readonly size?: number;
  /**
   * The longest a job waits for its batch to fill before the batch runs anyway, ms: an integer >= 1.
   * Default 1 000.
   */
  readonly timeoutMs?: number;
}

/** Where an isolated handler runs: a worker thread, or a child process (which also contains native crashes). */
export type IsolateKind = 'thread' | 'process';

/** When an isolate is replaced by a fresh one (checked after each job it ran). */
export interface IsolateRecycleOptions {
  /** After this many jobs. Default: never. */
  readonly jobs?: number;
  /**
   * Once its memory is past this many MiB after a job: a process's RSS, a thread's JS heap in use (a
   * thread has no RSS of its own). Default: never.
   */
  readonly rssMb?: number;
}

/** The isolate pool of one job. */
export interface IsolatePoolOptions {
  /** Isolates at most, each running one job at a time. Default: the job's concurrency, at most the cores. */
  readonly size?: number;
  /** Isolates kept started even when idle (the first is started by `warren.start()`). Default 1. */
  readonly warm?: number;
  /** An isolate idle this long beyond the warm minimum is stopped, ms. Default 30 000. */
  readonly idleMs?: number;
}

/**
 * A global rate limit: at most `max` jobs start per `durationMs` window, however many worker
 * processes run them. Jobs that name the same `key` share one limit (and must agree on it).
 */
export interface RateLimitOptions<TData = never> {
  /** Runs allowed per window: an integer >= 1. */
  readonly max: number;
  /** Window length in ms: an integer >= 10. */
  readonly durationMs: number;
  /** Limits with the same key are one limit. Default: the job name. */
  readonly key?: string;
  /**
   * A limit per value instead of one for all: each value gets `max` per `durationMs` (a sliding window) across
   * every worker process. `'key'`: per job key (the job's `key` function or the publish's `key`); a function
   * (`(data) => data.apiKey`): per the value it returns, which is then the job's key (it routes the job to the
   * partition whose owner counts it), so such a job has no `key` function of its own. Needs a queue with
   * `partitions: { count, order: 'none' }`; no permit queue is planned. docs/guide/per-key-limits.md.
   * Default: one global limit (permits on the broker).
   */
  readonly per?: 'key' | ((data: TData) => string);
  /**
   * How long a delivered job may hold its worker slot waiting for a permit before it is put back
   * (re-delayed by about one window, no attempt spent), so that a tight limit never starves the
   * queue's other jobs. Default `min(2 * durationMs, 5000)`: long enough to see the next refill.
   */
  readonly waitMs?: number;
}

/**
 * What a newly elected cron leader does about ticks that fell while no process was leader (all were
 * down, or during a failover): `'skip'` ignores them and fires from the next tick on; `'run-once'`
 * fires the latest missed tick once (if it is later than the last tick any leader fired).
 */
export type MissedTickPolicy = 'skip' | 'run-once';

/**
 * A job as the rest of warren sees it: its name and options as plain data, from decorators or written by
 * hand.
 */
export interface JobDefinition extends JobOptions {
  readonly name: string;
}

/** What a handler gets besides its payload. */
export interface JobContext {
  readonly jobId: string;
  readonly name: string;
  /** 1 for the first run. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queue: string;
  /** Aborted when the job times out or the worker shuts down past its grace period. */
  readonly signal: AbortSignal;
  /** A pino child logger carrying jobId, job, attempt and queue. */
  readonly log: Logger;
  readonly headers: Readonly<Record<string, unknown>>;
  /** ms since epoch when the job was first enqueued. */
  readonly enqueuedAt: number;
  /** True when the broker delivers this message again (a worker died or a channel closed before the ack). */
  readonly redelivered: boolean;
  /** Publish a follow-up job; confirmed like `warren.publish`. */
  readonly publish: (name: string, data: unknown, options?: PublishOptions) => Promise<PublishedJob>;
  /** The named circuit breaker: `ctx.breaker('mailer').fire(() => mailer.send(...))`. */
  readonly breaker: (name: string) => BreakerHandle;
  /**
   * Reports progress (a number, a string or a small JSON object): emitted as the `progress` event and
   * recorded in the job history, coalesced to one event per job every 100 ms. Never waits.
   */
  readonly progress: (value: unknown) => void;
}

/** What a completed step left behind; its activity's `compensate(log, ctx)` receives it. */
export interface SlipLogEntry {
  readonly activity: string;
  readonly step: number;
  /** The step's arguments as the activity received them (variables merged under the step's args). */
  readonly args: unknown;
  /** What `handle` returned (JSON), or `{ dropped: 'too-large' }` past SLIP_MAX_RESULT_BYTES (workflow). */
  readonly result: unknown;
  readonly completedAt: number;
}

/** The slice of a circuit breaker a handler uses. */
export interface BreakerHandle {
  fire<T>(call: () => Promise<T>): Promise<T>;
  readonly isOpen: boolean;
}

export interface PublishOptions {
  /** The message id; the idempotency key. Default: a random UUID. */
  readonly jobId?: string;
  /** 0..maxPriority of the queue. Overrides the job class's priority. */
  readonly priority?: number;
  /** Run no earlier than this many ms from now (rounded up to the delay unit). */
  readonly delayMs?: number;
  /** Run no earlier than this time. Exclusive with delayMs. */
  readonly runAt?: Date;
  /** Extra application headers (names starting with `x-` or `warren-` are reserved). */
  readonly headers?: Readonly<Record<string, string | number | boolean>>;
  readonly correlationId?: string;
  /** Override the job class's attempts for this one job. */
  readonly attempts?: number;
  /**
   * The job's key, over the job's `key` function (docs/guide/fair-share.md): a non-empty string of at most
   * 255 UTF-8 bytes, else PUBLISH_INVALID_KEY.
   */
  readonly key?: string;
  /** Give up (typed PublishError, code PUBLISH_TIMEOUT) if no confirm arrived within this time. */
  readonly timeoutMs?: number;
  /**
   * Needs `jobId` and `createWarren({ deduplication })`: while a job of this id waits, is delayed or runs
   * (at most `ttlMs` past its delay, default 24 h), publishing it again returns the existing job
   * (`deduplicated: true`) instead of enqueuing a copy. docs/guide/deduplication.md.
   */
  readonly deduplicate?: boolean | { readonly ttlMs: number };
  /**
   * Needs `jobId` and a delay: stores a copy of the job on the job-control stream so that it can be
   * promoted (run now) or moved earlier, not only cancelled or moved later. docs/guide/job-control.md.
   */
  readonly controllable?: boolean;
  /**
   * Runs only the last of the publishes of one `key` that come less than `periodMs` apart, across every
   * publishing process, `periodMs` after that last one (at most `maxWaitMs` after the first). The run has
   * the last payload, by the order of the job-control stream. Not with a delay, `deduplicate` or
   * `controllable`; `publish` only. docs/guide/batch-and-debounce.md.
   */
  readonly debounce?: DebounceOptions;
}

/** `publish(job, data, { debounce })`: one run for a burst of publishes of one key. */
export interface DebounceOptions {
  /** What the publishes are about (a document id): one run per key and job. 1 to 255 characters. */
  readonly key: string;
  /** The quiet time after the last publish before the job runs, ms: an integer >= 1. */
  readonly periodMs: number;
  /**
   * The longest a steady stream of publishes can postpone the run, ms from the first of the burst: an
   * integer >= periodMs. Default: no bound.
   */
  readonly maxWaitMs?: number;
}

export interface PublishedJob {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  /** A `deduplicate` publish found this job id live: nothing was enqueued; this is the existing job. */
  readonly deduplicated?: true;
}
