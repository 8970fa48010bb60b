import { ConfigurationError, MAX_DELAY_MS, validationMessage, type PublishOptions } from '../core';
import type { PlannedJob } from '../topology';

const RESERVED_HEADER = /^(x-|warren-)/i;

/** Every key of PublishOptions: any other is a typo, refused rather than ignored. */
const PUBLISH_OPTION_KEYS: Readonly<Record<keyof PublishOptions, true>> = {
  jobId: true,
  priority: true,
  delayMs: true,
  runAt: true,
  headers: true,
  correlationId: true,
  attempts: true,
  key: true,
  timeoutMs: true,
  deduplicate: true,
  controllable: true,
  debounce: true,
};

/** The argument of a `publishMany` call is an array (a plain-JavaScript caller may pass anything). */
export function checkBatchArray(jobs: unknown): void {
  if (!Array.isArray(jobs))
    throw new ConfigurationError(
      validationMessage('publishMany', 'takes an array of { job, data, options? }', jobs),
    );
}

/**
 * One entry of a `publishMany` call, checked for its shape (a plain-JavaScript caller may pass anything):
 * an object with a `job` (a name or a job class) and optional `data` and `options`.
 */
export function checkBatchEntry<T extends { readonly job: unknown }>(entry: T, batchIndex: number): T {
  const job = (entry as { job?: unknown } | null | undefined)?.job;
  const isJob =
    typeof job === 'string' || typeof job === 'function' || (typeof job === 'object' && job !== null);
  if (typeof entry !== 'object' || entry === null || !isJob)
    throw new ConfigurationError(
      validationMessage(`publishMany job [${batchIndex}]`, 'must be { job, data, options? }', entry),
      { batchIndex },
    );
  return entry;
}

/**
 * The checks of a publish's options against its job, before anything is built: each failure is a
 * ConfigurationError naming the call (`publish('a.b')` or `publishMany job [2] ('a.b')`), the option and
 * its value.
 */
export function checkPublishOptions(job: PlannedJob, options: PublishOptions, batchIndex?: number): void {
  if (!hasOnlyOptionKeys(options)) refuseOptionKeys(job, options, batchIndex);
  // Most publishes set none: nothing below is built for them (a batch checks every job).
  if (!setsCheckedOption(options)) return;
  const at = callName(job, batchIndex);
  const fail = (message: string) =>
    new ConfigurationError(message, batchIndex === undefined ? {} : { batchIndex });
  if (
    options.jobId !== undefined &&
    (typeof options.jobId !== 'string' || options.jobId.length === 0 || options.jobId.length > 255)
  ) {
    throw fail(validationMessage(`${at} jobId`, 'must be a string of 1 to 255 characters', options.jobId));
  }
  if (options.deduplicate !== undefined && options.deduplicate !== false) {
    if (options.jobId === undefined) throw fail(`${at}: deduplicate needs a jobId`);
    const ttlMs = typeof options.deduplicate === 'object' ? options.deduplicate.ttlMs : 1;
    if (options.deduplicate !== true && (!Number.isInteger(ttlMs) || ttlMs < 1))
      throw fail(validationMessage(`${at} deduplicate.ttlMs`, 'must be an integer >= 1', ttlMs));
  }
  if (options.debounce !== undefined) checkDebounce(at, options, fail);
  if (options.controllable && (options.jobId === undefined || (!options.delayMs && !options.runAt)))
    throw fail(`${at}: controllable needs a jobId and a delay`);
  if (options.delayMs !== undefined && options.runAt !== undefined)
    throw fail(`${at}: give delayMs or runAt, not both`);
  if (
    options.delayMs !== undefined &&
    (typeof options.delayMs !== 'number' || !Number.isFinite(options.delayMs) || options.delayMs < 0)
  ) {
    throw fail(validationMessage(`${at} delayMs`, 'must be a finite number >= 0', options.delayMs));
  }
  if (
    options.runAt !== undefined &&
    (!(options.runAt instanceof Date) || Number.isNaN(options.runAt.getTime()))
  ) {
    throw fail(validationMessage(`${at} runAt`, 'must be a valid Date', options.runAt));
  }
  if (options.attempts !== undefined && (!Number.isInteger(options.attempts) || options.attempts < 1)) {
    throw fail(validationMessage(`${at} attempts`, 'must be an integer >= 1', options.attempts));
  }
  if (options.timeoutMs !== undefined && (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1)) {
    throw fail(validationMessage(`${at} timeoutMs`, 'must be an integer >= 1', options.timeoutMs));
  }
  if (options.priority !== undefined) {
    const queue = job.queue;
    const max = job.queueMaxPriority;
    if (max === undefined)
      throw fail(`${at}: priority needs a queue with maxPriority, and queue '${queue}' has none`);
    if (!Number.isInteger(options.priority) || options.priority < 0 || options.priority > max) {
      throw fail(
        validationMessage(`${at} priority`, `must be an integer from 0 to ${max}`, options.priority),
      );
    }
  }
  for (const key of Object.keys(options.headers ?? {})) {
    if (RESERVED_HEADER.test(key))
      throw fail(
        `${at}: header '${key}' is reserved (names starting with x- or warren- belong to the broker and to warren)`,
      );
  }
}

