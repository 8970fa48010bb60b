/**
 * The messages between the main process and an isolate (a worker thread or a child process), both ways.
 * A contract of this folder only: the isolate entry and the pool speak it, nothing else. Every message is
 * structured-cloned (a thread's postMessage, a process's `serialization: 'advanced'` IPC), so a payload
 * crosses with the same rules either way.
 *
 * main → isolate: `run` a job, `abort` its signal (timeout, shutdown), `reply` to a call, `go` (a breaker
 * lets the call through).
 * isolate → main: `ready` (the processor loaded) or `load-failed`, then per job `progress`, `log`, `call`
 * (publish, breaker), `settle` (a breaker call's own outcome) and one `done`, with the isolate's memory.
 */

/** The job fields an isolated handler's ctx carries (what a JobContext has besides its functions). */
export interface IsolateJobInfo {
  readonly jobId: string;
  readonly name: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queue: string;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly enqueuedAt: number;
  readonly redelivered: boolean;
  /** The breakers of the job that were open when it started: `ctx.breaker(name).isOpen` reads them. */
  readonly openBreakers: readonly string[];
}

/** An error as it crosses: enough to rebuild the handler signals and to log it. */
export interface CrossedError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string | undefined;
  readonly code?: string | undefined;
  /** RetryLaterError's delay. */
  readonly delayMs?: number | undefined;
  /** CircuitOpenError's breaker. */
  readonly breaker?: string | undefined;
}

export type ToIsolate =
  | { readonly t: 'run'; readonly id: number; readonly data: unknown; readonly job: IsolateJobInfo }
  | { readonly t: 'abort'; readonly id: number; readonly error: CrossedError }
  | {
      readonly t: 'reply';
      readonly id: number;
      readonly callId: number;
      readonly ok: boolean;
      readonly value?: unknown;
      readonly error?: CrossedError;
    }
  | { readonly t: 'go'; readonly id: number; readonly callId: number };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export type FromIsolate =
  | { readonly t: 'ready' }
  | { readonly t: 'load-failed'; readonly error: CrossedError }
  | { readonly t: 'progress'; readonly id: number; readonly value: unknown }
  | {
      readonly t: 'log';
      readonly id: number;
      readonly level: LogLevel;
      readonly fields: Record<string, unknown>;
      readonly msg: string | undefined;
    }
  | {
      readonly t: 'call';
      readonly id: number;
      readonly callId: number;
      readonly op: 'publish';
      readonly args: readonly unknown[];
    }
  | {
      readonly t: 'call';
      readonly id: number;
      readonly callId: number;
      readonly op: 'breaker';
      readonly name: string;
    }
  | { readonly t: 'settle'; readonly id: number; readonly callId: number; readonly error?: CrossedError }
  | {
      readonly t: 'done';
      readonly id: number;
      readonly ok: boolean;
      readonly result?: unknown;
      readonly error?: CrossedError;
      /** The result (or the error) could not be cloned. */
      readonly unserializable?: boolean;
      /** The isolate's memory after the job, bytes: a process's RSS, a thread's JS heap in use. */
      readonly memoryBytes: number;
    };

/** What crosses of an error (anything thrown). */
export function crossError(error: unknown): CrossedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const e = error as Error & { code?: unknown; delayMs?: unknown; breaker?: unknown };
  return {
    name: e.name,
    message: e.message,
    stack: e.stack,
    code: typeof e.code === 'string' ? e.code : undefined,
    delayMs: typeof e.delayMs === 'number' ? e.delayMs : undefined,
    breaker: typeof e.breaker === 'string' ? e.breaker : undefined,
  };
}
