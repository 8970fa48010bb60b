/**
 * The typed event map of a warren instance (`warren.on('completed', ...)`). Names are past tense.
 * Listeners must not throw; a listener error is logged and swallowed.
 */
export interface JobEventBase {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
}

export interface WarrenEvents {
  /**
   * A job was published and confirmed (by `warren.publish`, a handler's `ctx.publish` or cron).
   * `publishedAt`: when publish was called (ms; the job may start before the confirm arrives). `runAt` for
   * a delayed job. Built only while someone listens.
   */
  published: [
    {
      readonly jobId: string;
      readonly name: string;
      readonly queue: string;
      readonly publishedAt: number;
      readonly runAt?: number;
    },
  ];
  /** A handler starts an attempt. Built only while someone listens. */
  started: [JobEventBase];
  /** A handler reported progress (`ctx.progress`), coalesced to one event per job every 100 ms. */
  progress: [JobEventBase & { readonly progress: unknown }];
  /** A handler finished; the job is acked. */
  completed: [
    JobEventBase & {
      readonly durationMs: number;
      readonly result: unknown;
      /**
       * The job message's body as delivered (the payload's UTF-8 JSON, or a foreign publisher's bytes): the
       * delivery's own buffer, so that a listener keeping payloads (the job history) never serializes one
       * again. Read it, never change it; copy what you keep (`Buffer.from(body)`). Set on every event a
       * worker emits (optional for events a test builds itself).
       */
      readonly body?: Buffer;
    },
  ];
  /**
   * An attempt failed (any cause: error, timeout, invalid payload). Followed by `retried` or `deadLettered`.
   */
  failed: [
    JobEventBase & {
      readonly error: unknown;
      readonly willRetry: boolean;
      /** The failed attempt's run time, ms (from its start to its failure). */
      readonly durationMs?: number;
    },
  ];
  /** A failed attempt was republished through the delay levels; it runs again after `delayMs`. */
  retried: [
    JobEventBase & {
      readonly error: unknown;
      readonly delayMs: number;
      readonly nextAttempt: number;
      /** The failed attempt's run time, ms. */
      readonly durationMs?: number;
      /**
       * The job message's body as delivered (the payload's UTF-8 JSON, or a foreign publisher's bytes): the
       * delivery's own buffer, so that a listener keeping payloads (the job history) never serializes one
       * again. Read it, never change it; copy what you keep (`Buffer.from(body)`). Set on every event a
       * worker emits (optional for events a test builds itself).
       */
      readonly body?: Buffer;
    },
  ];
  /**
   * A batch of a `@Job({ batch })` ran: `size` jobs, the oldest having waited `waitedMs` for the batch to
   * start; `failed` of them failed (all when the handler threw or timed out, with `error`). Each job also
   * has its own `started`, `completed` or `failed` event. Built only while someone listens.
   */
  batchSettled: [
    {
      readonly name: string;
      readonly queue: string;
      readonly size: number;
      readonly waitedMs: number;
      readonly durationMs: number;
      readonly failed: number;
      readonly error?: unknown;
    },
  ];
  /** A job was postponed without spending an attempt (its circuit breaker is open). */
  postponed: [JobEventBase & { readonly delayMs: number; readonly breaker: string }];
  /**
   * A job waited `waitMs` for a rate-limit permit in vain; it was re-delayed by `delayMs` without spending an
   * attempt.
   */
  rateLimited: [JobEventBase & { readonly limiter: string; readonly delayMs: number }];
  /** A job was moved to its queue's dead letters. */
  deadLettered: [
    Omit<JobEventBase, 'name'> & {
      readonly name: string | undefined;
      readonly reason: string;
      readonly error: unknown;
      /** The last attempt's run time, ms, when its handler ran (not for a delivery refused before it). */
      readonly durationMs?: number;
      /**
       * The job message's body as delivered (the payload's UTF-8 JSON, or a foreign publisher's bytes): the
       * delivery's own buffer, so that a listener keeping payloads (the job history) never serializes one
       * again. Read it, never change it; copy what you keep (`Buffer.from(body)`). Set on every event a
       * worker emits (optional for events a test builds itself).
       */
      readonly body?: Buffer;
    },
  ];
  /**
   * A delayed job was cancelled: emitted once, at the call (`warren.delayed.cancel`), in the cancelling
   * process. `dueAt` (ms), `name` and `queue` when known (a `controllable` job's stored copy, or its latest
   * reschedule), else undefined. When the held message comes due later, the worker that meets it emits
   * `discarded`, not this (docs/guide/job-control.md).
   */
  cancelled: [
    {
      readonly jobId: string;
      readonly name: string | undefined;
      readonly queue: string | undefined;
      readonly cancelledAt: number;
      readonly dueAt: number | undefined;
    },
  ];
  /**
   * A delayed job's held message came due after a cancel, or after a promote or a move through its stored
   * copy (the copy runs instead), or a debounced copy that a later publish of its key superseded, and was
   * acked without running, in the worker that met it. `cause`: `debounce` for a debounced copy (superseded
   * by a later publish of its key, or its debounce id cancelled), `job-control` for the rest.
   */
  discarded: [JobEventBase & { readonly cause: 'debounce' | 'job-control' }];
  /** A job id that already completed arrived again; it was acked without running. */
  duplicate: [JobEventBase];
  connected: [{ readonly url: string }];
  disconnected: [{ readonly error: Error | undefined }];
  blocked: [{ readonly reason: string }];
  unblocked: [];
  /** A circuit breaker changed state. */
  breakerStateChanged: [{ readonly breaker: string; readonly state: 'open' | 'halfOpen' | 'closed' }];
  /** This process became (or stopped being) the cron leader. */
  leadershipChanged: [{ readonly isLeader: boolean }];
  /**
   * An outbox relay batch: the broker confirmed these jobs and their rows are deleted. `durationMs`
   * runs from the claim to the commit of the delete.
   */
  outboxRelayed: [
    { readonly table: string; readonly jobIds: readonly string[]; readonly durationMs: number },
  ];
  /** A routing-slip step ran; its result is in the slip's log (and the next step is published). */
  activityCompleted: [SlipEventBase & { readonly step: number; readonly activity: string }];
  /** Every step of a routing slip completed. */
  slipCompleted: [SlipEventBase];
  /** A step's attempts ran out (or it threw UnrecoverableError): compensation of earlier steps starts. */
  slipFaulted: [
    SlipEventBase & { readonly step: number; readonly activity: string; readonly error: unknown },
  ];
  /** Every completed step of a faulted slip was compensated, in reverse order. */
  slipCompensated: [SlipEventBase & { readonly faultedStep: number }];
  /** A compensation kept failing: the slip is parked in dead letters (reason `compensation-failed`). */
  slipCompensationFailed: [
    SlipEventBase & { readonly step: number; readonly activity: string; readonly error: unknown },
  ];
}

