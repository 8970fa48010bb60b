import type { EventEmitter } from 'node:events';
import type { WarrenEvents } from '../index';

/** What a recorder listens to: any `Warren`, whatever its job map. */
export type JobEventSource = Pick<EventEmitter<WarrenEvents>, 'on' | 'off'>;

/** The job events a recorder keeps. */
export type RecordedEventType =
  | 'completed'
  | 'failed'
  | 'retried'
  | 'postponed'
  | 'deadLettered'
  | 'duplicate';

export type RecordedEvent = {
  [K in RecordedEventType]: { readonly type: K; readonly at: number } & WarrenEvents[K][0];
}[RecordedEventType];

export type EventOf<K extends RecordedEventType> = Extract<RecordedEvent, { type: K }>;

export interface WaitForJobOptions<K extends RecordedEventType = RecordedEventType> {
  /** Only this job id. */
  readonly jobId?: string;
  /** Any further condition on the event. */
  readonly where?: (event: EventOf<K>) => boolean;
  /** Deadline. Default: the recorder's (10 000 ms unless set). */
  readonly timeoutMs?: number;
}

const RECORDED: readonly RecordedEventType[] = [
  'completed',
  'failed',
  'retried',
  'postponed',
  'deadLettered',
  'duplicate',
];

const DESCRIBED: Record<RecordedEventType, string> = {
  completed: 'complete',
  failed: 'fail',
  retried: 'be retried',
  postponed: 'be postponed',
  deadLettered: 'be dead-lettered',
  duplicate: 'arrive as a duplicate',
};

interface Waiter {
  readonly type: RecordedEventType;
  readonly matches: (event: RecordedEvent) => boolean;
  readonly resolve: (event: RecordedEvent) => void;
}

/**
 * Records a warren's job events from the moment it is created, and waits for one with a deadline,
 * never a sleep. An event that already happened answers a wait at once, so there is no race between
 * publishing and starting to wait. Each event answers one wait: waiting twice for 'email.welcome'
 * waits for two jobs.
 *
 * @example
 * const jobs = recordJobEvents(app.get(Warren));
 * await publisher.publish('email.welcome', { userId: 'u1' }, { jobId: 'welcome-u1' });
 * const done = await jobs.waitForCompleted('email.welcome', { jobId: 'welcome-u1' });
 */
export class JobEventRecorder {
  /** Every recorded event, oldest first. */
  readonly events: RecordedEvent[] = [];
  private readonly claimed = new Set<RecordedEvent>();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners: [RecordedEventType, (payload: WarrenEvents[RecordedEventType][0]) => void][] =
    [];

  constructor(
    private readonly source: JobEventSource,
    private readonly defaultTimeoutMs = 10_000,
  ) {
    for (const type of RECORDED) {
      const listener = (payload: WarrenEvents[RecordedEventType][0]) =>
        this.record({ ...payload, type, at: Date.now() } as RecordedEvent);
      this.listeners.push([type, listener]);
      source.on(type, listener as never);
    }
  }

  /** Resolves with the `completed` event of a job named `name` (and `jobId`, if given). */
  waitForCompleted(
    name: string,
    options: WaitForJobOptions<'completed'> = {},
  ): Promise<EventOf<'completed'>> {
    return this.waitFor('completed', name, options);
  }

  /** Resolves with the `deadLettered` event (its `reason` and `error`) of a job named `name`. */
  waitForDeadLettered(
    name: string,
    options: WaitForJobOptions<'deadLettered'> = {},
  ): Promise<EventOf<'deadLettered'>> {
    return this.waitFor('deadLettered', name, options);
  }

  /** Resolves with the `failed` event of one attempt of a job named `name`. */
  waitForFailed(name: string, options: WaitForJobOptions<'failed'> = {}): Promise<EventOf<'failed'>> {
    return this.waitFor('failed', name, options);
  }

  /**
   * Resolves with the first unclaimed event of `type` for job `name` that matches the options, or rejects
   * after the deadline saying what happened to that job instead.
   */
  waitFor<K extends RecordedEventType>(
    type: K,
    name: string,
    options: WaitForJobOptions<K> = {},
  ): Promise<EventOf<K>> {
    const matches = (event: RecordedEvent): boolean =>
      event.type === type &&
      event.name === name &&
      (options.jobId === undefined || event.jobId === options.jobId) &&
      (options.where?.(event as EventOf<K>) ?? true);
    const past = this.events.find((event) => !this.claimed.has(event) && matches(event));
    if (past) {
      this.claimed.add(past);
      return Promise.resolve(past as EventOf<K>);
    }
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise<EventOf<K>>((resolve, reject) => {
      const waiter: Waiter = {
        type,
        matches,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event as EventOf<K>);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(this.timeoutMessage(type, name, options.jobId, timeoutMs)));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Stops recording (the warren's listeners are removed). */
  stop(): void {
    for (const [type, listener] of this.listeners.splice(0)) {
      this.source.off(type, listener as never);
    }
  }

  private record(event: RecordedEvent): void {
    this.events.push(event);
    for (const waiter of this.waiters) {
      if (!waiter.matches(event)) continue;
      this.waiters.delete(waiter);
      this.claimed.add(event);
      waiter.resolve(event);
      return;
    }
  }

  private timeoutMessage(
    type: RecordedEventType,
    name: string,
    jobId: string | undefined,
    timeoutMs: number,
  ): string {
    const job = jobId === undefined ? `a '${name}' job` : `job '${name}' (jobId '${jobId}')`;
    const seen = this.events
      .filter((event) => event.name === name && (jobId === undefined || event.jobId === jobId))
      .map(describe);
    return `timed out after ${timeoutMs} ms waiting for ${job} to ${DESCRIBED[type]}; ${seen.length > 0 ? `seen instead: ${seen.join('; ')}` : 'no event for it at all (was it published, and is a worker consuming its queue?)'}`;
  }
}

/** Starts recording a warren's job events (see JobEventRecorder). */
export function recordJobEvents(
  warren: JobEventSource,
  options: { timeoutMs?: number } = {},
): JobEventRecorder {
  return new JobEventRecorder(warren, options.timeoutMs);
}

function describe(event: RecordedEvent): string {
  const where = `${event.jobId} attempt ${event.attempt}`;
  switch (event.type) {
    case 'failed':
      return `failed (${where}: ${errorText(event.error)})`;
    case 'retried':
      return `retried (${where}, next attempt in ${event.delayMs} ms)`;
    case 'deadLettered':
      return `dead-lettered (${where}, reason ${event.reason}: ${errorText(event.error)})`;
    case 'postponed':
      return `postponed (${where}, breaker ${event.breaker} open)`;
    default:
      return `${event.type} (${where})`;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