/**
 * The options argument of a publish-like call (`kind('name')`) as an object: `null`, a string or an array
 * from plain JavaScript is a ConfigurationError here, before any option is read.
 */
export function optionsObject(kind: string, name: string, options: PublishOptions): PublishOptions {
  if (typeof options === 'object' && options !== null && !Array.isArray(options)) return options;
  throw new ConfigurationError(validationMessage(`${kind}('${name}') options`, 'must be an object', options));
}

/** How errors name the call: `publish('a.b')` or `publishMany job [2] ('a.b')`. */
function callName(job: PlannedJob, batchIndex: number | undefined): string {
  return batchIndex === undefined
    ? `publish('${job.name}')`
    : `publishMany job [${batchIndex}] ('${job.name}')`;
}

/** Whether the options are an object of PublishOptions' keys only. */
function hasOnlyOptionKeys(options: PublishOptions): boolean {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return false;
  for (const key in options) if (!Object.hasOwn(PUBLISH_OPTION_KEYS, key)) return false;
  return true;
}

/** Says what is wrong with options that are not an object of PublishOptions' keys: a typo is not ignored. */
function refuseOptionKeys(job: PlannedJob, options: PublishOptions, batchIndex?: number): never {
  const at = callName(job, batchIndex);
  const context = batchIndex === undefined ? {} : { batchIndex };
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new ConfigurationError(validationMessage(`${at} options`, 'must be an object', options), context);
  const key = Object.keys(options).find((k) => !Object.hasOwn(PUBLISH_OPTION_KEYS, k))!;
  throw new ConfigurationError(
    validationMessage(
      `${at} options.${key}`,
      `is not an option (known: ${Object.keys(PUBLISH_OPTION_KEYS).join(', ')})`,
      (options as Record<string, unknown>)[key],
    ),
    context,
  );
}

/** Whether the call sets any option checkPublishOptions checks. */
function setsCheckedOption(options: PublishOptions): boolean {
  return (
    options.jobId !== undefined ||
    options.deduplicate !== undefined ||
    options.controllable !== undefined ||
    options.debounce !== undefined ||
    options.delayMs !== undefined ||
    options.runAt !== undefined ||
    options.attempts !== undefined ||
    options.timeoutMs !== undefined ||
    options.priority !== undefined ||
    options.headers !== undefined
  );
}

/**
 * A debounce's key and times, and the options it excludes: the period is the delay; `deduplicate` keeps
 * the first payload where debounce keeps the last; `controllable` stores one copy per job id where debounce
 * publishes one per call.
 */
function checkDebounce(at: string, options: PublishOptions, fail: (message: string) => Error): void {
  const debounce = options.debounce!;
  if (debounce === null || typeof debounce !== 'object')
    throw fail(validationMessage(`${at} debounce`, 'must be { key, periodMs, maxWaitMs? }', debounce));
  for (const key of Object.keys(debounce))
    if (key !== 'key' && key !== 'periodMs' && key !== 'maxWaitMs')
      throw fail(`${at} debounce: unknown option '${key}' (known: key, periodMs, maxWaitMs)`);
  const { key, periodMs, maxWaitMs } = debounce;
  if (typeof key !== 'string' || key.length === 0 || key.length > 255)
    throw fail(validationMessage(`${at} debounce.key`, 'must be a string of 1 to 255 characters', key));
  if (!Number.isInteger(periodMs) || periodMs < 1 || periodMs > MAX_DELAY_MS)
    throw fail(
      validationMessage(`${at} debounce.periodMs`, `must be an integer from 1 to ${MAX_DELAY_MS}`, periodMs),
    );
  if (
    maxWaitMs !== undefined &&
    (!Number.isInteger(maxWaitMs) || maxWaitMs < periodMs || maxWaitMs > MAX_DELAY_MS)
  )
    throw fail(
      validationMessage(
        `${at} debounce.maxWaitMs`,
        `must be an integer from periodMs (${periodMs}) to ${MAX_DELAY_MS}`,
        maxWaitMs,
      ),
    );
  if (options.delayMs !== undefined || options.runAt !== undefined)
    throw fail(
      `${at}: debounce sets the delay itself (periodMs after the last publish); drop delayMs and runAt`,
    );
  if (options.deduplicate)
    throw fail(
      `${at}: debounce runs the last payload of a key and deduplicate keeps the first; use one of them`,
    );
  if (options.controllable)
    throw fail(
      `${at}: debounce and controllable do not combine (a debounced job is cancelled by its debounce id: docs/guide/batch-and-debounce.md)`,
    );
}
