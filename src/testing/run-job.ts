import { randomUUID } from 'node:crypto';
import {
  CircuitOpenError,
  JOB_DEFAULTS,
  JobTimeoutError,
  PayloadValidationError,
  readJobDefinition,
  RetryLaterError,
  UnrecoverableError,
  validatePayload,
  type BreakerHandle,
  type DefinedJob,
  type JobContext,
  type JobHandler,
  type PublishedJob,
  type PublishOptions,
} from '../index';
import { createRecordingLogger, type LogEntry } from './recording-logger';

export interface RunJobOptions {
  /** Default: a random UUID. */
  readonly jobId?: string;
  /** The attempt being run, 1 for the first. Default 1. */
  readonly attempt?: number;
  /** Default: the @Job's `attempts`, else warren's default (3). */
  readonly maxAttempts?: number;
  readonly headers?: Readonly<Record<string, unknown>>;
  /** ms since epoch. Default: now. */
  readonly enqueuedAt?: number;
  readonly redelivered?: boolean;
  /**
   * Fail the run with JobTimeoutError (and abort `ctx.signal`) after this long. Default: the @Job's
   * `timeoutMs`, else 15 min.
   */
  readonly timeoutMs?: number;
  /** Abort it to see how the handler reacts to a shutdown: `ctx.signal` aborts with its reason. */
  readonly signal?: AbortSignal;
  /** State of the named circuit breakers the handler fires. Default: all closed (the call runs). */
  readonly breakers?: Readonly<Record<string, 'closed' | 'open'>>;
  /**
   * Answers `ctx.publish` after recording the call (to make a follow-up publish fail, say). Default: resolves
   * with the job id and an empty queue.
   */
  readonly publish?: (
    name: string,
    data: unknown,
    options: PublishOptions | undefined,
  ) => Promise<PublishedJob>;
  /** Check the payload against the @Job's `schema` first, as the worker does. Default true. */
  readonly validate?: boolean;
  /** Lowest level recorded in `logs`. Default 'trace'. */
  readonly logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
}

/** A `ctx.publish` call the handler made. */
export interface PublishedCall {
  readonly name: string;
  readonly data: unknown;
  readonly options: PublishOptions | undefined;
}

/**
 * What the worker would do after this run (the retry policy, minus the backoff's random delay).
 * `retry.delayMs` is set when the handler chose it (RetryLaterError).
 */
export type JobOutcome =
  | { readonly action: 'complete' }
  | { readonly action: 'retry'; readonly nextAttempt: number; readonly delayMs?: number }
  | { readonly action: 'postpone'; readonly breaker: string }
  | {
      readonly action: 'dead-letter';
      readonly reason: 'unrecoverable' | 'attempts-exhausted' | 'invalid-payload';
    };

export interface RunJobResult<TResult = unknown> {
  readonly status: 'completed' | 'failed';
  /** What `handle` returned, when it completed. */
  readonly result: TResult | undefined;
  /** What `handle` threw (or PayloadValidationError, JobTimeoutError), when it failed. */
  readonly error: unknown;
  readonly outcome: JobOutcome;
  /** Every `ctx.publish` call, in order. */
  readonly published: readonly PublishedCall[];
  /** Everything logged through `ctx.log`. */
  readonly logs: readonly LogEntry[];
  /** The handler's `ctx.signal` (aborted on timeout or when `options.signal` aborted). */
  readonly signal: AbortSignal;
  /** Names of the circuit breakers the handler fired, in order. */
  readonly breakersFired: readonly string[];
  readonly context: JobContext;
  readonly durationMs: number;
}

/** The payload `runJob` takes: a defined job's schema input, or the handler's data type. */
type RunJobData<H extends JobHandler> =
  H extends DefinedJob<infer _D, infer _R, infer I> ? I : Parameters<H['handle']>[0];

/**
 * Runs a @Job handler instance (or a job of `defineJob`) once, without a broker: a context like the worker's, `ctx.publish`
 * recorded, `ctx.log` recorded, the payload validated and the timeout enforced like on a worker.
 * Never throws for a failing handler: the failure is in `error`, and `outcome` says what would follow.
 *
 * @example
 * const run = await runJob(new WelcomeEmail(fakeMailer), { userId: 'u1' }, { attempt: 3 });
 * assert.equal(run.status, 'completed');
 * assert.deepEqual(run.published.map((p) => p.name), ['audit.record']);
 */