/** What every routing-slip event carries. */
export interface SlipEventBase {
  readonly slipId: string;
  /** Number of steps in the itinerary. */
  readonly steps: number;
}

/**
 * Whether anyone listens to `event`: here (`warren.on`), or a subscriber in another process whose filter
 * matches the job (when the job is given, else any subscriber). Parts skip building an event nobody hears.
 */
export type ListensTo = (event: keyof WarrenEvents, jobId?: string, name?: string, queue?: string) => boolean;

/** How parts report events to the instance without depending on it. */
export type EmitEvent = <K extends keyof WarrenEvents>(event: K, ...args: WarrenEvents[K]) => void;

/**
 * Every event name of {@link WarrenEvents}, for what a type cannot check: a listener on another name (a typo
 * from plain JavaScript, `warren.on('complete', ...)`) would never fire, so it is refused.
 */
export const WARREN_EVENT_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    published: true,
    started: true,
    progress: true,
    completed: true,
    failed: true,
    retried: true,
    batchSettled: true,
    postponed: true,
    rateLimited: true,
    deadLettered: true,
    cancelled: true,
    discarded: true,
    duplicate: true,
    connected: true,
    disconnected: true,
    blocked: true,
    unblocked: true,
    breakerStateChanged: true,
    leadershipChanged: true,
    outboxRelayed: true,
    activityCompleted: true,
    slipCompleted: true,
    slipFaulted: true,
    slipCompensated: true,
    slipCompensationFailed: true,
  } satisfies Record<keyof WarrenEvents, true>),
);
