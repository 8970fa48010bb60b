/**
 * The job history's record format (a contract: docs/operating/cli.md). One stream record is a batch:
 * JSON `{ "p": processId, "h": host, "pid": n, "e": [event, ...] }`, each event
 * `{ "j": jobId, "n": name, "q": queue, "k": kind, "t": ms, "a"?: attempt, "d"?: durationMs,
 *    "u"?: runAt ms, "r"?: dead reason, "x"?: first line of the error, "g"?: progress value }`.
 * Short keys: a batch holds up to a thousand events and is read back whole.
 */
export type HistoryKind =
  | 'published'
  | 'started'
  | 'progress'
  | 'completed'
  | 'retrying'
  | 'failed'
  | 'dead'
  /**
   * A delayed job was cancelled (recorded at the call, by a process with history on) or its held message
   * came due after a cancel and was dropped (docs/guide/job-control.md).
   */
  | 'cancelled';

export interface HistoryEvent {
  readonly j: string;
  readonly n: string;
  readonly q: string;
  readonly k: HistoryKind;
  readonly t: number;
  readonly a?: number;
  readonly d?: number;
  readonly u?: number;
  readonly r?: string;
  readonly x?: string;
  readonly g?: unknown;
}

export interface HistoryBatch {
  readonly p: string;
  readonly h: string;
  readonly pid: number;
  readonly e: readonly HistoryEvent[];
}

/** One event as `ops.job(id)` lists it. */
export interface JobEvent {
  readonly kind: HistoryKind;
  readonly at: Date;
  readonly name: string;
  readonly queue: string;
  readonly attempt?: number;
  readonly durationMs?: number;
  /** For `published` (delayed) and `retrying`: when it runs next. */
  readonly runAt?: Date;
  readonly reason?: string;
  readonly error?: string;
  /** For `progress`: the value the handler reported. */
  readonly progress?: unknown;
  /** The process that recorded it: `host:pid` and its warren process id. */
  readonly process: string;
  readonly processId: string;
}

/** Where a job is now, from its last event. */
export type JobState =
  | 'unknown'
  | 'waiting'
  | 'delayed'
  | 'running'
  | 'completed'
  | 'retrying'
  | 'dead'
  | 'cancelled';

export interface JobStatus {
  readonly jobId: string;
  readonly state: JobState;
  /** Every event of the job the history still holds, oldest first. */
  readonly events: readonly JobEvent[];
  /** The last event, which decides the state. */
  readonly last: JobEvent | undefined;
  /** The last progress the handler reported (`ctx.progress`), of any attempt; undefined if none. */
  readonly progress?: unknown;
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.split('\n', 1)[0]!.slice(0, 200);
}

/** The state a job's events (oldest first) say it is in at `now`. */
export function jobStatus(jobId: string, events: readonly JobEvent[], now: number): JobStatus {
  const last = events[events.length - 1];
  let state: JobState = 'unknown';
  if (last) {
    if (last.kind === 'published') state = last.runAt && last.runAt.getTime() > now ? 'delayed' : 'waiting';
    else if (last.kind === 'started' || last.kind === 'progress') state = 'running';
    else if (last.kind === 'completed') state = 'completed';
    else if (last.kind === 'retrying') state = 'retrying';
    else if (last.kind === 'dead') state = 'dead';
    else if (last.kind === 'cancelled') state = 'cancelled';
    else state = 'running'; // `failed` is followed at once by `retrying` or `dead`
  }
  let reported: JobEvent | undefined;
  for (const e of events) if (e.kind === 'progress') reported = e;
  return { jobId, state, events, last, ...(reported ? { progress: reported.progress } : {}) };
}