export async function runJob<H extends JobHandler>(
  handler: H,
  data: RunJobData<H>,
  options: RunJobOptions = {},
): Promise<RunJobResult<Awaited<ReturnType<H['handle']>>>> {
  const definition = readJobDefinition(handler);
  const attempt = options.attempt ?? 1;
  const maxAttempts = options.maxAttempts ?? definition.attempts ?? JOB_DEFAULTS.attempts;
  const timeoutMs = options.timeoutMs ?? definition.timeoutMs ?? JOB_DEFAULTS.timeoutMs;
  const jobId = options.jobId ?? randomUUID();
  const run = startRun(definition, jobId, attempt, maxAttempts, options);
  const finish = (status: 'completed' | 'failed', result: unknown, error: unknown, outcome: JobOutcome) => {
    options.signal?.removeEventListener('abort', run.onAbort);
    return {
      status,
      result,
      error,
      outcome,
      published: run.published,
      logs: run.recording.entries,
      signal: run.controller.signal,
      breakersFired: run.breakersFired,
      context: run.context,
      durationMs: Date.now() - run.started,
    } as RunJobResult<Awaited<ReturnType<H['handle']>>>;
  };

  let payload: unknown = data;
  if (definition.schema && options.validate !== false) {
    const checked = await validatePayload(definition.schema, data);
    if (checked.issues) {
      const error = new PayloadValidationError(definition.name, checked.issues);
      return finish('failed', undefined, error, { action: 'dead-letter', reason: 'invalid-payload' });
    }
    payload = checked.value;
  }
  const timeout = () =>
    new JobTimeoutError(timeoutMs, { jobName: definition.name, jobId, queue: definition.queue, attempt });
  try {
    const handle = () => handler.handle(payload, run.context);
    const result = await raceTimeout(handle, timeoutMs, timeout, run.controller);
    return finish('completed', result, undefined, { action: 'complete' });
  } catch (error) {
    return finish('failed', undefined, error, outcomeOf(error, attempt, maxAttempts));
  }
}

/** What one run records, and the context its handler sees. */
interface StartedRun {
  readonly context: JobContext;
  readonly controller: AbortController;
  readonly onAbort: () => void;
  readonly recording: ReturnType<typeof createRecordingLogger>;
  readonly published: PublishedCall[];
  readonly breakersFired: string[];
  readonly started: number;
}

/** Builds the handler's context like the worker's, recording `ctx.publish`, `ctx.log` and breaker calls. */
function startRun(
  definition: ReturnType<typeof readJobDefinition>,
  jobId: string,
  attempt: number,
  maxAttempts: number,
  options: RunJobOptions,
): StartedRun {
  const recording = createRecordingLogger(options.logLevel);
  const published: PublishedCall[] = [];
  const breakersFired: string[] = [];
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal!.reason);
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  const context: JobContext = {
    jobId,
    name: definition.name,
    attempt,
    maxAttempts,
    queue: definition.queue,
    signal: controller.signal,
    log: recording.logger.child({ jobId, job: definition.name, attempt, queue: definition.queue }),
    headers: options.headers ?? {},
    enqueuedAt: options.enqueuedAt ?? Date.now(),
    redelivered: options.redelivered ?? false,
    publish: async (name, payload, publishOptions) => {
      published.push({ name, data: payload, options: publishOptions });
      if (options.publish) return options.publish(name, payload, publishOptions);
      return { jobId: publishOptions?.jobId ?? randomUUID(), name, queue: '' };
    },
    breaker: (name) => fakeBreaker(name, options.breakers?.[name] ?? 'closed', breakersFired),
    progress: () => undefined,
  };
  return { context, controller, onAbort, recording, published, breakersFired, started: Date.now() };
}

/** Runs `call`, failing with `timeout()` (and aborting `controller` with it) after `timeoutMs`. */
async function raceTimeout<T>(
  call: () => T,
  timeoutMs: number,
  timeout: () => JobTimeoutError,
  controller: AbortController,
): Promise<Awaited<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = timeout();
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(call), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** The retry policy's decision, as the worker takes it (src/retry/decide-failure.ts). */
function outcomeOf(error: unknown, attempt: number, maxAttempts: number): JobOutcome {
  if (error instanceof UnrecoverableError) return { action: 'dead-letter', reason: 'unrecoverable' };
  if (error instanceof CircuitOpenError) return { action: 'postpone', breaker: error.breaker };
  if (attempt >= maxAttempts) return { action: 'dead-letter', reason: 'attempts-exhausted' };
  if (error instanceof RetryLaterError)
    return { action: 'retry', nextAttempt: attempt + 1, delayMs: Math.max(0, error.delayMs) };
  return { action: 'retry', nextAttempt: attempt + 1 };
}

function fakeBreaker(name: string, state: 'closed' | 'open', fired: string[]): BreakerHandle {
  return {
    isOpen: state === 'open',
    async fire<T>(call: () => Promise<T>): Promise<T> {
      fired.push(name);
      if (state === 'open') throw new CircuitOpenError(name);
      return call();
    },
  };
}
