import { WarrenError, type WarrenErrorCode, type WarrenErrorContext } from './errors';

/** How an isolated run ended other than by its handler's own result or error. */
export type IsolateEndReason =
  /** Killed at `hardTimeoutMs`. */
  | 'hard-timeout'
  /** Killed past `memoryLimitMb`. */
  | 'memory-limit'
  /** The isolate ended on its own mid-job: `process.exit`, an error outside the handler, a signal. */
  | 'isolate-crashed'
  /** The payload or the result cannot cross to or from the isolate (structured clone refuses it). */
  | 'unserializable'
  /** The processor module did not load, or names no handler of the job. */
  | 'load-failed';

const ISOLATE_CODES = {
  'hard-timeout': 'ISOLATE_HARD_TIMEOUT',
  'memory-limit': 'ISOLATE_MEMORY_LIMIT',
  'isolate-crashed': 'ISOLATE_CRASHED',
  unserializable: 'ISOLATE_UNSERIALIZABLE',
  'load-failed': 'ISOLATE_LOAD_FAILED',
} as const satisfies Record<IsolateEndReason, WarrenErrorCode>;

/**
 * An isolated job's attempt ended by its isolate (docs/guide/isolated-processors.md): retried as any failure
 * (`unserializable` is dead-lettered at once), or thrown by `warren.start()` when a processor does not load.
 */
export class IsolateError extends WarrenError {
  constructor(
    readonly reason: IsolateEndReason,
    message: string,
    options: WarrenErrorContext & { cause?: unknown } = {},
  ) {
    super(ISOLATE_CODES[reason], message, options);
  }
}
